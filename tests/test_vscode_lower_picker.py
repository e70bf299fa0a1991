"""The VS Code palette's "Lower this kernel to PTX…" picker (vscode-client/src/lowerChoices.ts)
offers what the server's code actions offer for the kernel's kind: for an @triton.jit kernel
"Triton (reference)", whose ptxls.lowerToPtx arguments are the Triton code action's, and the
command run with the arguments the picker sends lowers the kernel. (The picker's own logic is
unit-tested in vscode-client/test/lowerChoices.test.ts.)"""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_helpers import EXAMPLES, open_doc

CHOICES_TS = Path(__file__).resolve().parent.parent / "vscode-client" / "src" / "lowerChoices.ts"


def picker_choices(kind: str) -> list[tuple[str, str]]:
    """(label, backend) of the picker's choices for ``kind``, read from lowerChoices.ts."""
    ts = CHOICES_TS.read_text()
    block = re.search(rf'"{kind}": \[(.*?)\],\n', ts, re.S)
    assert block, f"no {kind} entry in {CHOICES_TS.name}"
    text = block.group(1).replace("LLM,", '{ label: "LLM", backend: "llm" },')
    return re.findall(r'label: "([^"]+)".*?backend: "(\w+)"', text, re.S)


async def _code_actions(client: LanguageClient, uri: str, line: int) -> list[types.CodeAction]:
    got = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=types.Position(line, 4), end=types.Position(line, 4)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    out = []
    for a in got or []:
        if isinstance(a, types.Command) and a.command.startswith("{"):
            a = types.CodeAction(
                title=a.title, command=types.Command(**ast.literal_eval(a.command))
            )
        if isinstance(a, types.CodeAction):
            out.append(a)
    return out


def test_the_picker_offers_triton_reference_and_never_nvcc_for_triton():
    assert picker_choices("triton-jit") == [("LLM", "llm"), ("Triton (reference)", "triton")]
    assert picker_choices("cuda-global") == [("LLM", "llm"), ("nvcc", "nvcc")]


async def test_the_triton_choice_is_the_code_actions_command(client: LanguageClient, tmp_path):
    py = tmp_path / "vec_add_triton.py"
    shutil.copy(EXAMPLES / "vec_add_triton.py", py)
    text = py.read_text()
    open_doc(client, py.as_uri(), text, language="python")
    kernels = await client.protocol.send_request_async(
        "ptxls/kernels", {"textDocument": {"uri": py.as_uri()}}
    )
    [site] = [k for k in kernels if k["name"] == "add_kernel"]
    assert site["kind"] == "triton-jit"  # what the picker is chosen by
    actions = await _code_actions(client, py.as_uri(), site["line"] + 2)
    [triton] = [a for a in actions if a.title.startswith("Lower to PTX with Triton (reference)")]
    assert triton.command.command == "ptxls.lowerToPtx"  # what the picker forwards to
    backend = triton.command.arguments[2]
    assert ("Triton (reference)", backend) in picker_choices("triton-jit")
    pytest.importorskip("triton", reason="the triton extra is not installed")
    # what the picker sends: (uri, kernel, backend, the kernel's line)
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="ptxls.lowerToPtx", arguments=[py.as_uri(), "add_kernel", backend, site["line"]]
        )
    )
    assert result["ok"], result
    assert "(backend: triton)" in (tmp_path / "add_kernel.ptx").read_text()
