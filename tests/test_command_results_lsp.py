"""Every command ends visibly, however it was started (issue 21): through the real server
process, a client that does not present command results itself (Neovim) is asked to open the
file a code action produced (window/showDocument) and shown its summary (window/showMessage);
a client that says it presents them (VS Code's extension: opensCommandResults) gets neither
twice. The nvcc lowering from the code action, as the light bulb runs it, and an LLM lowering
with no endpoint configured (a failure that says why and what to do)."""

from __future__ import annotations

import ast
import asyncio
import os
import shutil
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from conftest import EXAMPLES, open_doc

ENV = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PTXLS_MODEL"))}


def _init(presents: bool):
    def init(root: Path, options) -> types.InitializeParams:
        return types.InitializeParams(
            capabilities=types.ClientCapabilities(
                workspace=types.WorkspaceClientCapabilities(
                    configuration=False,
                    apply_edit=True,
                    workspace_edit=types.WorkspaceEditClientCapabilities(
                        document_changes=True,
                        resource_operations=[types.ResourceOperationKind.Create],
                    ),
                ),
                window=types.WindowClientCapabilities(
                    work_done_progress=True,
                    show_document=types.ShowDocumentClientCapabilities(support=True),
                ),
            ),
            root_uri=root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="ws")],
            initialization_options={"client": {"opensCommandResults": presents}, "ptxls": {}},
        )

    return init


def _editor(client: LanguageClient) -> None:
    """Apply file edits on disk, as an editor does."""

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def on_apply(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        for change in params.edit.document_changes or []:
            if isinstance(change, types.CreateFile):
                Path(change.uri.removeprefix("file://")).write_text("")
            else:
                path = Path(change.text_document.uri.removeprefix("file://"))
                path.write_text(change.edits[0].new_text)
        return types.ApplyWorkspaceEditResult(applied=True)


async def _light_bulb(client: LanguageClient, tmp_path: Path, title_start: str):
    """The code action a person picks in vec_add.cu, run the way an editor runs it."""
    cu = tmp_path / "vec_add.cu"
    shutil.copy(EXAMPLES / "vec_add.cu", cu)
    open_doc(client, cu.as_uri(), cu.read_text(), language="cuda")
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=cu.as_uri()),
            range=types.Range(start=types.Position(3, 4), end=types.Position(3, 4)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    (action,) = [a for a in actions or [] if a.title.startswith(title_start)]
    command = action.command
    if isinstance(command, str):  # pytest-lsp reads a CodeAction as a Command: its command
        command = types.Command(**ast.literal_eval(command))  # field is the action's repr
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command.command, arguments=command.arguments)
    )


async def _settle() -> None:
    await asyncio.sleep(0.5)  # showDocument is sent without waiting for the command's reply


@pytest.mark.lsp(env=ENV, init=_init(presents=False), on_start=_editor)
async def test_light_bulb_nvcc_lowering_opens_its_file_and_says_so(client, tmp_path):
    result = await _light_bulb(client, tmp_path, "Lower to PTX with nvcc (reference)")
    assert result["ok"], result
    written = tmp_path / "vec_add.ptx"
    assert result["uri"] == written.resolve().as_uri() and ".entry" in written.read_text()
    await _settle()
    assert [d.uri for d in client.shown_documents] == [result["uri"]]
    said = [m for m in client.messages if m.message.startswith("ptxls: ")]
    assert [(m.type, m.message) for m in said] == [
        (types.MessageType.Info, f"ptxls: {result['summary']}")
    ]
    assert "vec_add.ptx" in said[0].message


@pytest.mark.lsp(env=ENV, init=_init(presents=False), on_start=_editor)
async def test_a_failed_action_says_why_once_and_opens_nothing(client, tmp_path):
    result = await _light_bulb(client, tmp_path, "Lower to PTX with LLM")
    assert result["ok"] is False
    await _settle()
    assert client.shown_documents == []
    warnings = [m for m in client.messages if m.type == types.MessageType.Warning]
    assert len(warnings) == 1 and warnings[0].message == f"ptxls: {result['summary']}"
    # what to do: the summary names a way to configure the endpoint
    assert "PTXLS_MODEL" in result["summary"] or "ptxls.llm" in result["summary"]


@pytest.mark.lsp(env=ENV, init=_init(presents=True), on_start=_editor)
async def test_a_client_that_presents_results_is_not_told_twice(client, tmp_path):
    result = await _light_bulb(client, tmp_path, "Lower to PTX with nvcc (reference)")
    assert result["ok"] and result["uri"].endswith("/vec_add.ptx"), result
    await _settle()
    assert client.shown_documents == []
    assert not [m for m in client.messages if m.message.startswith("ptxls: ")]


@pytest.mark.lsp(env=ENV, init=_init(presents=False), on_start=_editor)
async def test_a_gpu_test_from_its_lens_says_its_result(client, tmp_path):
    """A pass has no summary of its own: the message says the verdict (on the GPU, the CPU
    emulator, or no GPU), never an empty 'ptxls: '."""
    for name in ("vec_add.ptx", "vec_add.cu"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    uri = (tmp_path / "vec_add.ptx").as_uri()
    open_doc(client, uri, (tmp_path / "vec_add.ptx").read_text())
    (lens,) = [
        lens
        for lens in await client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        if lens.command.command == "ptxls.runGpuTest"
    ]
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="ptxls.runGpuTest", arguments=lens.command.arguments)
    )
    assert result["summary"].strip() and "vec_add" in result["summary"] + result["table"]
    await _settle()
    said = [m.message for m in client.messages if m.message.startswith("ptxls: ")]
    assert said == [f"ptxls: {result['summary']}"], said
