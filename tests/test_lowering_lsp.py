"""End to end through the real server process and a real LSP client (pytest-lsp): the code
actions on examples/vec_add.cu produce a verified vec_add.ptx with the nvcc backend offline and
with the LLM backend against the scripted server, via workspace/applyEdit."""

from __future__ import annotations

import ast
import os
import shutil
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from ptxls.lowering.provenance import strip_header, untouched_since_generated

from conftest import EXAMPLES, open_doc
from scripted_llm import BROKEN_VEC_ADD, GOOD_VEC_ADD, ScriptedLLM, Step, fenced

SECRET = "sk-lsp-SECRET-abcdef0123456789"
LLM = ScriptedLLM().start()  # module-wide: the server process is told its URL at start
ENV = {
    **os.environ,
    "OPENAI_BASE_URL": LLM.base_url,
    "OPENAI_API_KEY": SECRET,
    "PTXLS_MODEL": "scripted-model",
    "PTXLS_LLM_RETRY_BACKOFF": "0.01",
}
NO_LLM_ENV = {
    k: v
    for k, v in os.environ.items()
    if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "PTXLS_MODEL")
}


@pytest.fixture(scope="module", autouse=True)
def _stop_llm():
    yield
    LLM.stop()


def _apply_edits_on_disk(client: LanguageClient) -> list:
    """What an editor does with workspace/applyEdit, done on the files (and remembered)."""
    applied: list = []

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def on_apply(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        applied.append(params)
        for change in params.edit.document_changes or []:
            if isinstance(change, types.CreateFile):
                path = Path(change.uri.removeprefix("file://"))
                if path.exists():
                    return types.ApplyWorkspaceEditResult(
                        applied=False, failure_reason=f"{path} exists"
                    )
                path.write_text("")
            elif isinstance(change, types.TextDocumentEdit):
                path = Path(change.text_document.uri.removeprefix("file://"))
                text = path.read_text()
                for edit in change.edits:
                    lines = text.split("\n")
                    start = (
                        sum(len(ln) + 1 for ln in lines[: edit.range.start.line])
                        + edit.range.start.character
                    )
                    end = (
                        sum(len(ln) + 1 for ln in lines[: edit.range.end.line])
                        + edit.range.end.character
                    )
                    text = text[:start] + edit.new_text + text[end:]
                path.write_text(text)
        return types.ApplyWorkspaceEditResult(applied=True)

    return applied


def _init(root: Path, options=None) -> types.InitializeParams:
    return types.InitializeParams(
        capabilities=types.ClientCapabilities(
            workspace=types.WorkspaceClientCapabilities(
                configuration=False,
                apply_edit=True,
                workspace_edit=types.WorkspaceEditClientCapabilities(
                    document_changes=True, resource_operations=[types.ResourceOperationKind.Create]
                ),
            ),
            window=types.WindowClientCapabilities(work_done_progress=True),
        ),
        root_uri=root.as_uri(),
        # test.device gpu: no emulator fall-back here (tests/test_lowering_emulated.py has it)
        initialization_options={
            "ptxls": {"llm": {"candidates": 1, "maxRounds": 3}, "test": {"device": "gpu"}}
        },
    )


def _editor(client: LanguageClient) -> None:
    client.applied = _apply_edits_on_disk(client)


pytestmark = pytest.mark.lsp(env=ENV, init=_init, on_start=_editor)


async def _actions(client: LanguageClient, uri: str, line: int) -> dict[str, types.CodeAction]:
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=types.Position(line, 4), end=types.Position(line, 4)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    out = {}
    for a in actions or []:
        if isinstance(a, types.Command) and a.command.startswith("{"):
            # lsprotocol's client-side hook structures any CodeAction that carries a
            # `command` as a Command, stringifying the nested object; undo that here
            inner = ast.literal_eval(a.command)
            a = types.CodeAction(title=a.title, command=types.Command(**inner))
        if isinstance(a, types.CodeAction):
            out[a.title] = a
    return out


async def _run(client: LanguageClient, action: types.CodeAction):
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command=action.command.command, arguments=action.command.arguments
        )
    )


async def test_vec_add_code_actions_nvcc_then_llm(client: LanguageClient, tmp_path):
    cu = tmp_path / "vec_add.cu"
    shutil.copy(EXAMPLES / "vec_add.cu", cu)
    open_doc(client, cu.as_uri(), cu.read_text(), language="cuda")
    actions = await _actions(client, cu.as_uri(), 3)
    assert set(actions) >= {
        "Lower to PTX with LLM (vec_add)",
        "Lower to PTX with nvcc (reference) (vec_add)",
    }

    # nvcc, offline
    result = await _run(client, actions["Lower to PTX with nvcc (reference) (vec_add)"])
    assert result["ok"], result
    out = tmp_path / "vec_add.ptx"
    assert result["uri"] == out.as_uri()
    text = out.read_text()
    assert (
        ".visible .entry vec_add(" in text
        and "backend: nvcc" in text
        and untouched_since_generated(text)
    )
    create = client.applied[-1].edit.document_changes[0]
    assert isinstance(create, types.CreateFile)
    # progress: begin ... end, with the command's steps in between
    reports = [r for token_reports in client.progress_reports.values() for r in token_reports]
    assert any(isinstance(r, types.WorkDoneProgressBegin) and r.cancellable for r in reports)
    assert any(isinstance(r, types.WorkDoneProgressEnd) for r in reports)

    # LLM against the scripted server: broken, then fixed. vec_add.ptx is ours and untouched,
    # so it is replaced (a whole-file edit, not a new file).
    LLM.set_script([Step(fenced(BROKEN_VEC_ADD)), Step(fenced(GOOD_VEC_ADD))])
    result = await _run(client, actions["Lower to PTX with LLM (vec_add)"])
    assert result["ok"], result
    text = out.read_text()
    assert "backend: llm, model: scripted-model" in text
    assert "// rounds: 2" in text and "not GPU-tested" in text
    assert strip_header(text).strip() == GOOD_VEC_ADD.strip()
    assert "Arguments mismatch" in LLM.chat_requests[-1].body["messages"][-1]["content"]
    transcript = Path(result["transcript"])
    assert transcript.parent == tmp_path / ".ptxls" / "transcripts"
    assert SECRET not in transcript.read_text()
    assert any(
        "candidate 1, round 1: ptxas: 1 error" in getattr(r, "message", "") or ""
        for rs in client.progress_reports.values()
        for r in rs
    )


async def test_hand_edited_result_is_not_overwritten(client: LanguageClient, tmp_path):
    cu = tmp_path / "vec_add.cu"
    shutil.copy(EXAMPLES / "vec_add.cu", cu)
    (tmp_path / "vec_add.ptx").write_text("// my own tuned version\n" + GOOD_VEC_ADD)
    open_doc(client, cu.as_uri(), cu.read_text(), language="cuda")
    actions = await _actions(client, cu.as_uri(), 3)
    result = await _run(client, actions["Lower to PTX with nvcc (reference) (vec_add)"])
    assert result["ok"], result
    assert result["uri"].endswith("vec_add.nvcc.ptx")
    assert (tmp_path / "vec_add.ptx").read_text().startswith("// my own tuned version")
    assert ".entry vec_add(" in (tmp_path / "vec_add.nvcc.ptx").read_text()


async def test_other_code_actions_are_offered_where_they_apply(client: LanguageClient, tmp_path):
    ptx = tmp_path / "vec_add.ptx"
    ptx.write_text(GOOD_VEC_ADD)
    open_doc(client, ptx.as_uri(), GOOD_VEC_ADD)
    assert "Optimize with LLM (vec_add)" in await _actions(client, ptx.as_uri(), 15)
    py = tmp_path / "k.py"
    py.write_text(
        "import triton\n\n@triton.jit\ndef add_kernel(x_ptr, n):\n    pid = tl.program_id(0)\n"
    )
    open_doc(client, py.as_uri(), py.read_text(), language="python")
    assert "Lower Triton kernel to PTX with LLM (add_kernel)" in await _actions(
        client, py.as_uri(), 4
    )
    req = tmp_path / "req.cu"
    req.write_text("// @ptx: relu(float* x, int n): x[i] = max(x[i], 0)\nint unrelated;\n")
    open_doc(client, req.as_uri(), req.read_text(), language="cuda")
    assert list(await _actions(client, req.as_uri(), 0)) == ["Generate PTX with LLM"]
    assert await _actions(client, req.as_uri(), 1) == {}


@pytest.mark.lsp(env=NO_LLM_ENV)
async def test_without_endpoint_llm_action_explains_and_nvcc_still_works(
    client: LanguageClient, tmp_path
):
    cu = tmp_path / "vec_add.cu"
    shutil.copy(EXAMPLES / "vec_add.cu", cu)
    open_doc(client, cu.as_uri(), cu.read_text(), language="cuda")
    actions = await _actions(client, cu.as_uri(), 3)
    result = await _run(client, actions["Lower to PTX with LLM (vec_add)"])
    assert (
        not result["ok"]
        and "OPENAI_BASE_URL" in result["summary"]
        and "PTXLS_MODEL" in result["summary"]
    )
    assert any("OPENAI_BASE_URL" in m.message for m in client.messages)
    assert not (tmp_path / "vec_add.ptx").exists()
    result = await _run(client, actions["Lower to PTX with nvcc (reference) (vec_add)"])
    assert result["ok"] and (tmp_path / "vec_add.ptx").exists()
