"""The stdio message loop: our own, in place of pygls' ``run_async``, so that a client that
breaks the framing or the lifecycle cannot make the server deaf, crash it, or leave a request
unanswered. pygls 2.x (io_.run_async and JsonRPCProtocol) does not, and each point below is a
workaround for it, kept here rather than patched into the installed package:

- **Framing and size** (a short body made pygls deaf for good, a huge ``Content-Length`` ended it
  with a MemoryError): the reader thread's side, in ``framing.py``.
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
import contextlib
import json
import logging
import re
import sys
import threading
from typing import Any, BinaryIO

from pygls.exceptions import JsonRpcException
from pygls.io_ import StdoutWriter

from .framing import END, PARSE_FAILED, MessageReader, Parsed
from .inflight import CURRENT_REQUEST
from .large_documents import MAX_DOCUMENT_BYTES, request_uri, size_if_too_large
from .memory import release_periodically
from .uris import canonical

log = logging.getLogger("ptxls.transport")

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

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602
REQUEST_FAILED = -32803  # LSP 3.17: a request that is valid but failed
SERVER_NOT_INITIALIZED = -32002


class MessageLoop:
    """Framing and JSON parsing run in a daemon thread (a blocked read of stdin must never keep
    the process alive after ``exit``, and parsing a 5 MB didOpen is no work for the event loop);
    each parsed message is dispatched on the event loop, in order."""

    def __init__(self, server: Any, stdin: BinaryIO, writer: StdoutWriter):
        self.server = server
        self.protocol = server.protocol
        self.reader = MessageReader(stdin)
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
        # parsed by the reader thread, not yet moved to ``pending`` by the loop (run)
        self.inbox: collections.deque[Any] = collections.deque()
        # a burst's opens wait for these (features/ptx_diagnostics.py)
        server.messages_waiting = lambda: len(self.pending) + len(self.inbox)

    async def run(self, stop: threading.Event) -> None:
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()

        # The reader hands messages over through ``inbox``, waking the loop once for all that
        # arrive before the loop takes them: a burst of 3,000 didOpens was 3,000 wake-ups (a
        # write to the loop's self-pipe each) and as many turns of the loop.
        called = [False]  # a take_inbox is scheduled and has not started

        def take_inbox() -> None:
            called[0] = False
            while self.inbox:
                item = self.inbox.popleft()
                self._seq += 1
                self.pending.append((self._seq, item))
                if _overtaker(item) is not None:
                    self._overtakers += 1
            wake.set()

        def arrive(item) -> None:  # in the reader thread
            self.inbox.append(item)
            if not called[0]:
                called[0] = True
                loop.call_soon_threadsafe(take_inbox)

        def read_all() -> None:
            try:
                while not stop.is_set():
                    item = self.reader.next_message()
                    arrive(item)
                    if item is END:
                        return
            except Exception:  # the stream broke: end the session, say why
                log.exception("reading the client's input failed")
                with contextlib.suppress(RuntimeError):  # the loop is closed
                    arrive(END)

        threading.Thread(target=read_all, name="ptxls-stdin", daemon=True).start()
        releaser = asyncio.ensure_future(release_periodically())
        try:
            await self._dispatch_all(stop, wake)
        finally:
            releaser.cancel()

    async def _dispatch_all(self, stop: threading.Event, wake: asyncio.Event) -> None:
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
            if item is END:
                return
            if item is PARSE_FAILED:
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
