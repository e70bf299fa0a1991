"""The Debug Adapter Protocol's base layer: messages framed by a ``Content-Length`` header
(the protocol's own wire format, as for LSP), and the three message shapes of its JSON schema —
``request`` (seq, command, arguments), ``response`` (request_seq, success, command, message,
body) and ``event`` (event, body). No DAP library for Python is maintained as a server
framework (debugpy embeds its own for Python programs), so this follows the schema directly.
"""

from __future__ import annotations

import json
import threading
from typing import BinaryIO


class Channel:
    """Reads requests from ``inp`` and writes responses and events to ``out``; writes are
    serialised (events come from the thread that runs the kernel)."""

    def __init__(self, inp: BinaryIO, out: BinaryIO) -> None:
        self.inp, self.out = inp, out
        self._lock = threading.Lock()
        self._seq = 0

    def read(self) -> dict | None:
        """The next message, or None at the end of the input."""
        length = None
        while True:
            line = self.inp.readline()
            if not line:
                return None
            line = line.strip()
            if not line:
                if length is None:
                    continue
                break
            key, _, value = line.decode("ascii", "replace").partition(":")
            if key.strip().lower() == "content-length":
                length = int(value.strip())
        body = self.inp.read(length)
        if len(body) < length:
            return None
        return json.loads(body.decode("utf-8"))

    def send(self, message: dict) -> None:
        with self._lock:
            self._seq += 1
            message = {"seq": self._seq, **message}
            data = json.dumps(message, separators=(",", ":")).encode("utf-8")
            self.out.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
            self.out.flush()

    def respond(self, request: dict, body: dict | None = None, error: str | None = None) -> None:
        msg: dict[str, object] = {"type": "response", "request_seq": request.get("seq", 0),
               "command": request.get("command", ""), "success": error is None}  # fmt: skip
        if error is not None:
            msg["message"] = error
            msg["body"] = {"error": {"id": 1, "format": error, "showUser": True}}
        elif body is not None:
            msg["body"] = body
        self.send(msg)

    def event(self, name: str, body: dict | None = None) -> None:
        msg: dict[str, object] = {"type": "event", "event": name}
        if body is not None:
            msg["body"] = body
        self.send(msg)
