"""A Debug Adapter Protocol client for tests: starts ``ptxls debug-adapter`` as a process and
speaks Content-Length framed JSON to it over its stdin/stdout."""

from __future__ import annotations

import contextlib
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

from raw_lsp import frame, read_framed

ROOT = Path(__file__).resolve().parent.parent


class DapClient:
    def __init__(self) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ptxls.cli", "debug-adapter"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        )  # fmt: skip
        self.seq = 0
        self.messages: queue.Queue = queue.Queue()
        self.events: list[dict] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while (got := read_framed(self.proc.stdout)) is not None:
            self.messages.put(got[0])
        self.messages.put(None)

    def send(self, command: str, arguments: dict | None = None) -> int:
        self.seq += 1
        msg = {"seq": self.seq, "type": "request", "command": command}
        if arguments is not None:
            msg["arguments"] = arguments
        self.proc.stdin.write(frame(msg))
        self.proc.stdin.flush()
        return self.seq

    def _next(self, timeout: float) -> dict:
        msg = self.messages.get(timeout=timeout)
        if msg is None:
            raise EOFError(self.proc.stderr.read().decode(errors="replace"))
        if msg["type"] == "event":
            self.events.append(msg)
        return msg

    def request(self, command: str, arguments: dict | None = None, timeout: float = 60) -> dict:
        seq = self.send(command, arguments)
        while True:
            msg = self._next(timeout)
            if msg["type"] == "response" and msg["request_seq"] == seq:
                return msg

    def wait_event(self, name: str, timeout: float = 60) -> dict:
        for i, e in enumerate(self.events):
            if e["event"] == name:
                return self.events.pop(i)
        while True:
            msg = self._next(timeout)
            if msg["type"] == "event" and msg["event"] == name:
                self.events.remove(msg)
                return msg

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.request("disconnect", {}, timeout=10)
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    # ---- what tests do often

    def start(self, program: str, breakpoints: list = (), **launch) -> None:
        r = self.request("initialize", {"adapterID": "ptxls", "linesStartAt1": True})
        assert r["success"], r
        r = self.request("launch", {"program": program, **launch})
        assert r["success"], r
        self.wait_event("initialized")
        if breakpoints:
            bps = [b if isinstance(b, dict) else {"line": b} for b in breakpoints]
            r = self.request("setBreakpoints", {"source": {"path": program}, "breakpoints": bps})
            assert all(b["verified"] for b in r["body"]["breakpoints"]), r

    def variables(self, frame_id: int, scope: str) -> dict[str, str]:
        scopes = self.request("scopes", {"frameId": frame_id})["body"]["scopes"]
        ref = next(s["variablesReference"] for s in scopes if s["name"] == scope)
        body = self.request("variables", {"variablesReference": ref})["body"]
        return {v["name"]: v for v in body["variables"]}

    def top_frame(self, thread_id: int) -> dict:
        return self.request("stackTrace", {"threadId": thread_id})["body"]["stackFrames"][0]
