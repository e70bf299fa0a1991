"""Keep the API key with its endpoint: ``scrub(text)`` before any text leaves the process.

An endpoint may echo the key in an error body ("Incorrect API key provided: sk-…"), a base URL
may carry credentials (``https://user:pass@host/v1``, ``?api_key=…``), and an exception's text
may hold a request's headers. Every message, log line, CLI line and transcript record therefore
goes through ``scrub``, which removes

- the configured key (``OPENAI_API_KEY`` in the environment, and any key ``remember_secret``
  was given) wherever it appears;
- anything shaped like a key or token: ``sk-…``, ``Bearer …``, an ``Authorization:`` value,
  ``api_key=…`` / ``token=…`` in a URL query or a JSON/form body, ``user:password@`` in a URL.

Each pattern is a single pass with no nested repetition, so scrubbing is linear in the text.
``ScrubbingStream`` and ``ScrubLogFilter`` apply it to stdout/stderr and to ``logging``.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import os
import re
import threading
from collections.abc import Iterable
from typing import Any, NamedTuple, TextIO
from urllib.parse import quote, quote_plus, urlsplit, urlunsplit

REDACTED = "[redacted]"
MIN_SECRET_LEN = 6  # shorter strings would redact innocent text; a real key is long

_known: set[str] = set()
_known_lock = threading.Lock()

# What a secret looks like after its label. No quote, backslash or bracket: a scrubbed JSON text
# stays valid JSON (an escape sequence is never cut in half). Bounded, so each match is short.
_VALUE = r"""[^\s"'&,;<>()\[\]{}\\]{4,512}"""
_SEP = r"""["']?\s{0,20}[:=]\s{0,20}["']?"""
# Each labelled shape: the lowercase needle that must occur (found with str.find, at C speed)
# and the pattern matched right there, case-insensitively — label in group 1 (kept), the
# secret after it (replaced).
_LABELLED_SOURCES: list[tuple[str, str]] = [
    ("bearer", r"(bearer\s{1,20})" + _VALUE),
    (
        "authoriz",
        r"(authorization"
        + _SEP
        + r"(?!bearer\b)(?:(?:basic|token|digest|apikey)\s{1,20})?)"
        + _VALUE,
    ),
    *((n, r"((?:x-)?" + n + _SEP + ")" + _VALUE) for n in ("api_key", "api-key", "apikey")),
    *((n, "(" + n + _SEP + ")" + _VALUE) for n in ("access_token", "refresh_token", "id_token")),
    *(
        (sep + name + "=", "(" + re.escape(sep + name) + "=)" + _VALUE)
        for sep in "?&"
        for name in ("key", "token", "access_token", "auth", "sig", "signature")
    ),
]
_SHAPES = [(n, re.compile(src, re.I)) for n, src in _LABELLED_SOURCES]
# the same, unanchored, for one pass over hostile text (pass 1 in ``scrub``)
_SHAPES_SWEEP = [
    re.compile(("" if n[0] in "?&" else r"(?<![A-Za-z0-9_])") + src, re.I)
    for n, src in _LABELLED_SOURCES
]
# Keys recognisable by their prefix (OpenAI sk-/sk-proj-, Anthropic sk-ant-, GitHub, Hugging
# Face): the whole key is replaced. Case-sensitive needles.
_PREFIXED_SOURCES: list[tuple[str, str]] = [
    *((p, re.escape(p) + r"[A-Za-z0-9_-]{12,512}") for p in ("sk-", "rk-", "pk-")),
    *(
        (p, re.escape(p) + r"[A-Za-z0-9]{20,512}")
        for p in ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "hf_")
    ),
]
_PREFIXED = [(n, re.compile(src)) for n, src in _PREFIXED_SOURCES]
_PREFIXED_SWEEP = [re.compile(r"(?<![A-Za-z0-9_])" + src) for _, src in _PREFIXED_SOURCES]
# scheme://userinfo@host: the userinfo (user:password, or a token as the user name)
_USERINFO = re.compile(r"""://([^/\s@"'<>\\]{1,256})@""")


def _word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


_MANY = 1000  # past this many occurrences of a needle, one regex pass instead of a find loop


def _sweep(text: str) -> tuple[str, set[str]]:
    """Pass 1, for hostile text: a shape whose needle occurs more than _MANY times is replaced
    in one C-level ``re.sub`` over the text (no Python work per occurrence). Returns the text
    and the needles swept this way (pass 2 leaves them alone)."""
    swept: set[str] = set()
    low = text.lower()
    for (needle, _), sweep in zip(_SHAPES, _SHAPES_SWEEP, strict=True):
        if low.count(needle) > _MANY:
            text = sweep.sub(r"\g<1>" + REDACTED, text)
            low = text.lower()
            swept.add(needle)
    for (needle, _), sweep in zip(_PREFIXED, _PREFIXED_SWEEP, strict=True):
        if text.count(needle) > _MANY:
            text = sweep.sub(REDACTED, text)
            swept.add(needle)
    if text.count("://") > _MANY:
        text = _USERINFO.sub("://" + REDACTED + "@", text)
        swept.add("://")
    return text, swept


def _spans(text: str, swept: set[str]) -> list[tuple[int, int, str]]:
    """Pass 2: (start, end, replacement) of each secret-shaped piece, matched only where its
    needle occurs (found with str.find)."""
    low = text.lower()
    found: list[tuple[int, int, str]] = []
    for needle, pattern in _SHAPES:
        at = -1 if needle in swept else low.find(needle)
        while at >= 0:
            if needle[0] in "?&" or at == 0 or not _word_char(low[at - 1]):
                start = at - 2 if needle == "api_key" and low[max(at - 2, 0) : at] == "x-" else at
                m = pattern.match(text, start)
                if m:
                    found.append((m.end(1), m.end(), REDACTED))
            at = low.find(needle, at + len(needle))
    for prefix, pattern in _PREFIXED:
        at = -1 if prefix in swept else text.find(prefix)
        while at >= 0:
            if at == 0 or not _word_char(text[at - 1]):
                m = pattern.match(text, at)
                if m:
                    found.append((m.start(), m.end(), REDACTED))
            at = text.find(prefix, at + len(prefix))
    at = -1 if "://" in swept else text.find("://")
    while at >= 0:
        m = _USERINFO.match(text, at)
        if m:
            found.append((m.start(1), m.end(1), REDACTED))
        at = text.find("://", at + 3)
    return found


def _needs_patterns(low: str) -> bool:
    return (
        any(n in low for n in ("bearer", "authoriz", "api_key", "api-key", "apikey", "_token"))
        or ("key=" in low or "token=" in low or "auth=" in low or "sig" in low)
        or any(p in low for p in ("sk-", "rk-", "pk-", "gh", "hf_"))
        or ("://" in low and "@" in low)
    )


def remember_secret(secret: str | None) -> None:
    """Scrub this value from everything from now on (a key that came from somewhere other than
    the environment, e.g. a test or a client)."""
    if secret and len(secret) >= MIN_SECRET_LEN:
        with _known_lock:
            _known.add(secret)


_cache: tuple[tuple[object, ...], list[str], list[tuple[list[str], re.Pattern[str]]]] = ((), [], [])


def _encodings(secret: str) -> list[str]:
    """How an endpoint, a proxy or a library may echo the key besides verbatim: URL-encoded
    (a key with '+', '/', '=' in a query or form body), JSON-escaped, hex, and base64 (a Basic
    header, a token blob, an encoded request dump). Base64 depends on where the key starts in
    the encoded bytes: for each of the three alignments, the characters that come from the key
    alone."""
    raw = secret.encode("utf-8", "surrogatepass")
    lower_hex = lambda m: m.group().lower()  # noqa: E731 - '%2b' as some encoders write it
    out = {
        quote(secret, safe=""),
        quote_plus(secret),
        re.sub(r"%[0-9A-F]{2}", lower_hex, quote(secret, safe="")),
        re.sub(r"%[0-9A-F]{2}", lower_hex, quote_plus(secret)),
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        raw.hex(),
        raw.hex().upper(),
    }
    for offset in range(3):
        whole_groups = (offset + len(raw)) // 3
        for enc in (base64.b64encode, base64.urlsafe_b64encode):
            text = enc(b"\0" * offset + raw).decode("ascii")
            core = text[4 if offset else 0 : 4 * whole_groups]
            if len(core) >= 16:
                out.add(core)
    out.discard(secret)
    return [v for v in out if len(v) >= MIN_SECRET_LEN]


def _tolerant(secret: str) -> tuple[list[str], re.Pattern[str]]:
    """The key in any case, with line breaks or spaces inside it (an error body wrapped at 76
    columns, a log line split in two). Only tried where a piece of it occurs (the chunks)."""
    low = secret.lower()
    chunks = [low[i : i + 8] for i in range(0, max(1, len(low) - 7), 8)]
    pattern = re.compile(r"\s{0,8}".join(re.escape(c) for c in secret), re.IGNORECASE)
    return chunks, pattern


def _secrets(key: str | None) -> list[str]:
    """The values to remove, longest first (a key that contains another is removed whole);
    recomputed only when the environment's key, the remembered ones or ``key`` change."""
    global _cache
    env_key = os.environ.get("OPENAI_API_KEY")
    stamp = (key, env_key, len(_known))
    if _cache[0] == stamp:
        return _cache[1]
    found = set(_known)
    for s in (key, env_key):
        if s and len(s) >= MIN_SECRET_LEN:
            found.add(s)
    variants = set(found)
    for s in found:
        variants.update(_encodings(s))
    result = sorted(variants, key=len, reverse=True)
    tolerant = [_tolerant(s) for s in sorted(found, key=len, reverse=True) if len(s) >= 16]
    _cache = (stamp, result, tolerant)
    return result


PIECE = 16  # a run of this many characters of the key (or of an encoding of it) is a leak


_pieces_cache: tuple[tuple[str, ...], re.Pattern[str] | None] = ((), None)
_matchers_cache: tuple[tuple[str, ...], tuple[re.Pattern[str], re.Pattern[str] | None] | None] = (
    (),
    None,
)


def _matchers(secrets: list[str]) -> tuple[re.Pattern[str], re.Pattern[str] | None]:
    """The key's forms as one alternation (longest first: a form that contains another is
    removed whole), and any 8-character chunk of it in any case (where the wrapped or
    re-cased key may be)."""
    global _matchers_cache
    stamp = tuple(secrets)
    cached = _matchers_cache[1]
    if _matchers_cache[0] != stamp or cached is None:
        exact = re.compile("|".join(re.escape(v) for v in secrets))
        chunks = {c for cs, _ in _cache[2] for c in cs}
        any_chunk = (
            re.compile("|".join(re.escape(c) for c in sorted(chunks)), re.IGNORECASE)
            if chunks
            else None
        )
        cached = (exact, any_chunk)
        _matchers_cache = (stamp, cached)
    return cached


def _piece_finder(secrets: list[str]) -> re.Pattern[str] | None:
    """One C-level search for any head or tail piece, so the common case (no piece in the
    text) costs no Python loop over the key's forms."""
    global _pieces_cache
    stamp = tuple(secrets)
    if _pieces_cache[0] != stamp:
        parts = {p for s in secrets if len(s) >= PIECE + 4 for p in (s[:PIECE], s[-PIECE:])}
        pattern = re.compile("|".join(re.escape(p) for p in sorted(parts))) if parts else None
        _pieces_cache = (stamp, pattern)
    return _pieces_cache[1]


def _redact_pieces(text: str, secrets: list[str]) -> str:
    """Pieces of the key: a message cut to a length limit ends inside it, a window of a log
    starts inside it. From each place where the key's first (or last) PIECE characters occur,
    as far as the text goes on agreeing with the key."""
    finder = _piece_finder(secrets) if len(text) >= PIECE else None
    if finder is None or finder.search(text) is None:
        return text
    spans = []
    for secret in secrets:
        if len(secret) < PIECE + 4:
            continue
        n = len(secret)
        head, tail = secret[:PIECE], secret[-PIECE:]
        at = text.find(head)
        while at >= 0:
            same = len(os.path.commonprefix([text[at : at + n], secret]))
            spans.append((at, at + same))
            at = text.find(head, at + 1)
        at = text.find(tail)
        while at >= 0:
            end = at + PIECE
            start = max(0, end - n)
            back = len(os.path.commonprefix([text[start:end][::-1], secret[::-1]]))
            spans.append((end - back, end))
            at = text.find(tail, at + 1)
    if not spans:
        return text
    out, pos = [], 0
    for start, end in sorted(spans):
        if end <= pos:
            continue
        out.append(text[pos : max(pos, start)])
        out.append(REDACTED)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def scrub(text: str, key: str | None = None) -> str:
    """``text`` without the key (``key``, else the environment's) or anything shaped like one.
    Linear: the key is removed with str.replace, and each shape is matched only where its
    needle occurs. Most text contains no needle and comes back after a few substring tests."""
    if not text:
        return text
    if not isinstance(text, str):
        text = str(text)
    if len(text) < MIN_SECRET_LEN:  # too short to hold a key or a labelled secret
        return text
    secrets = _secrets(key)
    if secrets:
        exact, any_chunk = _matchers(secrets)
        # One C-level search each for the common case (no form of the key in the text).
        if exact.search(text):
            text = exact.sub(REDACTED, text)
        text = _redact_pieces(text, secrets)
        if any_chunk is not None and any_chunk.search(text):
            for _chunks, pattern in _cache[2]:
                text = pattern.sub(REDACTED, text)
    if not _needs_patterns(text.lower()):
        return text
    text, swept = _sweep(text)
    spans = sorted(_spans(text, swept))
    if not spans:
        return text
    out, pos = [], 0
    for start, end, replacement in spans:
        if start < pos:  # overlapping shapes: the first one already covers it
            continue
        out.append(text[pos:start])
        out.append(replacement)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def scrub_value(value: Any, key: str | None = None) -> Any:
    """``scrub`` applied to every string inside dicts, lists and tuples (JSON-shaped data)."""
    if isinstance(value, str):
        return scrub(value, key)
    if isinstance(value, dict):
        return {k: scrub_value(v, key) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub_value(v, key) for v in value]
    return value


def public_url(url: str | None) -> str | None:
    """A base URL fit to show: no user:password, no secrets in its query."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return scrub(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = REDACTED + "@" + netloc.rsplit("@", 1)[1]
    query = REDACTED if parts.query else ""
    return scrub(urlunsplit((parts.scheme, netloc, parts.path, query, "")))


def host_of(url: str | None) -> str:
    """The host[:port] a URL points at, without credentials ('api.openai.com' for None)."""
    if not url:
        return "api.openai.com"
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return scrub(url)
    return (host + port) or scrub(url)


class Endpoint(NamedTuple):
    """An endpoint as ptxls may show it. Made once, by ``endpoint_of``, where a lowering starts,
    and handed down: the code that shows or talks to the endpoint needs nothing more from here."""

    url: str | None  # the base URL fit to show (``public_url``); None when none is set
    host: str  # the host[:port] it points at (``host_of``); "api.openai.com" when none is set


def endpoint_of(base_url: str | None, secrets: Iterable[str | None] = ()) -> Endpoint:
    """``base_url`` as shown; first the key and every other value sent with it (header values)
    are remembered, so ``scrub`` removes them from everything from now on."""
    for secret in secrets:
        remember_secret(secret)
    return Endpoint(public_url(base_url), host_of(base_url))


class ScrubbingStream(io.TextIOBase):
    """A text stream that scrubs whole lines before passing them on (the CLI's stdout/stderr).

    A key can arrive in pieces (``print(a, b)`` is three writes; a progress line is written a
    chunk at a time), and a piece alone looks like nothing. No key holds a line break, so the
    text after the last ``\n``/``\r`` is held until its line ends, or until ``flush`` (which a
    prompt before ``input()`` and the exit both call) writes it out scrubbed."""

    def __init__(self, inner: TextIO) -> None:
        self._inner = inner
        self._held = ""

    def write(self, s: str) -> int:
        text = self._held + s
        cut = max(text.rfind("\n"), text.rfind("\r")) + 1
        self._held = text[cut:]
        if cut:
            self._inner.write(scrub(text[:cut]))
        return len(s)

    def flush(self) -> None:
        if self._held:
            held, self._held = self._held, ""
            self._inner.write(scrub(held))
        self._inner.flush()

    def isatty(self) -> bool:
        return bool(getattr(self._inner, "isatty", lambda: False)())

    # TextIOBase declares `encoding` an attribute, but at run time it is a read-only property
    # of the C base, so a property is the only way to mirror the wrapped stream's.
    @property
    def encoding(self) -> str:  # type: ignore[override]
        encoding: str | None = getattr(self._inner, "encoding", None)
        return encoding or "utf-8"

    def fileno(self) -> int:
        return self._inner.fileno()

    @property
    def inner(self) -> TextIO:
        return self._inner


class ScrubLogFilter(logging.Filter):
    """Scrubs a record's message, arguments and traceback text before any handler formats it."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: keep what there is
            message = str(record.msg)
        record.msg, record.args = scrub(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrub(record.exc_text)
        if record.stack_info:
            record.stack_info = scrub(record.stack_info)
        return True


_FILTER = ScrubLogFilter()


def install_log_scrubber(logger: logging.Logger | None = None) -> None:
    """Put the filter on every handler of ``logger`` (default: the root logger) and on the
    last-resort handler, so records that propagate from any module are scrubbed."""
    logger = logger or logging.getLogger()
    handlers = list(logger.handlers)
    if logging.lastResort is not None:
        handlers.append(logging.lastResort)
    for h in handlers:
        if _FILTER not in h.filters:
            h.addFilter(_FILTER)
