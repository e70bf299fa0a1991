""" "Run GPU test" on the CPU emulator, through the real server process and a real LSP client
(pytest-lsp): with ``ptxls.test.device`` = "cpu" the command runs the kernel's test on the
emulator; the hover and the lens say it was emulated, never GPU-verified, and show no time; what
the emulator saw while running becomes a diagnostic on the PTX line that did it, labelled the
emulator's: an out-of-bounds shared-memory read (it fails the test) as an Error, a read of an
output before the kernel wrote it (a warning: the test passes, as it does on a GPU) as a Warning.
The GPU is hidden, so this runs the same on CI and on a GPU machine."""

from __future__ import annotations

import os
import shutil

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_helpers import EXAMPLES, open_doc

ENV = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
PLANTED = EXAMPLES.parent / "tests" / "data" / "sanitizer" / "planted" / "shared_oob.ptx"
# y[i] = max(y[i], x[i]) with y a pure output: reads y before writing it
READS_ITS_OUTPUT = PLANTED.with_name("uninit_read.ptx")
EMULATOR = "ptxls emulator"  # the source the server gives the emulator's findings

pytestmark = [
    pytest.mark.lsp(env=ENV, options={"debounceMs": 50, "test": {"device": "cpu"}}),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]


async def _run(client: LanguageClient, uri: str, kernel: str) -> dict:
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="ptxls.runGpuTest", arguments=[uri, kernel])
    )


async def _hover(client: LanguageClient, uri: str, line: int, col: int) -> str:
    h = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri=uri), types.Position(line, col))
    )
    return h.contents.value if h is not None else ""


async def test_the_setting_runs_the_test_on_the_emulator_and_the_hover_says_so(
    client: LanguageClient, tmp_path
):
    for name in ("vec_add.ptx", "vec_add.cu"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    ptx = tmp_path / "vec_add.ptx"
    text = ptx.read_text().replace(  # small sizes: CI has two cores
        ".visible .entry vec_add(", "// @gputest sizes: 1 255 3007\n.visible .entry vec_add(", 1
    )
    ptx.write_text(text)
    uri = ptx.as_uri()
    open_doc(client, uri, text, "ptx")
    result = await _run(client, uri, "vec_add")
    assert result["status"] == "pass", result
    line = next(i for i, t in enumerate(text.splitlines()) if ".entry vec_add" in t)
    shown = await _hover(client, uri, line, text.splitlines()[line].index("vec_add"))
    assert "Emulator test vec_add (emulated (CPU), not GPU-verified): PASS" in shown, shown
    assert "3/3 cases pass" in shown and "no time measured" in shown
    # the test's own part of the hover (other providers, e.g. the library's, may add theirs)
    ours = shown[shown.index("**Emulator test") :].split("\n---", 1)[0]
    assert "time vs reference" not in ours and "GB/s" not in ours and "µs" not in ours, ours
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    titles = [lens.command.title for lens in lenses if lens.command.command == "ptxls.runGpuTest"]
    assert titles == ["Run GPU test (last: passed on the CPU emulator)"]


async def test_an_emulator_finding_is_a_diagnostic_on_its_ptx_line(
    client: LanguageClient, tmp_path
):
    ptx = tmp_path / "shared_oob.ptx"
    shutil.copy(PLANTED, ptx)
    text = ptx.read_text()
    uri = ptx.as_uri()
    open_doc(client, uri, text, "ptx")
    result = await _run(client, uri, "stencil_no_halo")
    assert result["status"] == "fail", result
    lines = text.splitlines()
    oob = next(i for i, t in enumerate(lines) if "tile[256] for thread 255" in t)
    assert oob == 47
    pub = [p for p in client.publishes if p.uri == uri][-1]  # published before it answered
    [d] = [d for d in pub.diagnostics if d.range.start.line == oob]  # one per kind and line
    assert d.source == EMULATOR and d.severity == types.DiagnosticSeverity.Error
    assert "emulator" in d.message and "out-of-bounds" in d.message, d.message
    assert "thread" in d.message, d.message  # which thread did it


async def test_a_read_of_an_unwritten_output_passes_with_one_warning_on_its_line(
    client: LanguageClient, tmp_path
):
    ptx = tmp_path / "uninit_read.ptx"
    shutil.copy(READS_ITS_OUTPUT, ptx)
    text = ptx.read_text()
    uri = ptx.as_uri()
    open_doc(client, uri, text, "ptx")
    result = await _run(client, uri, "max_into_out")
    assert result["status"] == "pass", result  # a GPU reads the poison too: not a failure
    lines = text.splitlines()
    read = next(i for i, t in enumerate(lines) if "y[i] before anything wrote it" in t)
    pub = [p for p in client.publishes if p.uri == uri][-1]  # published before it answered
    ours = [d for d in pub.diagnostics if d.source == EMULATOR]
    assert [(d.range.start.line, d.severity) for d in ours] == [
        (read, types.DiagnosticSeverity.Warning)
    ], ours
    [d] = ours
    assert d.code == "uninitialized-global", d
    assert "emulator" in d.message and "not a failure" in d.message, d.message
    assert "GPU" not in d.source
    # a passed test puts nothing else of its own in the buffer: no Error from the test
    assert not [
        d
        for d in pub.diagnostics
        if d.source in ("gpu-test", EMULATOR) and d.severity == types.DiagnosticSeverity.Error
    ], pub.diagnostics
