"""Hostile input: every file a client can name works. VS Code percent-encodes URIs (a space is
%20, an accent %C3%A9, a Windows drive file:///c%3A/...) while pygls files documents under the
decoded URI; the server looked them up raw and silently ignored those files. Through the real
server: diagnostics, hover, code lenses, code actions and the GPU-test command for each."""

from __future__ import annotations

import time

import pytest
from raw_lsp import ROOT, RawServer

BROKEN = (ROOT / "examples" / "broken.ptx").read_text()
CUDA = (ROOT / "examples" / "vec_add.cu").read_text()
MAD_LINE = next(i for i, line in enumerate(BROKEN.splitlines()) if "mad.lo.s32" in line)

PTX_URIS = [
    "file:///tmp/ptxls%20uri%20test/vec%20add.ptx",  # spaces
    "file:///tmp/caf%C3%A9/k%C3%A9rnel.ptx",  # accents
    "file:///tmp/a%2Bb/k+1.ptx",  # '+' encoded and bare
    "file:///c%3A/Users/me/k.ptx",  # a Windows drive as VS Code sends it
    "file:///D:/Work%20Dir/k.ptx",  # a drive letter not encoded, upper case
    "file://localhost/tmp/host/k.ptx",  # an explicit host
]


@pytest.fixture(scope="module")
def server():
    with RawServer() as s:
        s.initialize("/tmp", {"ptxls": {"debounceMs": 0}})
        for uri in PTX_URIS:
            s.open(uri, BROKEN)
        s.open("file:///c%3A/Users/me/my%20vec%20add.cu", CUDA, "cuda-cpp")
        yield s


def _diagnostics(server: RawServer, uri: str, timeout: float = 30.0) -> list:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = server.latest_diagnostics(uri)
        if got:
            return got
        time.sleep(0.05)
    return []


@pytest.mark.parametrize("uri", PTX_URIS)
def test_diagnostics_hover_and_lenses(server, uri):
    diags = _diagnostics(server, uri)
    assert any("%r6" in d["message"] for d in diags), diags
    hover = server.hover(uri, MAD_LINE, BROKEN.splitlines()[MAD_LINE].index("mad") + 1)
    assert "mad" in str(hover.get("result")), hover
    lens = server.wait_reply(
        server.request("textDocument/codeLens", {"textDocument": {"uri": uri}})
    )
    assert any(
        "GPU test" in (lens_.get("command") or {}).get("title", "") for lens_ in lens["result"]
    ), lens


def test_the_same_file_spelled_another_way_is_found(server):
    """A client (or a command argument) may write the drive letter upper case and unencoded."""
    lens = server.wait_reply(server.request(
        "textDocument/codeLens", {"textDocument": {"uri": "file:///C:/Users/me/k.ptx"}}))  # fmt: skip
    assert lens["result"], lens


def test_code_actions_on_an_encoded_windows_cuda_path(server):
    uri = "file:///c%3A/Users/me/my%20vec%20add.cu"
    line = next(i for i, t in enumerate(CUDA.splitlines()) if "__global__" in t)
    reply = server.wait_reply(server.request("textDocument/codeAction", {
        "textDocument": {"uri": uri},
        "range": {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 0}},
        "context": {"diagnostics": []},
    }))  # fmt: skip
    titles = [a.get("title", "") for a in reply["result"] or []]
    assert any("Lower to PTX" in t for t in titles), titles


def test_gpu_test_command_finds_the_encoded_document(server):
    reply = server.wait_reply(
        server.request(
            "workspace/executeCommand",
            {"command": "ptxls.runGpuTest", "arguments": [PTX_URIS[0], "saxpy"]},
        ),  # fmt: skip
        timeout=120,
    )
    assert reply["result"]["status"] != "not-open", reply
