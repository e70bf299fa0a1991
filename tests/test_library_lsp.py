"""End-to-end through the real server: the kernel library in .ptx files — completions with
their verified figures, a hover on a library kernel's entry, and the command that opens one."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from ptxls.fewshot.library import KERNELS_DIR
from ptxls.fewshot.measured import load_measured

from lsp_helpers import SHARED_SERVER, open_doc

# "Run GPU test" on the GPU only: without one the answer is "no GPU" at once, after the spec was
# read (a missing spec.json answers "no test spec" first); "auto" would emulate layernorm_rows
pytestmark = [pytest.mark.lsp(options={"test": {"device": "gpu"}}), *SHARED_SERVER]


@pytest.fixture
def client(shared_client: LanguageClient) -> LanguageClient:
    """One server for the module: the tests only ask (each on documents of its own)."""
    return shared_client


HEADER = ".version 8.0\n.target sm_90\n.address_size 64\n\n"
BODY = """.visible .entry mine(.param .u64 p)
{
    ret;
}
"""


async def _complete(client, uri, line, character):
    result = await client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line, character=character),
        )
    )
    return result.items if isinstance(result, types.CompletionList) else result


async def test_library_kernels_are_offered_outside_functions_with_their_figures(
    client: LanguageClient, tmp_path
):
    doc = tmp_path / "new.ptx"
    text = HEADER + "\n" + BODY
    open_doc(client, doc.as_uri(), text)
    items = await _complete(client, doc.as_uri(), 4, 0)  # the blank line before the entry
    lib = {i.label: i for i in items if i.kind == types.CompletionItemKind.Snippet}
    assert {"softmax_rows", "vec_add", "transpose"} <= set(lib)
    soft = lib["softmax_rows"]
    fig = load_measured().get("softmax_rows")
    if fig and fig.vs_nvcc:
        assert soft.detail.startswith("verified row softmax")
        assert f"{fig.vs_nvcc:.2f}× nvcc" in soft.detail and "on H200" in soft.detail
    else:
        assert soft.detail.startswith("row softmax") and "not benchmarked yet" in soft.detail
    # the buffer already has its header: the snippet brings the kernel, not a second header
    assert ".visible .entry softmax_rows(" in soft.insert_text
    assert ".version" not in soft.insert_text
    assert "Family: reduction" in soft.documentation.value


async def test_no_library_items_inside_a_function(client: LanguageClient, tmp_path):
    doc = tmp_path / "inside.ptx"
    open_doc(client, doc.as_uri(), HEADER + BODY)
    items = await _complete(client, doc.as_uri(), 6, 4)  # on the `ret;` line
    assert not [i for i in items if i.kind == types.CompletionItemKind.Snippet]


async def test_hover_on_a_library_entry_shows_its_figures(client: LanguageClient):
    path = KERNELS_DIR / "softmax_rows" / "kernel.ptx"
    text = path.read_text()
    open_doc(client, path.as_uri(), text)
    line = next(i for i, t in enumerate(text.splitlines()) if ".entry softmax_rows" in t)
    col = text.splitlines()[line].index("softmax_rows") + 3
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
            position=types.Position(line=line, character=col),
        )
    )
    assert hover is not None
    value = hover.contents.value
    fig = load_measured().get("softmax_rows")
    if fig and fig.time_ms:
        assert "time (median)" in value and f"{fig.vs_nvcc:.2f}×" in value
    else:
        assert "not benchmarked yet" in value
    assert "fewshot/kernels/softmax_rows" in value


async def test_open_library_kernel_command(client: LanguageClient, tmp_path):
    here = tmp_path / "work.ptx"
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="ptxls.openLibraryKernel", arguments=[here.as_uri(), "transpose"]
        )
    )
    want = (KERNELS_DIR / "transpose" / "kernel.ptx").as_uri()
    assert result["ok"] and result["uri"] == want, result
    for _ in range(100):
        if client.shown_documents:
            break
        await asyncio.sleep(0.02)
    assert client.shown_documents and client.shown_documents[-1].uri == want
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="ptxls.openLibraryKernel", arguments=[here.as_uri(), "nope"]
        )
    )
    assert result["ok"] is False and "no library kernel 'nope'" in result["summary"]


async def test_run_gpu_test_reads_the_spec_json_beside_a_library_kernel(client: LanguageClient):
    """The editor's "Run GPU test" on a library kernel finds its spec.json: on a machine
    without a GPU the answer is "no GPU", never "no test spec"."""
    path = KERNELS_DIR / "layernorm_rows" / "kernel.ptx"
    open_doc(client, path.as_uri(), path.read_text())
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="ptxls.runGpuTest", arguments=[path.as_uri(), "layernorm_rows"]
        )
    )
    assert result["status"] in ("no-gpu", "pass"), result
