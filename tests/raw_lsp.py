"""A raw stdio LSP client for hostile-input tests: it writes bytes exactly as given (broken
framing included) to the real server process and reads framed replies with a deadline. Its
framing (``frame``, ``read_framed``) is also the DAP client's (dap_client.py): the same
Content-Length headers."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SERVER = [sys.executable, "-m", "ptxls.server", "serve"]


def frame(payload: dict | bytes, length: int | None = None) -> bytes:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    n = len(body) if length is None else length
    return b"Content-Length: %d\r\n\r\n" % n + body


def read_framed(out) -> tuple[Any, int] | None:
    """One Content-Length framed JSON message from a binary stream, and its body's length;
    None at the stream's end. Header lines other than Content-Length are skipped."""
    length = None
    while True:
        line = out.readline()
        if not line:
            return None
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
        elif line in (b"\r\n", b"\n") and length is not None:
            break
    return json.loads(out.read(length)), length


class RawServer:
    def __init__(self, env: dict | None = None, cwd: str | None = None, command=None):
        self.proc = subprocess.Popen(
            command or SERVER,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
            cwd=cwd or str(ROOT),
        )
        self.replies: queue.Queue = queue.Queue()
        self.diagnostics: dict[str, list] = {}  # the latest publishDiagnostics per uri
        self.log: list[str] = []
        self.notifications: list = []  # (method, body bytes, params) of everything the server sent  # window/logMessage and window/showMessage texts
        self.stderr: list[bytes] = []
        self.next_id = 1000
        self.early: dict = {}
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read(self) -> None:
        while (got := read_framed(self.proc.stdout)) is not None:
            msg, length = got
            method = msg.get("method") if isinstance(msg, dict) else None
            if method:
                self.notifications.append((method, length, msg.get("params")))
            if method == "textDocument/publishDiagnostics":
                p = msg["params"]
                self.diagnostics[p["uri"]] = p["diagnostics"]
            elif method in ("window/logMessage", "window/showMessage"):
                self.log.append(msg["params"]["message"])
            self.replies.put(msg)
        self.replies.put(None)

    def _read_err(self) -> None:
        for line in self.proc.stderr:
            self.stderr.append(line)

    def send(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def request(self, method: str, params=None, *, msg_id=None) -> int:
        msg_id = self.next_id if msg_id is None else msg_id
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(frame(msg))
        return msg_id

    def notify(self, method: str, params=None) -> None:
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(frame(msg))

    def wait_reply(self, msg_id, timeout: float = 10.0) -> dict:
        """The response to ``msg_id`` (server requests and notifications are skipped; server
        requests get an empty answer so the server is never left waiting)."""
        deadline = time.monotonic() + timeout
        if msg_id in self.early:
            return self.early.pop(msg_id)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no reply to {msg_id!r} within {timeout} s")
            try:
                msg = self.replies.get(timeout=left)
            except queue.Empty:
                continue
            if msg is None:
                raise EOFError(f"the server closed its output before answering {msg_id!r}")
            if "method" in msg and "id" in msg:  # a request from the server: answer it
                self.send(frame({"jsonrpc": "2.0", "id": msg["id"], "result": None}))
                continue
            if "method" in msg:
                continue
            if msg.get("id") == msg_id:
                return msg
            self.early[msg.get("id")] = msg  # another request's answer: kept for its waiter

    def latest_diagnostics(self, uri: str) -> list | None:
        return self.diagnostics.get(uri)

    def messages(self) -> list[str]:
        return list(self.log)

    def initialize(self, root: str | None = None, options: dict | None = None) -> dict:
        root_uri = Path(root or ROOT).as_uri()
        rid = self.request("initialize", {
            "processId": os.getpid(), "rootUri": root_uri, "capabilities": {},
            "initializationOptions": options or {},
        })  # fmt: skip
        reply = self.wait_reply(rid, 30)
        self.notify("initialized", {})
        return reply

    def open(self, uri: str, text: str, language: str = "ptx", version: int = 1) -> None:
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": language, "version": version, "text": text}})  # fmt: skip

    def hover(self, uri: str, line: int, character: int, timeout: float = 10.0) -> dict:
        rid = self.request("textDocument/hover", {
            "textDocument": {"uri": uri}, "position": {"line": line, "character": character}})  # fmt: skip
        return self.wait_reply(rid, timeout)

    def close(self, timeout: float = 10.0) -> int:
        if self.proc.poll() is None:
            try:
                self.wait_reply(self.request("shutdown"), timeout)
                self.notify("exit")
            except (TimeoutError, EOFError, BrokenPipeError, OSError):
                pass
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def __enter__(self) -> RawServer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
        if self.proc.poll() is None:
            self.proc.kill()
