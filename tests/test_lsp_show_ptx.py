"""End-to-end: "Show PTX for this kernel" opens nvcc's PTX with the CUDA lines interleaved."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from ptxls.diagnostics.lints import lint_ptx

from lsp_helpers import init_params, open_doc

SOURCE = """// two kernels; only the asked one is shown
__global__ void scale(float* x, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= s;
}
__global__ void vec_add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""


def _without_show_document(root, options) -> types.InitializeParams:
    params = init_params(root, options)
    params.capabilities.window = types.WindowClientCapabilities()  # no showDocument support
    return params


WITHOUT_SHOW_DOCUMENT = pytest.mark.lsp(init=_without_show_document)


async def test_show_ptx_maps_source_lines_and_keeps_one_kernel(client: LanguageClient, tmp_path):
    src = tmp_path / "two.cu"
    src.write_text(SOURCE)
    open_doc(client, src.as_uri(), SOURCE, language="cuda-cpp")
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="ptxls.showPtx", arguments=[src.as_uri(), "vec_add"])
    )
    assert result["ok"], result
    ptx = result["ptx"]
    assert "// two.cu:8: if (i < n) c[i] = a[i] + b[i];" in ptx
    assert "scale" not in ptx.split(".address_size")[1]  # the other kernel is left out
    assert ".loc" not in ptx
    assert lint_ptx(ptx) == []  # a view that ptxas would accept
    shown = tmp_path / ".ptxls" / "show" / "vec_add.show.ptx"
    assert result["uri"] == shown.as_uri() and shown.read_text() == ptx
    for _ in range(100):  # the server asks the client to open it, without waiting on the answer
        if client.shown_documents:
            break
        await asyncio.sleep(0.02)
    assert client.shown_documents and client.shown_documents[-1].uri == shown.as_uri()


async def test_show_ptx_unknown_kernel_is_a_clear_answer(client: LanguageClient, tmp_path):
    src = tmp_path / "two.cu"
    src.write_text(SOURCE)
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="ptxls.showPtx", arguments=[src.as_uri(), "nope"])
    )
    assert result["ok"] is False and "nope" in result["summary"]


@WITHOUT_SHOW_DOCUMENT
async def test_show_ptx_answers_a_client_without_show_document(client: LanguageClient, tmp_path):
    src = tmp_path / "two.cu"
    src.write_text(SOURCE)
    result = await asyncio.wait_for(
        client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="ptxls.showPtx", arguments=[src.as_uri(), "scale"])
        ),
        60,
    )
    assert result["ok"] and result["uri"].endswith("/.ptxls/show/scale.show.ptx")
    assert client.shown_documents == []


@WITHOUT_SHOW_DOCUMENT
async def test_show_ptx_replaces_a_shipped_symlink_never_writes_through_it(
    client: LanguageClient, tmp_path, tmp_path_factory
):
    # a cloned repo ships .ptxls/show/scale.show.ptx as a link to a file outside it
    victim = tmp_path_factory.mktemp("outside") / "victim.txt"
    victim.write_text("precious\n")
    show = tmp_path / ".ptxls" / "show"
    show.mkdir(parents=True)
    (show / "scale.show.ptx").symlink_to(victim)
    src = tmp_path / "two.cu"
    src.write_text(SOURCE)
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="ptxls.showPtx", arguments=[src.as_uri(), "scale"])
    )
    assert result["ok"], result
    assert victim.read_text() == "precious\n"
    view = show / "scale.show.ptx"
    assert not view.is_symlink() and view.read_text() == result["ptx"]


@WITHOUT_SHOW_DOCUMENT
async def test_show_ptx_folder_symlinked_out_of_the_workspace_is_refused(
    client: LanguageClient, tmp_path, tmp_path_factory
):
    outside = tmp_path_factory.mktemp("outside")
    (tmp_path / ".ptxls").symlink_to(outside, target_is_directory=True)
    src = tmp_path / "two.cu"
    src.write_text(SOURCE)
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="ptxls.showPtx", arguments=[src.as_uri(), "scale"])
    )
    assert result["ok"] and "not written" in result["summary"] and "outside" in result["summary"]
    assert "uri" not in result and list(outside.rglob("*")) == []


@WITHOUT_SHOW_DOCUMENT
async def test_show_ptx_of_a_source_outside_the_workspace_writes_nothing(
    client: LanguageClient, tmp_path_factory
):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    src = elsewhere / "two.cu"
    src.write_text(SOURCE)
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="ptxls.showPtx", arguments=[src.as_uri(), "scale"])
    )
    assert result["ok"] and result.get("untitled") and ".entry" in result["ptx"]
    assert not (elsewhere / ".ptxls").exists()
