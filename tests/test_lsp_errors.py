"""An exception inside a handler is logged (window/logMessage), never a popup per keystroke."""

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


async def test_handler_errors_are_logged_not_shown(client: LanguageClient, tmp_path):
    ghost = (tmp_path / "never-opened.ptx").as_uri()
    # edits to a document the client never opened: pygls's own handler fails on each
    for v in range(2, 12):
        replace_all(client, ghost, "garbage", v)
    await asyncio.sleep(1.0)
    assert [m for m in client.messages if m.type == types.MessageType.Error] == []
    logged = [m for m in client.log_messages if "internal error" in m.message]
    assert 1 <= len(logged) < 10  # logged, and rate-limited rather than one per edit
    # and the server still works
    uri = (tmp_path / "ok.ptx").as_uri()
    open_doc(client, uri, (EXAMPLES / "broken.ptx").read_text())
    pub = await wait_for_publish(client, uri, lambda p: p.diagnostics)
    assert any("%r6" in d.message for d in pub.diagnostics)
