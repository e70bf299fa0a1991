"""End-to-end: "Show SASS" through a real server process — the code lens and code action, the
ptxls.showSass command (real ptxas + nvdisasm), the view it writes, and the hover on a PTX line
that lists the SASS it became (only for the document version the SASS was made from; made again
on save)."""

from __future__ import annotations

import ast
import asyncio
import importlib.util

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_helpers import EXAMPLES, open_doc, replace_all

VEC_ADD = (EXAMPLES / "vec_add.ptx").read_text()
ADD_LINE = next(n for n, s in enumerate(VEC_ADD.splitlines()) if s.strip().startswith("add.f32"))
CUDA = """__global__ void scale(float* x, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= s;
}
"""


async def _hover_text(client: LanguageClient, uri: str, line: int) -> str:
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line, character=6),
        )
    )
    return hover.contents.value if hover else ""


async def _lenses(client: LanguageClient, uri: str) -> list[types.CodeLens]:
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    return [lens for lens in lenses or [] if lens.command.command == "ptxls.showSass"]


async def _show_sass(client: LanguageClient, *arguments) -> dict:
    return await asyncio.wait_for(
        client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="ptxls.showSass", arguments=list(arguments))
        ),
        120,
    )


async def test_show_sass_lens_command_view_and_hover(client: LanguageClient, tmp_path):
    src = tmp_path / "vec_add.ptx"
    src.write_text(VEC_ADD)
    uri = src.as_uri()
    open_doc(client, uri, VEC_ADD)
    (lens,) = await _lenses(client, uri)
    assert lens.command.title == "Show SASS" and list(lens.command.arguments) == [uri, "vec_add"]
    assert "FADD" not in await _hover_text(client, uri, ADD_LINE)  # nothing assembled yet

    result = await _show_sass(client, *lens.command.arguments)
    assert result["ok"], result
    assert result["kernel"] == "vec_add" and "registers" in result["summary"]
    view = tmp_path / ".ptxls" / "show" / "vec_add.sass.txt"
    assert result["uri"] == view.as_uri() and view.read_text() == result["sass"]
    for _ in range(100):  # asked of the client without waiting for its answer
        if client.shown_documents:
            break
        await asyncio.sleep(0.02)
    assert [d.uri for d in client.shown_documents] == [view.as_uri()]
    lines = result["sass"].splitlines()
    at = lines.index(f"// vec_add.ptx:{ADD_LINE + 1}: {VEC_ADD.splitlines()[ADD_LINE].strip()}")
    assert "FADD" in lines[at + 1]

    hover = await _hover_text(client, uri, ADD_LINE)
    assert hover.startswith("**SASS** (sm_90): 1 instruction from this line") and "FADD" in hover
    assert "add" in hover.split("**SASS**", 1)[1]  # the opcode's own docs follow
    (lens,) = await _lenses(client, uri)
    assert "registers" in lens.command.title and "instructions" in lens.command.title

    # closing and reopening the same text keeps it (an editor may close and reopen a file)
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    open_doc(client, uri, VEC_ADD)
    assert "FADD" in await _hover_text(client, uri, ADD_LINE)

    # an edit makes the SASS stale: no hover (its lines may have moved) until the next save
    edited = "// a comment line moves every line down\n" + VEC_ADD
    replace_all(client, uri, edited, 2)
    assert "FADD" not in await _hover_text(client, uri, ADD_LINE + 1)
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    for _ in range(300):
        hover = await _hover_text(client, uri, ADD_LINE + 1)
        if "FADD" in hover:
            break
        await asyncio.sleep(0.1)
    assert "FADD" in hover, "the SASS was not made again after the save"


async def test_show_sass_code_action_on_cuda(client: LanguageClient, tmp_path):
    src = tmp_path / "scale.cu"
    src.write_text(CUDA)
    uri = src.as_uri()
    open_doc(client, uri, CUDA, language="cuda-cpp")
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=types.Position(2, 4), end=types.Position(2, 4)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    # lsprotocol's client side structures a CodeAction with a command as a Command whose
    # `command` is the nested object as a string (see test_lowering_lsp.py)
    commands = [
        ast.literal_eval(a.command) if a.command.startswith("{") else vars(a)
        for a in actions or []
        if isinstance(a, types.Command)
    ]
    (action,) = [c for c in commands if c["command"] == "ptxls.showSass"]
    assert action["title"] == "Show SASS for this kernel (scale)"
    result = await _show_sass(client, *action["arguments"])
    assert result["ok"], result
    assert "// scale.cu:3: if (i < n) x[i] *= s;" in result["sass"]
    assert "FMUL" in result["sass"]


async def test_show_sass_says_why_not(client: LanguageClient, tmp_path):
    src = tmp_path / "broken.ptx"
    src.write_text((EXAMPLES / "broken.ptx").read_text())
    broken = await _show_sass(client, src.as_uri(), "vec_add")
    assert broken["ok"] is False and "broken.ptx, line 28;" in broken["summary"]
    ok = tmp_path / "vec_add.ptx"
    ok.write_text(VEC_ADD)
    unknown = await _show_sass(client, ok.as_uri(), "nope")
    assert unknown["ok"] is False and "has: vec_add" in unknown["summary"]
    huge = await _show_sass(client, ok.as_uri(), "k" * 100_000)
    assert huge["ok"] is False and "100000 characters" in huge["summary"]
    assert len(huge["summary"]) < 200  # the name is not echoed
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    other = await _show_sass(client, text.as_uri(), "k")
    assert other["ok"] is False and ".ptx, .cu and Triton .py" in other["summary"]


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton not installed")
async def test_show_sass_on_a_triton_kernel(client: LanguageClient, tmp_path):
    text = (EXAMPLES / "vec_add_triton.py").read_text()
    src = tmp_path / "vec_add_triton.py"
    src.write_text(text)
    uri = src.as_uri()
    open_doc(client, uri, text, language="python")
    body = next(n for n, s in enumerate(text.splitlines()) if "tl.load" in s)
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=types.Position(body, 4), end=types.Position(body, 4)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    titles = [a.title for a in actions or []]
    assert "Show SASS for this kernel (add_kernel)" in titles
    result = await _show_sass(client, uri, "add_kernel")
    assert result["ok"], result
    # the SASS under the load's Python line (the view repeats a line each time the SASS
    # returns to it) holds a global load
    header = f"// vec_add_triton.py:{body + 1}: {text.splitlines()[body].strip()}"
    under_load, current = [], None
    for line in result["sass"].splitlines():
        if line.startswith("// vec_add_triton.py:"):
            current = line
        elif current == header and "/*" in line:
            under_load.append(line)
    assert under_load and any("LDG" in line for line in under_load), under_load
