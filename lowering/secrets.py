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

import io
import logging
import os
import re
import threading
from urllib.parse import urlsplit, urlunsplit

REDACTED = "[redacted]"
MIN_SECRET_LEN = 6  # shorter strings would redact innocent text; a real key is long

_known: set[str] = set()
_known_lock = threading.Lock()

# Each alternative keeps its label (group 1) and replaces only the secret after it.
_LABELLED = re.compile(
    r"""(?ix)
    (
        \bbearer\s+                                              # Authorization: Bearer X
      | \bauthorization["']?\s*[:=]\s*["']?(?!bearer\b)          # Authorization: X
        (?:(?:basic|token|digest|apikey)\s+)?                     # ... or: Basic X
      | \b(?:x-)?api[-_]?key["']?\s*[:=]\s*["']?                 # api_key=X, "api-key": "X"
      | [?&](?:key|token|access_token|auth|sig|signature)=       # ?key=X in a URL query
      | \b(?:access|refresh|id)_token["']?\s*[:=]\s*["']?
    )
    [^\s"'&,;<>()\[\]{}]{4,}
    """
)
# sk-… keys (OpenAI sk-, sk-proj-, Anthropic sk-ant-), and other providers' usual prefixes
_KEY_SHAPED = re.compile(
    r"\b(?:sk|rk|pk)-[A-Za-z0-9_-]{12,}|\bgh[pousr]_[A-Za-z0-9]{20,}|\bhf_[A-Za-z0-9]{20,}"
)
# scheme://userinfo@host — the userinfo (user:password, or a token as the user name)
_URL_USERINFO = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]{0,20}://)[^/\s@\"'<>]{1,256}@")
# a cheap test that decides whether the regexes need to run at all
_TRIGGER = re.compile(
    r"(?i)bearer|authoriz|api[-_]?key|token|[?&](?:key|auth|sig)|sk-|rk-|pk-|gh[pousr]_|hf_|://[^/\s]*@"
)


def remember_secret(secret: str | None) -> None:
    """Scrub this value from everything from now on (a key that came from somewhere other than
    the environment, e.g. a test or a client)."""
    if secret and len(secret) >= MIN_SECRET_LEN:
        with _known_lock:
            _known.add(secret)


_cache: tuple[tuple, list[str]] = ((), [])


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
    result = sorted(found, key=len, reverse=True)
    _cache = (stamp, result)
    return result


def scrub(text: str, key: str | None = None) -> str:
    """``text`` without the key (``key``, else the environment's) or anything shaped like one."""
    if not text:
        return text
    if not isinstance(text, str):
        text = str(text)
    for secret in _secrets(key):
        if secret in text:
            text = text.replace(secret, REDACTED)
    if not _TRIGGER.search(text):
        return text
    text = _LABELLED.sub(lambda m: m.group(1) + REDACTED, text)
    text = _KEY_SHAPED.sub(REDACTED, text)
    text = _URL_USERINFO.sub(lambda m: m.group(1) + REDACTED + "@", text)
    return text


def scrub_value(value, key: str | None = None):
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


class ScrubbingStream(io.TextIOBase):
    """A text stream that scrubs each write before passing it on (the CLI's stdout/stderr)."""

    def __init__(self, inner):
        self._inner = inner

    def write(self, s: str) -> int:
        self._inner.write(scrub(s))
        return len(s)

    def flush(self) -> None:
        self._inner.flush()

    def isatty(self) -> bool:
        return bool(getattr(self._inner, "isatty", lambda: False)())

    @property
    def encoding(self):  # noqa: D401 - mirror the wrapped stream
        return getattr(self._inner, "encoding", "utf-8")

    def fileno(self) -> int:
        return self._inner.fileno()

    @property
    def inner(self):
        return self._inner


class ScrubLogFilter(logging.Filter):
    """Scrubs a record's message, arguments and traceback text before any handler formats it."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string: keep what there is
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
