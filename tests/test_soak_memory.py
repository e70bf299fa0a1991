"""What a long session keeps: nothing per notification (issue 25's soak: 385 MB median after
five minutes of mixed traffic, where the issue's own soak had 74 MB).

pygls filed every didOpen/didChange/didClose it ran under a future in ``_request_futures`` and
never removed it (server/protocol.py): 30,000 of them after a five-minute soak."""

from __future__ import annotations

import asyncio

from ptxls.server.app import create_server


class _Writer:
    def __init__(self) -> None:
        self.out: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.out.append(data)

    def close(self) -> None:
        pass


def test_handled_notifications_leave_no_future_behind():
    async def session() -> tuple[int, int]:
        server = create_server()
        server.protocol.set_writer(_Writer())
        protocol = server.protocol

        def send(message: dict) -> None:
            protocol.handle_message(protocol.structure_message({"jsonrpc": "2.0", **message}))

        send({"id": 1, "method": "initialize", "params": {"capabilities": {}}})
        send({"method": "initialized", "params": {}})
        await asyncio.sleep(0.2)
        before = len(protocol._request_futures)
        for i in range(200):
            doc = {"uri": f"file:///tmp/ptxls-soak-memory/x{i}.ptx"}
            send({"method": "textDocument/didOpen", "params": {"textDocument": {
                **doc, "languageId": "ptx", "version": 1, "text": ".version 8.0\n"}}})  # fmt: skip
            send({"method": "textDocument/didChange", "params": {
                "textDocument": {**doc, "version": 2},
                "contentChanges": [{"text": ".version 8.1\n"}]}})  # fmt: skip
            send({"method": "textDocument/didClose", "params": {"textDocument": doc}})
        await asyncio.sleep(0.5)
        server.stop_all_work()
        return before, len(protocol._request_futures)

    before, after = asyncio.run(session())
    assert after <= before, f"{after - before} notification futures kept after 600 notifications"
