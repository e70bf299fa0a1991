"""The lowering code actions through the real server process (pytest-lsp) against a scripted
endpoint: plan first (the plan opens as a document, "Lower with this plan" lowers with the
edited plan), results that never say "passed" for a test that did not run, the best attempt
named when nothing passes, and a source outside the workspace shown untitled, not written."""

from __future__ import annotations

import ast
import asyncio
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from conftest import EXAMPLES, open_doc
from scripted_llm import BROKEN_VEC_ADD, GOOD_VEC_ADD, ScriptedLLM, Step, fenced

LLM = ScriptedLLM().start()
ENV = {
    **os.environ,
    "OPENAI_BASE_URL": LLM.base_url,
    "PTXLS_MODEL": "scripted-model",
    "PTXLS_LLM_RETRY_BACKOFF": "0.01",
}
ENV.pop("OPENAI_API_KEY", None)
# where the server keeps files of sources outside every workspace folder (not the real home)
ENV["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="ptxls-user-cache-")


@pytest.fixture(scope="module", autouse=True)
def _stop_llm():
    yield
    LLM.stop()


def _init(root: Path, llm: dict) -> types.InitializeParams:
    return types.InitializeParams(
        capabilities=types.ClientCapabilities(
            workspace=types.WorkspaceClientCapabilities(
                configuration=False,
                apply_edit=True,
                code_lens=types.CodeLensWorkspaceClientCapabilities(refresh_support=False),
                workspace_edit=types.WorkspaceEditClientCapabilities(
                    document_changes=True, resource_operations=[types.ResourceOperationKind.Create]
                ),
            ),
            window=types.WindowClientCapabilities(
                work_done_progress=True,
                show_document=types.ShowDocumentClientCapabilities(support=True),
            ),
        ),
        root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="ws")],
        # test.device gpu: without a GPU the results stay untested (the emulator's case:
        # tests/test_lowering_emulated.py)
        initialization_options={"ptxls": {"llm": llm, "test": {"device": "gpu"}}},
    )


def _record_edits(client: LanguageClient) -> list:
    """Apply file edits on disk like an editor; untitled documents are only remembered."""
    applied: list = []

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def on_apply(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        applied.append(params)
        for change in params.edit.document_changes or []:
            uri = change.uri if isinstance(change, types.CreateFile) else change.text_document.uri
            if uri.startswith("untitled:"):
                continue
            path = Path(uri.removeprefix("file://"))
            if isinstance(change, types.CreateFile):
                path.write_text("")
            else:
                path.write_text(change.edits[0].new_text)
        return types.ApplyWorkspaceEditResult(applied=True)

    return applied


def _editor(client: LanguageClient) -> None:
    client.applied = _record_edits(client)


# options: the ptxls.llm section (_init puts it under "llm")
pytestmark = pytest.mark.lsp(
    env=ENV, init=_init, on_start=_editor, options={"candidates": 1, "maxRounds": 5}
)


async def _actions(client, uri: str, line: int) -> dict[str, types.CodeAction]:
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
            inner = ast.literal_eval(a.command)  # see test_lowering_lsp._actions
            a = types.CodeAction(title=a.title, command=types.Command(**inner))
        if isinstance(a, types.CodeAction):
            out[a.title] = a
    return out


async def _execute(client, command: types.Command):
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command.command, arguments=command.arguments)
    )


async def _lenses(client, uri: str) -> list[types.CodeLens]:
    return await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )


def _copy_vec_add(root: Path) -> Path:
    cu = root / "vec_add.cu"
    shutil.copy(EXAMPLES / "vec_add.cu", cu)
    return cu


@pytest.mark.lsp(options={"candidates": 1, "maxRounds": 3, "strategy": "plan"})
async def test_plan_opens_as_a_document_then_lowers_with_the_edited_plan(
    client: LanguageClient, tmp_path
):
    cu = _copy_vec_add(tmp_path)
    open_doc(client, cu.as_uri(), cu.read_text(), language="cuda")
    actions = await _actions(client, cu.as_uri(), 3)
    action = actions["Plan, then lower to PTX with LLM (vec_add)"]
    LLM.set_script([Step("1. index i = ctaid.x*ntid.x+tid.x\n2. if i<n: c[i]=a[i]+b[i]")])
    before = len(LLM.chat_requests)
    result = await _execute(client, action.command)
    assert result["ok"] and result["status"] == "plan", result
    plan_file = tmp_path / ".ptxls" / "plans" / "vec_add-vec_add.plan.md"
    assert result["uri"] == plan_file.as_uri() and plan_file.exists()
    assert not (tmp_path / "vec_add.ptx").exists()  # no PTX before the person accepts
    assert len(LLM.chat_requests) == before + 1
    for _ in range(100):
        if client.shown_documents:
            break
        await asyncio.sleep(0.02)
    assert [d.uri for d in client.shown_documents] == [plan_file.as_uri()]

    # the person edits the plan (in the open document) and accepts it from its code lens
    edited = plan_file.read_text().replace("2. if i<n", "2. EDITED if i<n")
    open_doc(client, plan_file.as_uri(), edited, language="markdown")
    lenses = await _lenses(client, plan_file.as_uri())
    assert [lens.command.title for lens in lenses] == ["Lower with this plan"]
    # the kernel in the source has the same lens
    src_lenses = await _lenses(client, cu.as_uri())
    assert any(lens.command.title.startswith("Lower with this plan") for lens in src_lenses)
    LLM.set_script([Step(fenced(GOOD_VEC_ADD))])
    result = await _execute(client, lenses[0].command)
    assert result["ok"], result
    sent = LLM.chat_requests[-1].body["messages"][-1]["content"]
    assert "2. EDITED if i<n" in sent
    assert (tmp_path / "vec_add.ptx").exists()


async def test_untested_result_never_says_passed(client: LanguageClient, tmp_path):
    from ptxls.toolchain.gpu_probe import probe_gpu

    if probe_gpu().available:
        pytest.skip("a GPU is present: the result is GPU-tested here")
    cu = _copy_vec_add(tmp_path)
    open_doc(client, cu.as_uri(), cu.read_text(), language="cuda")
    actions = await _actions(client, cu.as_uri(), 3)
    LLM.set_script([Step(fenced(GOOD_VEC_ADD))])
    result = await _execute(client, actions["Lower to PTX with LLM (vec_add)"].command)
    assert result["ok"] and result["status"] == "compiled" and result["gpuTested"] is False
    assert "passed" not in result["summary"] and "NOT GPU-tested" in result["summary"]
    ends = [
        r.message or ""
        for rs in client.progress_reports.values()
        for r in rs
        if isinstance(r, types.WorkDoneProgressEnd)
    ]
    assert ends and not any("passed" in m for m in ends)
    header = (tmp_path / "vec_add.ptx").read_text().split(".version")[0]
    assert "passed" not in header and "not GPU-tested" in header


async def test_nothing_passed_names_the_attempt_and_why(client: LanguageClient, tmp_path):
    cu = _copy_vec_add(tmp_path)
    open_doc(client, cu.as_uri(), cu.read_text(), language="cuda")
    actions = await _actions(client, cu.as_uri(), 3)
    LLM.set_script([Step(fenced(BROKEN_VEC_ADD))] * 5)
    result = await _execute(client, actions["Lower to PTX with LLM (vec_add)"].command)
    assert not result["ok"] and result["status"] == "failed"
    attempt = tmp_path / ".ptxls" / "attempts" / "vec_add-vec_add.attempt.ptx"
    assert result["attempt"] == attempt.as_uri() and attempt.exists()
    assert "same ptxas error every round" in result["summary"]
    assert ".ptxls/attempts/vec_add-vec_add.attempt.ptx" in result["summary"]
    assert any("attempt" in m.message for m in client.messages)
    assert not (tmp_path / "vec_add.ptx").exists()


async def test_source_outside_the_workspace_is_shown_untitled_not_written(
    client: LanguageClient, tmp_path_factory
):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    cu = _copy_vec_add(elsewhere)
    open_doc(client, cu.as_uri(), cu.read_text(), language="cuda")
    actions = await _actions(client, cu.as_uri(), 3)
    LLM.set_script([Step(fenced(GOOD_VEC_ADD))])
    result = await _execute(client, actions["Lower to PTX with LLM (vec_add)"].command)
    assert result["ok"] and result["untitled"] and result["uri"] == "untitled:vec_add.ptx"
    assert ".visible .entry vec_add(" in result["ptx"]
    assert sorted(p.name for p in elsewhere.iterdir()) == ["vec_add.cu"]  # nothing written there
    creates = [
        c
        for e in client.applied
        for c in e.edit.document_changes
        if isinstance(c, types.CreateFile)
    ]
    assert creates and creates[-1].uri == "untitled:vec_add.ptx"
