"""End-to-end: ptxas missing, large files (save-only), settings the server must survive."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_helpers import (
    BROKEN,
    FIXED,
    init_params,
    open_doc,
    replace_all,
    wait_for_publish,
)

pytestmark = pytest.mark.lsp(initialize=False)  # each test starts with its own settings


async def _start(client: LanguageClient, tmp_path, options: dict) -> None:
    await client.initialize_session(init_params(tmp_path, options))


async def test_missing_ptxas_gives_one_clear_message_and_lints_still_run(
    client: LanguageClient, tmp_path
):
    await _start(client, tmp_path, {"ptxasPath": str(tmp_path / "no-such-ptxas"), "debounceMs": 30})
    uri = (tmp_path / "broken.ptx").as_uri()
    open_doc(client, uri, BROKEN)
    pub = await wait_for_publish(client, uri, lambda p: p.diagnostics)
    # the instant checks still find the undeclared register
    assert {d.source for d in pub.diagnostics} == {"ptxls"}
    assert any("%r6" in d.message for d in pub.diagnostics)
    for v in range(2, 6):
        replace_all(client, uri, BROKEN + f"\n// edit {v}\n", v)
    await wait_for_publish(client, uri, lambda p: p.version == 5)
    errors = [m for m in client.messages if m.type == types.MessageType.Error]
    assert len(errors) == 1, errors  # once, not once per keystroke
    assert "ptxas" in errors[0].message and "no-such-ptxas" in errors[0].message
    assert "pip install nvidia-cuda-nvcc" in errors[0].message


async def test_large_file_runs_ptxas_on_save_only(client: LanguageClient, tmp_path):
    await _start(client, tmp_path, {"saveOnlyAboveBytes": 1000, "debounceMs": 30})
    uri = (tmp_path / "big.ptx").as_uri()
    assert len(BROKEN) > 1000
    open_doc(client, uri, BROKEN)
    await wait_for_publish(client, uri, lambda p: any(d.source == "ptxas" for d in p.diagnostics))
    # an edit: instant checks only, and the person is told why
    replace_all(client, uri, FIXED, 2)
    pub = await wait_for_publish(client, uri, lambda p: p.version == 2)
    assert all(d.source != "ptxas" for d in pub.diagnostics)
    info = [m for m in client.messages if "saveOnlyAboveBytes" in m.message]
    assert len(info) == 1
    replace_all(client, uri, BROKEN, 3)
    await wait_for_publish(client, uri, lambda p: p.version == 3)
    await asyncio.sleep(0.3)
    assert all(d.source != "ptxas" for d in client.diagnostics[uri])
    assert len([m for m in client.messages if "saveOnlyAboveBytes" in m.message]) == 1  # told once
    # save: ptxas runs
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    pub = await wait_for_publish(
        client, uri, lambda p: any(d.source == "ptxas" for d in p.diagnostics)
    )
    assert pub.version == 3


async def test_bad_setting_falls_back_with_one_message(client: LanguageClient, tmp_path):
    await _start(client, tmp_path, {"debounceMs": "fast", "arch": 90})
    uri = (tmp_path / "ok.ptx").as_uri()
    open_doc(client, uri, FIXED)
    pub = await wait_for_publish(client, uri)
    assert list(pub.diagnostics) == []
    assert any("debounceMs" in m.message for m in client.messages)


async def test_five_megabyte_buffer_does_not_take_the_server_down(client: LanguageClient, tmp_path):
    await _start(client, tmp_path, {"debounceMs": 30})
    body = "\n".join(f"    add.s32 %r{i % 5 + 1}, %r1, {i};" for i in range(180_000))
    text = FIXED.replace("DONE:", body + "\nDONE:")
    assert len(text) > 5_000_000
    uri = (tmp_path / "huge.ptx").as_uri()
    open_doc(client, uri, text)
    # above the default threshold: ptxas runs on open (like a save), lints as you type
    replace_all(client, uri, text + "\n", 2)
    pub = await wait_for_publish(client, uri, lambda p: p.version == 2, timeout=60)
    assert all(d.source != "ptxas" for d in pub.diagnostics)
    small = (tmp_path / "small.ptx").as_uri()
    open_doc(client, small, BROKEN)
    await wait_for_publish(
        client, small, lambda p: any(d.source == "ptxas" for d in p.diagnostics), timeout=60
    )
