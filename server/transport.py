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
import json
import json.decoder
import json.scanner
import logging
import os
import re
import sys
import threading
from typing import Any, BinaryIO

from pygls.exceptions import JsonRpcException
from pygls.io_ import StdoutWriter

from .inflight import CURRENT_REQUEST
from .large_documents import request_uri, size_if_too_large

log = logging.getLogger("ptxls.transport")

MAX_BODY_BYTES = 128 << 20  # a 100 MB .ptx still fits; 10**12 does not
MAX_HEADER_LINE = 64 << 10
LARGE_BODY_BYTES = 1 << 20  # parsed by _decode_large, which lets the event loop run meanwhile
_CHUNK = 64 << 10
_HEADER = re.compile(rb"Content-Length:[ \t]*(\d{1,20})[ \t]*\r?\n?$", re.IGNORECASE)

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602
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

    async def run(self, stop: threading.Event) -> None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()

        def read_all() -> None:
            try:
                while not stop.is_set():
                    item = self._next_message()
                    loop.call_soon_threadsafe(queue.put_nowait, item)
                    if item is _END:
                        return
            except Exception:  # the stream broke: end the session, say why
                log.exception("reading the client's input failed")
                loop.call_soon_threadsafe(queue.put_nowait, _END)

        threading.Thread(target=read_all, name="ptxls-stdin", daemon=True).start()
        handled = 0
        while not stop.is_set():
            handled += 1
            if handled % 32 == 0:
                # a burst (3,000 didOpens) is dispatched in order, but the work already started
                # (an earlier hover, a check) gets the loop every 32 messages
                await asyncio.sleep(0)
            item = await queue.get()
            if item is _END:
                return
            if item is _PARSE_FAILED:
                self.send_error(None, PARSE_ERROR, "Parse error: the message body is not JSON")
                continue
            self.dispatch(item)

    def _next_message(self):
        """The next message as parsed JSON, _PARSE_FAILED, or _END at the end of input."""
        length = self._headers()
        if length is None:
            log.info("the client closed the input stream")
            return _END
        body = self.input.read(length)
        if len(body) < length:
            log.info("the input ended inside a message")
            return _END
        try:
            return json.loads(body) if length < LARGE_BODY_BYTES else _decode_large(body)
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

    def dispatch(self, data: Any) -> None:
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
