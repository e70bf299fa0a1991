"""Reading the client's byte stream into messages: LSP framing and JSON, in the reader thread.

pygls 2.x (``io_.run_async``) matches ``Content-Length`` only as a whole header line, then reads
exactly that many bytes, and passes any length to ``read(n)``. Here (``MessageReader``):

- **Framing.** A body shorter than its header glued the next header onto the body's end, and
  from then on every header was missed: deaf for good. Here a header is found anywhere in a
  line, and a body that does not parse is searched for a header that follows it (the bytes from
  there are read again), so the very next message is understood.
- **Size.** A ``Content-Length`` of 10**12 was a MemoryError that ended the server. Here a length
  above ``MAX_BODY_BYTES`` is refused with a log line and the stream is searched for the next
  header. Header lines are read with a length limit too.
- **Large bodies.** Above ``LARGE_BODY_BYTES`` a body is split as a stream (``read_streamed``):
  its long strings found with ``bytes.find`` a chunk at a time, so the reader never holds the
  GIL for long while the event loop answers; above ``STREAM_BODY_BYTES`` it is never even held
  whole, and a string longer than the document limit keeps only its head (``Cut``).

The message loop (``transport.py``) dispatches what this returns on the event loop.
"""

from __future__ import annotations

import json
import json.decoder
import json.scanner
import logging
import os
import re
import secrets
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from .large_documents import HEADER_BYTES, MAX_DOCUMENT_BYTES

log = logging.getLogger("ptxls.transport")

MAX_BODY_BYTES = 128 << 20  # a 100 MB .ptx still fits; 10**12 does not
MAX_HEADER_LINE = 64 << 10
LARGE_BODY_BYTES = 1 << 20  # parsed by _decode_large, which lets the event loop run meanwhile
# Above this a body is read as a stream (_read_streamed): a string longer than the document
# limit is kept as its first HEADER_BYTES, never built whole.
STREAM_BODY_BYTES = MAX_DOCUMENT_BYTES
SKELETON_MAX_BYTES = 4 << 20  # a message's JSON outside its long strings
_INLINE_STRING_BYTES = 64 << 10  # a string up to this stays in the skeleton as it came
_CHUNK = 64 << 10
_BLANK = b"\r\n \t"  # what skip_blank drops between messages
_HEADER = re.compile(rb"Content-Length:[ \t]*(\d{1,20})[ \t]*\r?\n?$", re.IGNORECASE)


class _Input:
    """The client's byte stream, read in the reader thread straight from its file descriptor
    (a daemon thread blocked inside a *buffered* stdin holds its lock, and the interpreter
    aborts at exit when it finds it taken), with our own buffer, a push-back (bytes of a bad
    body that turned out to start the next message) and a line-length limit."""

    def __init__(self, stream: BinaryIO):
        try:
            self.fd: int | None = stream.fileno()
        except (AttributeError, OSError, ValueError):
            self.fd = None
        self.stream = stream
        # the unread bytes are pending[at:]: a line is taken by moving ``at``, not by copying
        # the rest of the buffer (8 MB of newlines cost the reader 10 s of CPU when it did)
        self.pending = b""
        self.at = 0

    def _more(self, n: int) -> bytes:
        if self.fd is not None:
            try:
                return os.read(self.fd, n)
            except OSError:
                return b""
        return self.stream.read1(n) if hasattr(self.stream, "read1") else self.stream.read(n)

    def _take(self, n: int) -> bytes:
        out = self.pending[self.at : self.at + n]
        self.at += len(out)
        return out

    def _refill(self) -> bool:
        """Append the next chunk to the unread bytes; False at the end of input."""
        chunk = self._more(_CHUNK)
        if chunk:
            self.pending = self.pending[self.at :] + chunk
            self.at = 0
        return bool(chunk)

    def push_back(self, data: bytes) -> None:
        self.pending, self.at = data + self.pending[self.at :], 0

    def readline(self) -> bytes:
        """Up to and including the next newline, at most MAX_HEADER_LINE bytes; b'' at the end."""
        while True:
            nl = self.pending.find(b"\n", self.at, self.at + MAX_HEADER_LINE)
            if nl >= 0:
                return self._take(nl + 1 - self.at)
            if len(self.pending) - self.at >= MAX_HEADER_LINE:
                return self._take(MAX_HEADER_LINE)
            if not self._refill():
                return self._take(len(self.pending) - self.at)

    def skip_blank(self) -> int:
        """Drop the blank lines (CR, LF, spaces, tabs) that come next, a chunk at a time, and
        return how many bytes that was: between messages they mean nothing. Nothing is copied
        when the next byte is not blank (a pushed-back body can be large)."""
        skipped = 0
        while True:
            if self.at < len(self.pending):
                if self.pending[self.at] not in _BLANK:
                    return skipped
                rest = len(self.pending) - self.at
                self.pending, self.at = self.pending[self.at :].lstrip(_BLANK), 0
                skipped += rest - len(self.pending)
                if self.pending:
                    return skipped
            if not self._refill():
                return skipped

    def read(self, n: int) -> bytes:
        out = bytearray(self._take(n))
        if self.at == len(self.pending):
            self.pending, self.at = b"", 0
        while len(out) < n:
            chunk = self._more(min(n - len(out), 1 << 20))
            if not chunk:
                break
            out += chunk
        return bytes(out)

    def discard(self, n: int) -> None:
        while n > 0:
            got = len(self.read(min(n, 1 << 20)))
            if not got:
                return
            n -= got


@dataclass
class _Streamed:
    """A large body read as a stream: its JSON with every string longer than
    ``_INLINE_STRING_BYTES`` replaced by a placeholder, and those strings (whole up to
    ``MAX_DOCUMENT_BYTES`` as sent, else their first ``HEADER_BYTES``)."""

    skeleton: bytearray = field(default_factory=bytearray)
    token: str = field(default_factory=lambda: secrets.token_hex(8))
    strings: list[tuple[list[bytes], int]] = field(default_factory=list)  # (kept pieces, size)
    too_complex: bool = False


@dataclass
class Cut:
    """A string of a message that was too long to keep: its first HEADER_BYTES, decoded, and
    its size as sent. ``Parsed.cuts`` says where each one was (a path into the message)."""

    prefix: str
    size: int


@dataclass
class Parsed:
    data: Any
    cuts: list[tuple[tuple, Cut]] = field(default_factory=list)


def read_streamed(read, n: int) -> _Streamed:
    """Read ``n`` body bytes with ``read(k)`` and split them as _Streamed says, chunk by chunk:
    no copy of the whole body is ever made, and no call holds the GIL for more than a chunk (a
    100 MB didOpen held it 0.3-0.6 s in json.loads, 0.1-0.25 s for each copy, on a 2-core VM)."""
    out = _Streamed()
    in_string = False
    pieces: list[bytes] = []
    size = 0
    carry = b""  # a lone backslash that ended the previous chunk inside a string
    left = n
    while left > 0:
        chunk = read(min(left, 1 << 20))
        if not chunk:
            break
        left -= len(chunk)
        if carry:
            chunk, carry = carry + chunk, b""
        pos = 0
        while pos < len(chunk):
            if not in_string:
                q = chunk.find(b'"', pos)
                end = len(chunk) if q < 0 else q
                out.skeleton += chunk[pos:end]
                if len(out.skeleton) > SKELETON_MAX_BYTES:
                    out.too_complex = True
                    while left > 0:  # read (and drop) the rest: the next message follows it
                        got = read(min(left, 1 << 20))
                        if not got:
                            break
                        left -= len(got)
                    return out
                if q < 0:
                    break
                in_string, pieces, size, pos = True, [], 0, q + 1
                continue
            stop = _string_end(chunk, pos)
            part = chunk[pos:stop]
            size += len(part)
            if size - len(part) <= MAX_DOCUMENT_BYTES:  # still kept whole
                pieces.append(part)
                if size > MAX_DOCUMENT_BYTES:  # from now on cut: its head is all it keeps
                    head, k = [], 0
                    for piece in pieces:
                        head.append(piece)
                        k += len(piece)
                        if k > HEADER_BYTES + 16:
                            break
                    pieces = [b"".join(head)[: HEADER_BYTES + 16]]
            if stop < len(chunk) and chunk[stop : stop + 1] == b'"':
                if size <= _INLINE_STRING_BYTES:
                    out.skeleton += b'"' + b"".join(pieces) + b'"'
                else:
                    ph = f'"\\u0000ptxls-{out.token}-{len(out.strings)}"'
                    out.skeleton += ph.encode()
                    out.strings.append((pieces, size))
                in_string, pos = False, stop + 1
                continue
            carry = chunk[stop:]  # a lone backslash at the end: the pair ends in the next chunk
            break
    if in_string or carry:
        out.too_complex = True  # the body ended inside a string: not JSON
    return out


def _string_end(chunk: bytes, pos: int) -> int:
    """Where the inside of a JSON string that goes on at ``pos`` stops in ``chunk``: at its
    closing quote, at the chunk's end, or before a last backslash whose escaped byte is in the
    next chunk. Only quotes cost a step (bytes.find for the rest: a regex took 12 ns a byte)."""
    while True:
        q = chunk.find(b'"', pos)
        if q < 0:
            end = len(chunk)
            k = end
            while k > pos and chunk[k - 1] == 0x5C:  # backslash
                k -= 1
            return end - 1 if (end - k) % 2 else end
        k = q
        while k > pos and chunk[k - 1] == 0x5C:
            k -= 1
        if (q - k) % 2 == 0:
            return q  # an unescaped quote
        pos = q + 1


def _decode_piece(raw: bytes, whole: bool) -> str:
    """A JSON string's inside, decoded; a cut one may end inside an escape or a UTF-8 sequence,
    which is dropped."""
    if whole:
        return json.loads(b'"' + raw + b'"')
    raw = raw[:HEADER_BYTES]
    for trim in range(0, 13):
        try:
            text = (raw[: len(raw) - trim] if trim else raw).decode("utf-8", errors="ignore")
            decoded: str = json.loads('"' + text + '"')
            if decoded and "\ud800" <= decoded[-1] <= "\udbff":  # half of a \uXXXX pair
                decoded = decoded[:-1]
            return decoded
        except ValueError:
            continue
    return ""


def assemble(streamed: _Streamed) -> Parsed:
    """The message of a streamed body: the skeleton parsed, each placeholder replaced by its
    string, or by a cut one's prefix (its place and size in ``cuts``). Raises ValueError."""
    if streamed.too_complex:
        raise ValueError("not JSON, or too much JSON outside its strings")
    data = json.loads(bytes(streamed.skeleton))
    marker = f"\0ptxls-{streamed.token}-"
    cuts: list[tuple[tuple, Cut]] = []

    def walk(value: Any, path: tuple) -> Any:
        if isinstance(value, str) and value.startswith(marker):
            pieces, size = streamed.strings[int(value[len(marker) :])]
            if size <= MAX_DOCUMENT_BYTES:
                return _decode_piece(b"".join(pieces), True)
            cut = Cut(_decode_piece(b"".join(pieces), False), size)
            cuts.append((path, cut))
            return cut.prefix
        if isinstance(value, dict):
            return {k: walk(v, (*path, k)) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, (*path, i)) for i, v in enumerate(value)]
        return value

    return Parsed(walk(data, ()), cuts)


PARSE_FAILED = object()
END = object()  # the end of input (a body may well be JSON null)


def _decode_large(body: bytes):
    """A large body, parsed by json's pure-Python scanner: the C one holds the GIL for the whole
    document (a 32 MB JSON array kept the event loop from answering a hover for 0.6 s while this
    reader thread parsed it); Python code lets the loop run every few milliseconds. Slower, and
    only for bodies above LARGE_BODY_BYTES, which are no ordinary message."""
    decoder = json.JSONDecoder()
    # typeshed leaves out json's pure-Python scanner (json.scanner.py_make_scanner and the
    # decoder's scan_once attribute), which exist in every CPython
    decoder.scan_once = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
    text = body.decode("utf-8", errors="surrogatepass")
    start = len(text) - len(text.lstrip(" \t\n\r"))  # past JSON's blanks, as json.loads skips
    value, end = decoder.raw_decode(text, start)
    if text[end:].strip():
        raise ValueError("extra data after the JSON value")
    return value


def _parse_large(body: bytes) -> Parsed:
    """A body between LARGE_BODY_BYTES and the streaming limit: split as a stream would be
    (read_streamed: long strings found with bytes.find a chunk at a time, each decoded by the C
    scanner), falling back to _decode_large only when its JSON outside strings is too large.
    The pure-Python scanner alone matched a 5 MB string with one regular-expression call that
    held the GIL for it: every hover waited while a 3-8 MB document arrived."""
    view = memoryview(body)
    at = 0

    def read(k: int) -> bytes:
        nonlocal at
        piece = bytes(view[at : at + k])
        at += len(piece)
        return piece

    streamed = read_streamed(read, len(body))
    if streamed.too_complex:
        return Parsed(_decode_large(body))
    return assemble(streamed)


class _Ignored:
    """Input between messages that is not a header, said once per run of it (a client writing a
    megabyte of junk lines would otherwise put a warning per line in the editor's log)."""

    def __init__(self) -> None:
        self.lines = 0
        self.bytes = 0

    def add(self, line: bytes) -> None:
        self.lines += 1
        self.bytes += len(line)

    def say(self) -> None:
        if self.lines:
            log.warning(
                "ignored %d bytes (%d %s) of input that are not an LSP header",
                self.bytes,
                self.lines,
                "line" if self.lines == 1 else "lines",
            )
        self.lines = self.bytes = 0


class MessageReader:
    """The messages of the client's stream, one at a time: ``next_message`` returns a Parsed,
    PARSE_FAILED (a body that is not JSON: the loop answers -32700) or END."""

    def __init__(self, stream: BinaryIO):
        self.input = _Input(stream)

    def next_message(self):
        """The next message (Parsed), PARSE_FAILED, or END at the end of input."""
        length = self._headers()
        if length is None:
            log.info("the client closed the input stream")
            return END
        if length > STREAM_BODY_BYTES:
            streamed = read_streamed(self.input.read, length)
            if streamed.too_complex:
                log.error(
                    "a message of %d bytes is not JSON or has more than %d bytes of JSON outside "
                    "its strings: ignored",
                    length,
                    SKELETON_MAX_BYTES,
                )
                return PARSE_FAILED
            try:
                return assemble(streamed)
            except (ValueError, RecursionError):
                log.error("a message body is not JSON (%d bytes)", length)
                return PARSE_FAILED
        body = self.input.read(length)
        if len(body) < length:
            log.info("the input ended inside a message")
            return END
        try:
            if length < LARGE_BODY_BYTES:
                return Parsed(json.loads(body))
            return _parse_large(body)
        except (ValueError, RecursionError):
            log.error("a message body is not JSON (%d bytes)", len(body))
            self._resync(body)
            return PARSE_FAILED

    def _headers(self) -> int | None:
        """Read header lines up to the blank line; the Content-Length, or None at end of input."""
        length: int | None = None
        ignored = _Ignored()
        while True:
            if length is None:
                self.input.skip_blank()
            line = self.input.readline()
            if not line:
                ignored.say()
                return None
            if m := _HEADER.search(line):
                ignored.say()
                value = int(m.group(1))
                if value > MAX_BODY_BYTES:
                    log.error(
                        "a message announces %d bytes, above the %d-byte limit: ignored; "
                        "looking for the next Content-Length header",
                        value,
                        MAX_BODY_BYTES,
                    )
                    length = None
                    continue
                length = value
            elif line.strip() == b"" and length is not None:
                return length
            elif line.strip() and not line.lower().startswith(b"content-type:"):
                ignored.add(line)

    def _resync(self, body: bytes) -> None:
        """A body that is not JSON may hold the start of the next message (its announced length
        was too long): read again from the first header inside it."""
        at = body.find(b"Content-Length:", 1)
        if at >= 0:  # the header may be whole or cut after the colon: the line reader copes
            self.input.push_back(body[at:])
            return
        # The body may end inside the next header ("...}Conte"): keep that part for the line
        # reader, which finds the header in "Content-Length: N" once the rest arrives.
        key = b"Content-Length:"
        for k in range(min(len(key), len(body) - 1), 0, -1):
            if body.endswith(key[:k]):
                self.input.push_back(body[-k:])
                return
