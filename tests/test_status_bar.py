"""The status bar's data tells the truth about the active file: ptxls/fileStatus gives the arch
and the ptxas the diagnostics use for that file (setting > .target > GPU > sm_90; the first
ptxas that takes its .version), and ptxls/status the LLM endpoint's host."""

from __future__ import annotations

import asyncio

import pytest
from pytest_lsp import LanguageClient

from ptxls.toolchain.discovery import ToolNotFound, find_ptxas

from lsp_helpers import BROKEN, init_params, open_doc, replace_all

SM80 = BROKEN.replace(".target sm_90", ".target sm_80")


pytestmark = pytest.mark.lsp(initialize=False)  # each test starts with its own settings


async def _next(client: LanguageClient, method: str, predicate, timeout: float = 30.0):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        for m, params in client.notifications:
            if m == method and predicate(params):
                return params
        await asyncio.sleep(0.05)
    raise AssertionError(f"no {method} matching; got {client.notifications}")


def _get(params, key):  # pygls hands custom notifications over as objects
    return getattr(params, key, None) if not isinstance(params, dict) else params.get(key)


async def test_file_target_decides_the_arch_and_an_edit_updates_it(client, tmp_path):
    await client.initialize_session(init_params(tmp_path, {"debounceMs": 30}))
    uri = (tmp_path / "k.ptx").as_uri()
    open_doc(client, uri, SM80)
    first = await _next(client, "ptxls/fileStatus", lambda p: _get(p, "uri") == uri)
    assert (_get(first, "arch"), _get(first, "archFrom")) == ("sm_80", ".target")
    assert _get(first, "ptxVersion") == "8.0"
    try:
        expected = find_ptxas(None, needs_isa=(8, 0)).path
    except ToolNotFound:
        pytest.skip("no ptxas here")
    assert _get(first, "ptxasPath") == expected

    replace_all(client, uri, SM80.replace(".target sm_80", ".target sm_86"), version=2)
    second = await _next(client, "ptxls/fileStatus", lambda p: _get(p, "arch") == "sm_86")
    assert _get(second, "archFrom") == ".target"


async def test_the_arch_setting_wins_over_target(client, tmp_path):
    await client.initialize_session(init_params(tmp_path, {"arch": "sm_90a"}))
    uri = (tmp_path / "k.ptx").as_uri()
    open_doc(client, uri, SM80)
    status = await _next(client, "ptxls/fileStatus", lambda p: _get(p, "uri") == uri)
    assert (_get(status, "arch"), _get(status, "archFrom")) == ("sm_90a", "setting")


async def test_status_names_the_llm_endpoint_host(client, tmp_path):
    options = {"llm": {"model": "m1", "baseUrl": "http://127.0.0.1:8123/v1"}}
    await client.initialize_session(init_params(tmp_path, options))
    status = await _next(client, "ptxls/status", lambda p: True)
    assert _get(status, "llmHost") == "127.0.0.1:8123"
    assert _get(status, "llmModel") == "m1"


async def test_cuda_files_get_no_file_status(client, tmp_path):
    await client.initialize_session(init_params(tmp_path, {}))
    cu = (tmp_path / "k.cu").as_uri()
    ptx = (tmp_path / "k.ptx").as_uri()
    open_doc(client, cu, "__global__ void k() {}\n", language="cuda-cpp")
    open_doc(client, ptx, SM80)
    await _next(client, "ptxls/fileStatus", lambda p: _get(p, "uri") == ptx)
    assert not [
        p for m, p in client.notifications if m == "ptxls/fileStatus" and _get(p, "uri") == cu
    ]
