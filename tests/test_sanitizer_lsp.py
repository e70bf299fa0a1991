""" "Run with sanitizer" through the real server process and a real LSP client (pytest-lsp): the
code lens beside "Run GPU test" on every .entry and every CUDA __global__ kernel, the
ptxls.runSanitizer command without a GPU (its reason in the result, the lens and the hover) and
with bad arguments, the ptxls.sanitizer.tools / ptxls.sanitizer.path settings it reads; and the
diagnostics the feature makes of a result, from the H200's real racecheck log of the planted
kernel. The GPU runs are tests/gpu/test_sanitizer_gpu.py and test_sanitizer_cuda_gpu.py."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_helpers import EXAMPLES, FRESH_SERVER, SHARED_SERVER, open_doc

DATA = Path(__file__).parent / "data" / "sanitizer"
PLANTED = DATA / "planted"


def _fake_sanitizer() -> str:
    """A compute-sanitizer that only answers --version: enough to get past discovery to the
    GPU check, which answers first and the same on CI and on a GPU machine (the GPU is hidden)."""
    path = Path(tempfile.mkdtemp(prefix="ptxls-test-")) / "compute-sanitizer"
    path.write_text("#!/bin/sh\necho 'Version 2099.1.0.0'\n")
    path.chmod(0o755)
    return str(path)


ENV = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "PTXLS_COMPUTE_SANITIZER": _fake_sanitizer()}
# the tests that only ask share one server (`shared_client`); those with settings of their own
# start one each (`client`, FRESH_SERVER)
pytestmark = [
    pytest.mark.lsp(env=ENV, options={"debounceMs": 50}),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    *SHARED_SERVER,
]


async def _lenses(client: LanguageClient, uri: str) -> list[types.CodeLens]:
    return await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )


def _by_command(lenses, command: str) -> list[types.CodeLens]:
    return [lens for lens in lenses if lens.command and lens.command.command == command]


async def test_lens_beside_run_gpu_test_on_every_entry(shared_client: LanguageClient, tmp_path):
    path = tmp_path / "missing_barrier.ptx"
    text = (PLANTED / "missing_barrier.ptx").read_text()
    path.write_text(text)
    open_doc(shared_client, path.as_uri(), text, "ptx")
    lenses = await _lenses(shared_client, path.as_uri())
    sanitize = _by_command(lenses, "ptxls.runSanitizer")
    gpu = _by_command(lenses, "ptxls.runGpuTest")
    assert [list(lens.command.arguments) for lens in sanitize] == [
        [path.as_uri(), "swap_warps_no_barrier"],
        [path.as_uri(), "swap_warps"],
    ]
    assert all(lens.command.title == "Run with sanitizer" for lens in sanitize)
    assert [lens.range for lens in sanitize] == [lens.range for lens in gpu]  # side by side
    # a CUDA buffer: on every __global__ kernel, beside its "Run GPU test" (test_cu_... below)
    text_py = "import triton\n\n@triton.jit\ndef k(x):\n    pass\n"
    py = tmp_path / "k.py"
    py.write_text(text_py)
    open_doc(shared_client, py.as_uri(), text_py, "python")
    assert not _by_command(await _lenses(shared_client, py.as_uri()), "ptxls.runSanitizer")


async def test_run_without_gpu_says_why_in_the_result_the_lens_and_the_hover(
    shared_client: LanguageClient, tmp_path
):
    path = tmp_path / "vec_add.ptx"
    text = (EXAMPLES / "vec_add.ptx").read_text()
    path.write_text(text)
    uri = path.as_uri()
    open_doc(shared_client, uri, text, "ptx")
    result = await shared_client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="ptxls.runSanitizer", arguments=[uri, "vec_add"])
    )
    assert result["status"] == "no-gpu" and result["summary"].startswith("no CUDA device (")
    assert result["ok"] is False and result["findings"] == []
    [lens] = _by_command(await _lenses(shared_client, uri), "ptxls.runSanitizer")
    assert lens.command.title == "Run with sanitizer (last: no GPU)"
    line = next(i for i, t in enumerate(text.splitlines()) if ".entry vec_add" in t)
    hover = await shared_client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri=uri), types.Position(line, 20))
    )
    assert "compute-sanitizer vec_add: no CUDA device (" in hover.contents.value


async def test_bad_arguments_answer_without_breaking_the_server(
    shared_client: LanguageClient, tmp_path
):
    async def run(*args):
        return await shared_client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="ptxls.runSanitizer", arguments=list(args))
        )

    assert (await run("file:///nowhere.ptx"))["status"] == "bad-arguments"
    assert (await run("file:///nowhere.ptx", "k"))["status"] == "not-open"
    r = await run("file:///nowhere.ptx", "k", ["memcheck", "leakcheck"])
    assert r["status"] == "bad-arguments" and "leakcheck" in r["summary"]
    path = tmp_path / "vec_add.ptx"
    path.write_text((EXAMPLES / "vec_add.ptx").read_text())
    open_doc(shared_client, path.as_uri(), path.read_text(), "ptx")
    assert _by_command(await _lenses(shared_client, path.as_uri()), "ptxls.runSanitizer")


def test_a_race_is_a_diagnostic_on_both_of_its_lines():
    """What the feature publishes for the H200's racecheck result of the planted kernel."""
    from ptxls.frontend.sanitizer_report import parse_sanitizer_output
    from ptxls.gputest.sanitize import SanitizeResult, ToolRun, findings_of
    from ptxls.server.features.sanitizer_feature import problems

    ptx = (PLANTED / "missing_barrier.ptx").read_text()
    log = (DATA / "h200" / "swap_warps_no_barrier-racecheck.log").read_text()
    report = parse_sanitizer_output(log, "racecheck")
    found = findings_of(report, "swap_warps_no_barrier", "missing_barrier.ptx", ptx)
    result = SanitizeResult(
        "swap_warps_no_barrier", "findings", runs=[ToolRun("racecheck", None, report, found)]
    )
    store, load = problems(result, ptx)
    lines = ptx.splitlines()
    assert (store.line, load.line) == (41, 46)  # 0-based: lines 42 and 47
    assert lines[41][store.col : store.end_col] == "st.shared.f32       [%r7], %f1;"
    assert lines[46][load.col : load.end_col] == "ld.shared.f32       %f2, [%r10];"
    assert store.source == load.source == "compute-sanitizer" and store.code == "race"
    assert store.severity.value == "error"
    assert "race between the write on line 42 and the read on line 47" in store.message
    assert load.message.endswith("(the other side: line 42)")


CU = PLANTED / "planted_cuda.cu"


async def test_cu_kernels_get_the_lens_beside_run_gpu_test(shared_client: LanguageClient, tmp_path):
    path = tmp_path / "planted_cuda.cu"
    text = CU.read_text()
    path.write_text(text)
    open_doc(shared_client, path.as_uri(), text, "cuda-cpp")
    lenses = await _lenses(shared_client, path.as_uri())
    sanitize = _by_command(lenses, "ptxls.runSanitizer")
    gpu = _by_command(lenses, "ptxls.runGpuTest")
    assert [lens.command.arguments[1] for lens in sanitize] == [
        "reverse_tile_oob", "reverse_tile", "swap_warps_no_sync",
    ]  # fmt: skip
    assert [lens.range for lens in sanitize] == [lens.range for lens in gpu]
    line = next(i for i, t in enumerate(text.splitlines()) if "void reverse_tile_oob(" in t)
    assert sanitize[0].range.start.line == line


async def test_cu_run_without_gpu_says_why(shared_client: LanguageClient, tmp_path):
    path = tmp_path / "planted_cuda.cu"
    path.write_text(CU.read_text())
    uri = path.as_uri()
    open_doc(shared_client, uri, path.read_text(), "cuda-cpp")
    result = await shared_client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="ptxls.runSanitizer", arguments=[uri, "reverse_tile"])
    )
    assert result["status"] == "no-gpu" and result["summary"].startswith("no CUDA device (")
    assert result["tools"] == ["memcheck", "racecheck"]  # the setting's default
    [lens] = [
        lens
        for lens in _by_command(await _lenses(shared_client, uri), "ptxls.runSanitizer")
        if lens.command.arguments[1] == "reverse_tile"
    ]
    assert lens.command.title == "Run with sanitizer (last: no GPU)"


@pytest.mark.lsp(options={"debounceMs": 50, "sanitizer": {"tools": ["initcheck", "RaceCheck"]}})
@FRESH_SERVER  # settings of its own: a server of its own
async def test_the_tools_setting_is_what_a_click_runs(client: LanguageClient, tmp_path):
    path = tmp_path / "vec_add.ptx"
    path.write_text((EXAMPLES / "vec_add.ptx").read_text())
    open_doc(client, path.as_uri(), path.read_text(), "ptx")

    async def run(*args):
        return await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="ptxls.runSanitizer", arguments=list(args))
        )

    assert (await run(path.as_uri(), "vec_add"))["tools"] == ["initcheck", "racecheck"]
    assert (await run(path.as_uri(), "vec_add", ["synccheck"]))["tools"] == ["synccheck"]


@pytest.mark.lsp(options={"debounceMs": 50, "sanitizer": {"path": "/no/such/compute-sanitizer"}})
@FRESH_SERVER  # settings of its own: a server of its own
async def test_the_path_setting_names_the_binary(client: LanguageClient, tmp_path):
    """The setting wins over PTXLS_COMPUTE_SANITIZER (set for this module), and a configured
    binary that is missing is said, not replaced by another. initializationOptions are the
    person's own settings, honoured without trust; a workspace's are not (the test below)."""
    path = tmp_path / "planted_cuda.cu"
    path.write_text(CU.read_text())
    open_doc(client, path.as_uri(), path.read_text(), "cuda-cpp")
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="ptxls.runSanitizer", arguments=[path.as_uri(), "reverse_tile"]
        )
    )
    assert result["status"] == "no-sanitizer"
    assert (
        "the compute-sanitizer given '/no/such/compute-sanitizer' does not exist"
        in (result["summary"])
    )


@FRESH_SERVER  # settings of its own: a server of its own
async def test_an_untrusted_workspace_cannot_choose_the_sanitizer(client: LanguageClient, tmp_path):
    """ptxls.sanitizer.path chooses a program to run: from the workspace's own configuration
    (didChangeConfiguration) it is ignored, and said, unless the workspace is trusted."""
    planted = tmp_path / "repo-tools" / "compute-sanitizer"
    planted.parent.mkdir()
    planted.write_text(f"#!/bin/sh\ntouch {tmp_path / 'PLANTED-RAN'}\necho 'Version 1.0'\n")
    planted.chmod(0o755)
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"ptxls": {"debounceMs": 50, "sanitizer": {"path": str(planted)}}}
        )
    )
    path = tmp_path / "vec_add.ptx"
    path.write_text((EXAMPLES / "vec_add.ptx").read_text())
    open_doc(client, path.as_uri(), path.read_text(), "ptx")
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="ptxls.runSanitizer", arguments=[path.as_uri(), "vec_add"]
        )
    )
    assert result["status"] == "no-gpu"  # the module's PTXLS_COMPUTE_SANITIZER, not the planted
    assert not (tmp_path / "PLANTED-RAN").exists()
    said = "\n".join(m.message for m in client.messages)
    assert "ignored ptxls.sanitizer.path" in said and "not trusted" in said, said
