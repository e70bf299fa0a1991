"""The stdio message loop: our own, in place of pygls' ``run_async``, so that a client that
breaks the framing or the lifecycle cannot make the server deaf, crash it, or leave a request
unanswered. pygls 2.x (io_.run_async and JsonRPCProtocol) does not, and each point below is a
workaround for it, kept here rather than patched into the installed package:

- **Framing.** pygls matches ``Content-Length`` only as a whole header line, then reads exactly
  that many bytes. A body shorter than its header glues the next header onto the body's end,
  and from then on every header is missed: deaf for good. Here a header is found anywhere in a
  line, and a body that does not parse is searched for a header that follows it (the bytes from
  there are read again), so the very next message is understood.
- **Size.** pygls passes any ``Content-Length`` to ``read(n)``: 10**12 is a MemoryError that
  ends the server. Here a length above ``MAX_BODY_BYTES`` is refused with a log line and the
  stream is searched for the next header. Header lines are read with a length limit too.
- **Undecodable messages.** pygls turns params that do not decode into an exception that is
  logged and never answered: the client waits forever. Here every request gets an answer: -32700
  (parse error) for a body that is not JSON, -32600 for a message that is not JSON-RPC 2.0,
  -32602 for params that do not fit the method.
- **Lifecycle** (LSP 3.17 "Lifecycle messages"): a request before ``initialize`` gets -32002 and a
  notification then is dropped; pygls would run it. A second ``initialize`` gets -32600; pygls
  would run it and replace the workspace, forgetting every open document. A request after ``shutdown`` gets -32600;
  pygls drops it silently. ``exit`` without ``shutdown`` ends the process with code 1; pygls
  computes that code but its ``start_io`` swallows the SystemExit, so the process exited 0.
  ``shutdown`` while a request is still running made pygls fail the shutdown itself (-32603,
  then exit code 1): those requests are cancelled here first.
"""

from __future__ import annotations

import asyncio
import collections
import json
import json.decoder
import json.scanner
import logging
import os
import re
import secrets
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from pygls.exceptions import JsonRpcException
from pygls.io_ import StdoutWriter

from .inflight import CURRENT_REQUEST
from .large_documents import HEADER_BYTES, MAX_DOCUMENT_BYTES, request_uri, size_if_too_large
from .uris import canonical

log = logging.getLogger("ptxls.transport")

MAX_BODY_BYTES = 128 << 20  # a 100 MB .ptx still fits; 10**12 does not
MAX_HEADER_LINE = 64 << 10
LARGE_BODY_BYTES = 1 << 20  # parsed by _decode_large, which lets the event loop run meanwhile
# Above this a body is read as a stream (_read_streamed): a string longer than the document
# limit is kept as its first HEADER_BYTES, never built whole.
STREAM_BODY_BYTES = MAX_DOCUMENT_BYTES
SKELETON_MAX_BYTES = 4 << 20  # a message's JSON outside its long strings
_INLINE_STRING_BYTES = 64 << 10  # a string up to this stays in the skeleton as it came
# Messages a textDocument request may overtake when they are about another document.
_DOCUMENT_NOTIFICATIONS = frozenset(
    {
        "textDocument/didOpen",
        "textDocument/didChange",
        "textDocument/didSave",
        "textDocument/didClose",
        "textDocument/willSave",
    }
)
_CHUNK = 64 << 10
_HEADER = re.compile(rb"Content-Length:[ \t]*(\d{1,20})[ \t]*\r?\n?$", re.IGNORECASE)

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602
REQUEST_FAILED = -32803  # LSP 3.17: a request that is valid but failed
SERVER_NOT_INITIALIZED = -32002


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
        self.pending = b""

    def _more(self, n: int) -> bytes:
        if self.fd is not None:
            try:
                return os.read(self.fd, n)
            except OSError:
                return b""
        return self.stream.read1(n) if hasattr(self.stream, "read1") else self.stream.read(n)

    def push_back(self, data: bytes) -> None:
        self.pending = data + self.pending

    def readline(self) -> bytes:
        """Up to and including the next newline, at most MAX_HEADER_LINE bytes; b'' at the end."""
        while True:
            nl = self.pending.find(b"\n", 0, MAX_HEADER_LINE)
            if nl >= 0:
                line, self.pending = self.pending[: nl + 1], self.pending[nl + 1 :]
                return line
            if len(self.pending) >= MAX_HEADER_LINE:
                line, self.pending = self.pending[:MAX_HEADER_LINE], self.pending[MAX_HEADER_LINE:]
                return line
            chunk = self._more(_CHUNK)
            if not chunk:
                line, self.pending = self.pending, b""
                return line
            self.pending += chunk

    def read(self, n: int) -> bytes:
        out = bytearray(self.pending[:n])
        self.pending = self.pending[n:]
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


_PARSE_FAILED = object()
_END = object()  # the end of input (a body may well be JSON null)


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


class MessageLoop:
    """Framing and JSON parsing run in a daemon thread (a blocked read of stdin must never keep
    the process alive after ``exit``, and parsing a 5 MB didOpen is no work for the event loop);
    each parsed message is dispatched on the event loop, in order."""

    def __init__(self, server: Any, stdin: BinaryIO, writer: StdoutWriter):
        self.server = server
        self.protocol = server.protocol
        self.input = _Input(stdin)
        self.writer = writer
        self.initialize_seen = False
        # messages read and not yet dispatched, in order: (sequence number, Parsed or marker)
        self.pending: collections.deque[tuple[int, Any]] = collections.deque()
        self._seq = 0
        self._overtakers = 0  # textDocument requests among them (_overtaker)
        self._scan_after = 0  # _take: no new scan until the message with this number is out
        # documents whose text came cut (above MAX_DOCUMENT_BYTES): canonical uri -> size sent
        self.cut_documents: dict[str, int] = {}
        server.cut_documents = self.cut_documents  # large_documents.size_if_too_large reads it

    async def run(self, stop: threading.Event) -> None:
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()

        def arrive(item) -> None:
            self._seq += 1
            self.pending.append((self._seq, item))
            if _overtaker(item) is not None:
                self._overtakers += 1
            wake.set()

        def read_all() -> None:
            try:
                while not stop.is_set():
                    item = self._next_message()
                    loop.call_soon_threadsafe(arrive, item)
                    if item is _END:
                        return
            except Exception:  # the stream broke: end the session, say why
                log.exception("reading the client's input failed")
                loop.call_soon_threadsafe(arrive, _END)

        threading.Thread(target=read_all, name="ptxls-stdin", daemon=True).start()
        handled = 0
        while not stop.is_set():
            handled += 1
            if handled % 32 == 0:
                # a burst (3,000 didOpens) is dispatched in order, but the work already started
                # (an earlier hover, a check) gets the loop every 32 messages. (Every 2 ms, or
                # after each request that overtook a burst: each didOpen of a burst got its
                # hooks and check started before the didClose right behind it arrived, and the
                # soak's memory median went 102 -> 206 MB, its p99 hover 0.25 -> 1.26 s.)
                await asyncio.sleep(0)
            if not self.pending:
                wake.clear()
                await wake.wait()
                continue
            item = self._take()
            if item is _END:
                return
            if item is _PARSE_FAILED:
                self.send_error(None, PARSE_ERROR, "Parse error: the message body is not JSON")
                continue
            self.dispatch(item)

    def _take(self):
        """The next message to dispatch: the oldest, unless the oldest are notifications about
        documents (a burst of didOpens, say) and a textDocument request about another document
        waits behind them: that request goes first (LSP lets a server answer out of order; a
        request never overtakes anything about its own document, or any other message). A scan
        that finds nothing to move is not repeated until the message that stopped it is out."""
        pending = self.pending
        if (
            self._overtakers
            and len(pending) > 1
            and pending[0][0] > self._scan_after
            and _document_notification(pending[0][1]) is not None
        ):
            about: dict[str, int] = {}  # document -> the last of its notifications seen
            for i, (seq, item) in enumerate(pending):
                key = _document_notification(item)
                if key is not None:
                    about[key] = seq
                    continue
                key = _overtaker(item)
                if key is not None and key not in about:
                    del pending[i]
                    self._overtakers -= 1
                    return item
                self._scan_after = about.get(key, seq) if key is not None else seq
                break
        _, item = pending.popleft()
        if _overtaker(item) is not None:
            self._overtakers -= 1
        return item

    def _next_message(self):
        """The next message (Parsed), _PARSE_FAILED, or _END at the end of input."""
        length = self._headers()
        if length is None:
            log.info("the client closed the input stream")
            return _END
        if length > STREAM_BODY_BYTES:
            streamed = read_streamed(self.input.read, length)
            if streamed.too_complex:
                log.error(
                    "a message of %d bytes is not JSON or has more than %d bytes of JSON outside "
                    "its strings: ignored",
                    length,
                    SKELETON_MAX_BYTES,
                )
                return _PARSE_FAILED
            try:
                return assemble(streamed)
            except (ValueError, RecursionError):
                log.error("a message body is not JSON (%d bytes)", length)
                return _PARSE_FAILED
        body = self.input.read(length)
        if len(body) < length:
            log.info("the input ended inside a message")
            return _END
        try:
            return Parsed(json.loads(body) if length < LARGE_BODY_BYTES else _decode_large(body))
        except (ValueError, RecursionError):
            log.error("a message body is not JSON (%d bytes)", len(body))
            self._resync(body)
            return _PARSE_FAILED

    def _headers(self) -> int | None:
        """Read header lines up to the blank line; the Content-Length, or None at end of input."""
        length: int | None = None
        while True:
            line = self.input.readline()
            if not line:
                return None
            if m := _HEADER.search(line):
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
                log.warning("ignored %d bytes of input that are not an LSP header", len(line))

    # -- one message --------------------------------------------------------------------------

    def dispatch(self, parsed: Parsed | Any) -> None:
        if not isinstance(parsed, Parsed):
            parsed = Parsed(parsed)
        data = parsed.data
        if not isinstance(data, dict) or data.get("jsonrpc") != "2.0":
            log.error("a message is not a JSON-RPC 2.0 object")
            msg_id = data.get("id") if isinstance(data, dict) else None
            self.send_error(_valid_id(msg_id), INVALID_REQUEST, "Invalid Request: not JSON-RPC 2.0")
            return
        method = data.get("method")
        is_request = "id" in data and "method" in data
        msg_id = data.get("id")
        if is_request and not _is_id(msg_id):
            self.send_error(
                None, INVALID_REQUEST, "Invalid Request: the id is not a number or string"
            )
            return
        if method is not None and not isinstance(method, str):
            if is_request:
                self.send_error(msg_id, INVALID_REQUEST, "Invalid Request: method is not a string")
            return
        if self._out_of_turn(method, msg_id, is_request):
            return
        if (parsed.cuts or self.cut_documents) and not self._cut_text(
            method, data, parsed.cuts, is_request, msg_id
        ):
            return
        try:
            message = self.protocol.structure_message(data)
        except JsonRpcException as e:
            if is_request:
                code = INVALID_PARAMS if e.code in (INVALID_PARAMS, -32603) else e.code
                self.send_error(msg_id, code, f"Invalid params for {_short(method)}")
            else:
                log.error("ignored %s: its params do not decode", _short(method))
            return
        except RecursionError:
            if is_request:
                self.send_error(msg_id, INVALID_PARAMS, f"Invalid params for {_short(method)}")
            return
        if is_request and isinstance(method, str) and method.startswith("textDocument/"):
            uri = request_uri(data)
            if uri is not None and size_if_too_large(self.server, uri) is not None:
                # nothing is computed over a document above the size limit; null is a valid
                # answer to every textDocument request (large_documents.py)
                self.send_result(msg_id, None)
                return
        if method == "initialize":
            if self.initialize_seen:
                # pygls runs it again and builds a new workspace: every open document is
                # forgotten and hovers, diagnostics and lenses go blank for the session. LSP
                # allows one initialize; a second gets an error and changes nothing.
                if is_request:
                    self.send_error(msg_id, INVALID_REQUEST,
                                    "Invalid Request: initialize was already received")  # fmt: skip
                return
            self.initialize_seen = True
        # The handler pygls starts for this request runs in a task that copies this context:
        # it learns its request id, so $/cancelRequest can reach it (inflight.py).
        token = CURRENT_REQUEST.set(msg_id if is_request else None)
        try:
            if method in ("shutdown", "exit"):
                self.server.stop_all_work()  # tools, workers and commands end now, not at exit
            if method == "shutdown":
                # pygls cancels the requests still running while it iterates over the dict that
                # a cancelled future's callback removes itself from: "dictionary changed size
                # during iteration", shutdown answered -32603 and the exit code 1. Cancelled
                # here first, from a copy, pygls finds nothing left to cancel.
                for future in list(self.protocol._request_futures.values()):
                    if not future.done():
                        future.cancel()
            self.protocol.handle_message(message)
            if method == "$/cancelRequest":
                params = data.get("params")
                if isinstance(params, dict) and _is_id(params.get("id")):
                    self.server.inflight.cancel_request(params["id"])
        except (SystemExit, KeyboardInterrupt):
            raise
        except Exception as e:  # a bug in a handler must not end the loop
            log.exception("could not handle %s", _short(method))
            if is_request:
                self.send_error(msg_id, -32603, f"Internal error: {type(e).__name__}")
        finally:
            CURRENT_REQUEST.reset(token)

    def _cut_text(self, method, data: dict, cuts: list, is_request: bool, msg_id) -> bool:
        """Documents whose text is above the size limit: the server keeps their first
        HEADER_BYTES (all that large_documents.notice reads) and their size, never the whole.
        Whether the message goes on to pygls (possibly changed); False when it was answered or
        dropped here."""
        params: Any = data.get("params")
        doc = params.get("textDocument") if isinstance(params, dict) else None
        uri = doc.get("uri") if isinstance(doc, dict) else None
        key = canonical(uri) if isinstance(uri, str) else None
        if cuts:
            size = max(cut.size for _, cut in cuts)
            paths = [path for path, _ in cuts]
            if key is not None and method == "textDocument/didOpen":
                if paths == [("params", "textDocument", "text")]:
                    self.cut_documents[key] = size
                    return True
            elif key is not None and method == "textDocument/didChange":
                changes = params.get("contentChanges")
                where = [
                    p[2] for p in paths if len(p) == 4 and p[:2] == ("params", "contentChanges")
                ]
                if isinstance(changes, list) and len(where) == len(paths):
                    # the text from the last cut change on is unknown past its head: that head
                    # becomes the whole text, and the document is marked cut
                    changes[:] = [{"text": changes[max(where)]["text"]}]
                    self.cut_documents[key] = size
                    return True
            why = (
                f"{_short(method)} holds a string of {size / 1e6:.1f} MB, above the "
                f"{MAX_DOCUMENT_BYTES / 1e6:.0f} MB a server takes in a message: not handled"
            )
            if is_request:
                self.send_error(msg_id, INVALID_PARAMS, why)
            else:
                log.error("%s", why)
            return False
        if key is None or key not in self.cut_documents:
            if is_request and method == "workspace/executeCommand":
                args = params.get("arguments") if isinstance(params, dict) else None
                first = args[0] if isinstance(args, list) and args else None
                if isinstance(first, str) and canonical(first) in self.cut_documents:
                    self.send_error(msg_id, REQUEST_FAILED, self._cut_message(first))
                    return False
            return True
        if method == "textDocument/didChange":
            changes = params.get("contentChanges")
            full = [
                i for i, c in enumerate(changes or []) if isinstance(c, dict) and "range" not in c
            ]
            if not full:
                return False  # edits of a text the server does not hold: nothing to apply
            changes[:] = changes[full[-1] :]  # a whole new text: the document is whole again
            del self.cut_documents[key]
        elif method in ("textDocument/didOpen", "textDocument/didClose"):
            del self.cut_documents[key]
        elif is_request and not str(method).startswith("textDocument/"):
            self.send_error(msg_id, REQUEST_FAILED, self._cut_message(str(uri)))
            return False
        return True

    def _cut_message(self, uri: str) -> str:
        size = self.cut_documents.get(canonical(uri), 0)
        return (
            f"{_short(uri.rsplit('/', 1)[-1], 80)} is {size / 1e6:.1f} MB, above the "
            f"{MAX_DOCUMENT_BYTES / 1e6:.0f} MB a server analyses: run ptxls on it in a terminal"
        )

    def _out_of_turn(self, method: str | None, msg_id, is_request: bool) -> bool:
        """A message the LSP lifecycle does not allow now (before initialize, after shutdown)
        or a notification sent with an id: refused (a request gets its error), never run."""
        if not self.initialize_seen and method not in ("initialize", "exit"):
            if is_request:
                self.send_error(msg_id, SERVER_NOT_INITIALIZED,
                                f"the server is not initialized: send 'initialize' before {method!r}")  # fmt: skip
            return True
        if self.protocol._shutdown and method != "exit":  # pygls sets it on shutdown
            if is_request:
                self.send_error(msg_id, INVALID_REQUEST,
                                "Invalid Request: the server was asked to shut down")  # fmt: skip
            return True
        if is_request and _is_notification(self.protocol, method):
            # pygls would run it as a notification and never answer the id.
            self.send_error(msg_id, INVALID_REQUEST,
                            f"Invalid Request: {_short(method)} is a notification (no id)")  # fmt: skip
            return True
        return False

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

    def send_result(self, msg_id, result) -> None:
        body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}).encode()
        try:
            self.writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        except (BrokenPipeError, OSError, ValueError):
            log.error("could not write to the client")

    def send_error(self, msg_id, code: int, message: str) -> None:
        payload = {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}
        body = json.dumps(payload).encode()
        try:
            self.writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        except (BrokenPipeError, OSError, ValueError):
            log.error("could not write to the client")


def _document_notification(item) -> str | None:
    """The document (canonical uri) a didOpen/didChange/didSave/didClose is about, else None."""
    data = item.data if isinstance(item, Parsed) else None
    if not isinstance(data, dict) or "id" in data:
        return None
    if data.get("method") not in _DOCUMENT_NOTIFICATIONS:
        return None
    uri = request_uri(data)
    return canonical(uri) if uri is not None else None


def _overtaker(item) -> str | None:
    """The document a textDocument request is about (such a request may be answered ahead of
    notifications about other documents), else None."""
    data = item.data if isinstance(item, Parsed) else None
    if not isinstance(data, dict) or not _is_id(data.get("id")):
        return None
    method = data.get("method")
    if not isinstance(method, str) or not method.startswith("textDocument/"):
        return None
    uri = request_uri(data)
    return canonical(uri) if uri is not None else None


def _is_notification(protocol, method: str | None) -> bool:
    """Whether the LSP defines ``method`` as a notification (its message type has no id)."""
    try:
        cls = protocol.get_message_type(method)
    except Exception:  # an unknown method is not a notification
        return False
    fields = getattr(cls, "__attrs_attrs__", None)
    return fields is not None and not any(f.name == "id" for f in fields)


def _is_id(value) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)


def _valid_id(value):
    return value if _is_id(value) else None


def _short(text, limit: int = 80) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


_EXCEPTION_LINE = re.compile(r"[A-Za-z_][\w.]*(?:Error|Exception|Group|Invalid\w*): .*")


class OneLineTracebacks(logging.Filter):
    """pygls logs a full traceback (a cattrs exception group: 30-60 lines) for every message
    whose params do not decode and every invalid command; 1,596 such messages in a soak were
    as many tracebacks on stderr. Their cause is the client's message, which the line already
    names: the traceback is folded into that one line. Records of ptxls's own code keep theirs."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith("pygls"):
            return True
        if record.exc_info:
            exc = record.exc_info[1]
            why = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            record.msg, record.args = f"{record.getMessage()} ({_short(why, 200)})", ()
            record.exc_info = record.exc_text = None
        text = record.getMessage()
        if "\n" in text:  # "Unable to deserialize message\n" + traceback.format_exc()
            first, *rest = text.splitlines()
            found = (_EXCEPTION_LINE.match(line.lstrip(" |+-")) for line in rest)
            why = next((m.group(0) for m in found if m), "")
            record.msg, record.args = f"{first} ({_short(why, 200)})" if why else first, ()
        return True


def fold_pygls_tracebacks() -> None:
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, OneLineTracebacks) for f in handler.filters):
            handler.addFilter(OneLineTracebacks())


def serve_stdio(server: Any, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> int:
    """Run the server over stdio until ``exit`` or the end of input; the process exit code (1
    for ``exit`` without ``shutdown``, per the LSP spec)."""
    fold_pygls_tracebacks()
    stop = threading.Event()
    server._stop_event = stop
    writer = StdoutWriter(stdout or sys.stdout.buffer)
    server.protocol.set_writer(writer)
    loop = MessageLoop(server, stdin or sys.stdin.buffer, writer)
    code = 0
    try:
        asyncio.run(loop.run(stop))
    except BrokenPipeError:
        log.error("the connection to the client is lost; shutting down")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 0
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
    return code
