"""End-to-end: a ptxas that hangs or crashes is reported, killed, and the server stays up."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

import pytest
from pytest_lsp import LanguageClient

from lsp_helpers import (
    EXAMPLES,
    init_params,
    open_doc,
    replace_all,
    wait_for_publish,
)

TEXT = (EXAMPLES / "vec_add.ptx").read_text()


def fake_ptxas(tmp_path, body: str):
    """A ptxas that answers --version like CUDA 13.0 and then does ``body`` when asked to work."""
    path = tmp_path / "ptxas"
    path.write_text(
        "#!/bin/sh\n"
        'case "$1" in --version) echo "Cuda compilation tools, release 13.0, V13.0.88"; exit 0;; esac\n'
        'case "$*" in *probe.ptx*) echo "ptxas fatal : Unsupported .version 99.9; current version is \'9.0\'" >&2; exit 1;; esac\n'
        f"{body}\n"
    )
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


pytestmark = pytest.mark.lsp(initialize=False)  # each test starts with its own fake ptxas


async def test_hanging_ptxas_is_killed_at_the_timeout(client: LanguageClient, tmp_path):
    marker = tmp_path / "pid"
    ptxas = fake_ptxas(tmp_path, f"echo $$ > {marker}\nexec sleep 300")
    await client.initialize_session(
        init_params(tmp_path, {"ptxasPath": str(ptxas), "ptxasTimeoutSeconds": 1})
    )
    uri = (tmp_path / "k.ptx").as_uri()
    open_doc(client, uri, TEXT)
    pub = await wait_for_publish(client, uri, lambda p: p.diagnostics)
    assert any("did not finish within 1 s" in d.message for d in pub.diagnostics)
    pid = int(marker.read_text())
    await asyncio.sleep(0.2)
    status = Path(f"/proc/{pid}/status")
    assert not status.exists() or "zombie" in status.read_text().lower()


async def test_crashing_ptxas_is_reported(client: LanguageClient, tmp_path):
    ptxas = fake_ptxas(tmp_path, "kill -SEGV $$")
    await client.initialize_session(init_params(tmp_path, {"ptxasPath": str(ptxas)}))
    uri = (tmp_path / "k.ptx").as_uri()
    open_doc(client, uri, TEXT)
    pub = await wait_for_publish(client, uri, lambda p: p.diagnostics)
    assert any("ptxas crashed (signal 11)" in d.message for d in pub.diagnostics)


async def test_an_edit_kills_the_running_ptxas(client: LanguageClient, tmp_path):
    marker = tmp_path / "pid"
    ptxas = fake_ptxas(tmp_path, f"echo $$ > {marker}\nexec sleep 300")
    await client.initialize_session(
        init_params(tmp_path, {"ptxasPath": str(ptxas), "debounceMs": 10})
    )
    uri = (tmp_path / "k.ptx").as_uri()
    open_doc(client, uri, TEXT)
    for _ in range(200):
        if marker.exists() and marker.read_text().strip():
            break
        await asyncio.sleep(0.02)
    pid = int(marker.read_text())
    replace_all(client, uri, TEXT + "\n", 2)
    for _ in range(100):
        if not os.path.exists(f"/proc/{pid}"):
            break
        await asyncio.sleep(0.02)
    assert not os.path.exists(f"/proc/{pid}"), "the superseded ptxas is still running"
    for _ in range(200):  # the new version's ptxas started...
        if marker.read_text().strip() not in ("", str(pid)):
            break
        await asyncio.sleep(0.02)
    second = int(marker.read_text())
    await client.shutdown_session()
    for _ in range(100):  # ...and dies with the server
        if not os.path.exists(f"/proc/{second}"):
            break
        await asyncio.sleep(0.05)
    assert not os.path.exists(f"/proc/{second}"), "ptxas outlived the server"
