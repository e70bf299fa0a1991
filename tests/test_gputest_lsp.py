""" "Run GPU test" end to end through the real server process and a real LSP client (pytest-lsp):
code lenses on kernels, the command with $/progress, hovers that read the cached result (stale
after an edit), and gpu-test diagnostics. The GPU is hidden from the server, so what is tested
here is the no-GPU path and the spec errors, the same on CI and on a GPU machine."""

from __future__ import annotations

import asyncio
import os
import shutil

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_helpers import (
    EXAMPLES,
    open_doc,
    replace_all,
    wait_for_publish,
)

ENV = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}


# test.device gpu: these are the no-GPU path and spec errors (the emulator: test_gputest_lsp_emulated.py)
pytestmark = pytest.mark.lsp(env=ENV, options={"debounceMs": 50, "test": {"device": "gpu"}})


def _copy_examples(tmp_path):
    for name in ("vec_add.ptx", "vec_add.cu"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    return tmp_path / "vec_add.ptx", tmp_path / "vec_add.cu"


async def _lenses(client: LanguageClient, uri: str) -> list[types.CodeLens]:
    return await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )


async def _hover(client: LanguageClient, uri: str, line: int, col: int) -> str:
    h = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri=uri), types.Position(line, col))
    )
    return h.contents.value if h is not None else ""


async def test_code_lens_on_every_entry_and_global(client: LanguageClient, tmp_path):
    ptx, cu = _copy_examples(tmp_path)
    two = (
        ptx.read_text()
        + "\n"
        + ptx.read_text().split(".address_size 64", 1)[1].replace("vec_add", "vec_add2")
    )
    ptx.write_text(two)
    open_doc(client, ptx.as_uri(), two, "ptx")
    open_doc(client, cu.as_uri(), cu.read_text(), "cuda-cpp")
    lenses = await _lenses(client, ptx.as_uri())
    gpu = [lens for lens in lenses if lens.command and lens.command.command == "ptxls.runGpuTest"]
    assert [list(lens.command.arguments) for lens in gpu] == [
        [ptx.as_uri(), "vec_add"],
        [ptx.as_uri(), "vec_add2"],
    ]
    assert all(lens.command.title == "Run GPU test" for lens in gpu)
    lines = two.splitlines()
    for lens in gpu:
        r = lens.range
        assert lines[r.start.line][r.start.character : r.end.character] in ("vec_add", "vec_add2")
        assert ".entry" in lines[r.start.line]
    cu_lenses = [
        lens
        for lens in await _lenses(client, cu.as_uri())
        if lens.command.command == "ptxls.runGpuTest"
    ]
    assert [lens.command.arguments[1] for lens in cu_lenses] == ["vec_add"]
    assert "__global__" in cu.read_text().splitlines()[cu_lenses[0].range.start.line]


async def test_run_without_gpu_hovers_the_reason_then_goes_stale_after_an_edit(
    client: LanguageClient, tmp_path
):
    ptx, _ = _copy_examples(tmp_path)
    uri, text = ptx.as_uri(), ptx.read_text()
    open_doc(client, uri, text, "ptx")
    line = next(i for i, t in enumerate(text.splitlines()) if ".entry vec_add" in t)
    col = text.splitlines()[line].index("vec_add")
    assert "GPU test" not in await _hover(client, uri, line, col)  # nothing ran: no result to show

    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="ptxls.runGpuTest", arguments=[uri, "vec_add"])
    )
    assert result["status"] == "no-gpu" and result["summary"].startswith("no CUDA device (")
    shown = await _hover(client, uri, line, col)
    assert (
        "**GPU test vec_add: NO GPU**" in shown
        and "no CUDA device (" in shown
        and "stale" not in shown
    )
    ends = [
        r
        for reports in client.progress_reports.values()
        for r in reports
        if isinstance(r, types.WorkDoneProgressEnd)
    ]
    assert any(e.message.startswith("no-gpu: no CUDA device") for e in ends)
    lens = next(
        lens for lens in await _lenses(client, uri) if lens.command.command == "ptxls.runGpuTest"
    )
    assert lens.command.title == "Run GPU test (last: no GPU)"

    replace_all(client, uri, text.replace("add.f32", "sub.f32"), version=2)
    await asyncio.sleep(0.2)
    shown = await _hover(client, uri, line, col)
    assert "_stale: this result is for version 1 of the buffer; it is now version 2." in shown
    lens = next(
        lens for lens in await _lenses(client, uri) if lens.command.command == "ptxls.runGpuTest"
    )
    assert lens.command.title == "Run GPU test (last: no GPU, stale)"


async def test_bad_annotation_is_a_gpu_test_diagnostic_on_the_annotation(
    client: LanguageClient, tmp_path
):
    text = (
        (EXAMPLES / "vec_add.ptx")
        .read_text()
        .replace(
            ".visible .entry vec_add(",
            "// @gputest a: in f32[n]; b: in f32[n]; c: out f32[n]; n: sise\n.visible .entry vec_add(",
        )
    )
    path = tmp_path / "annotated.ptx"  # no .cu beside it: the annotation is the whole spec
    path.write_text(text)
    uri = path.as_uri()
    open_doc(client, uri, text, "ptx")
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="ptxls.runGpuTest", arguments=[uri, "vec_add"])
    )
    assert result["status"] == "spec-error"

    # The command publishes before it answers, so the publish may already be here.
    def has_gpu_test(p):
        return p.uri == uri and any(d.source == "gpu-test" for d in p.diagnostics)

    pub = next((p for p in client.publishes if has_gpu_test(p)), None)
    if pub is None:
        pub = await wait_for_publish(client, uri, has_gpu_test)
    [d] = [d for d in pub.diagnostics if d.source == "gpu-test"]
    ann_line = text.splitlines().index(
        "// @gputest a: in f32[n]; b: in f32[n]; c: out f32[n]; n: sise"
    )
    assert d.range.start.line == ann_line and d.severity == types.DiagnosticSeverity.Error
    assert text.splitlines()[ann_line][d.range.start.character :].startswith("n: sise")
    assert "cannot read 'n: sise'" in d.message


async def test_bad_command_arguments_answer_without_breaking_the_server(
    client: LanguageClient, tmp_path
):
    r = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="ptxls.runGpuTest", arguments=["file:///nowhere.ptx"])
    )
    assert r["ok"] is False and r["status"] == "bad-arguments"
    r = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="ptxls.runGpuTest", arguments=["file:///nowhere.ptx", "k"]
        )
    )
    assert r["status"] == "not-open"
    ptx, _ = _copy_examples(tmp_path)
    open_doc(client, ptx.as_uri(), ptx.read_text(), "ptx")
    assert await _lenses(client, ptx.as_uri())  # still serving


pytestmark = [pytestmark, pytest.mark.filterwarnings("ignore::DeprecationWarning")]  # both marks
