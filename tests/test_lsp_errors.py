"""An exception inside a handler is logged (window/logMessage), never a popup per keystroke; a
client's didChange of a document it never opened is no internal error of ours."""

from __future__ import annotations

import asyncio

from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_helpers import (
    EXAMPLES,
    open_doc,
    replace_all,
    wait_for_publish,
)


async def test_edits_of_a_document_never_opened_are_dropped_quietly(
    client: LanguageClient, tmp_path
):
    ghost = (tmp_path / "never-opened.ptx").as_uri()
    # pygls's own handler raised KeyError on each, which read as an internal error of ours
    for v in range(2, 12):
        replace_all(client, ghost, "garbage", v)
    await asyncio.sleep(0.5)
    assert [m for m in client.messages if m.type == types.MessageType.Error] == []
    assert [m for m in client.log_messages if "internal error" in m.message] == []
    assert ghost not in {p.uri for p in client.publishes}
    # and the server still works
    uri = (tmp_path / "ok.ptx").as_uri()
    open_doc(client, uri, (EXAMPLES / "broken.ptx").read_text())
    pub = await wait_for_publish(client, uri, lambda p: p.diagnostics)
    assert any("%r6" in d.message for d in pub.diagnostics)


def test_a_handler_exception_is_logged_at_most_once_a_second_never_shown(monkeypatch):
    from ptxls.server.app import create_server

    server = create_server()
    logged, shown = [], []
    monkeypatch.setattr(server, "window_log_message", logged.append)
    monkeypatch.setattr(server, "window_show_message", shown.append)

    def did_change():  # stands for any feature handler
        pass

    for _ in range(20):  # a bug met on every keystroke
        server.report_server_error(KeyError("file:///x.ptx"), did_change)
    server.report_server_error(ValueError("other"), did_change)
    assert [m.message for m in logged] == [
        "ptxls internal error (did_change): KeyError: 'file:///x.ptx'",
        "ptxls internal error (did_change): ValueError: other",
    ]
    assert all(m.type == types.MessageType.Error for m in logged) and shown == []
