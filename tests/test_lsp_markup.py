"""Hovers and completion documentation in the format the client says it reads: markdown to a
client that lists it (VS Code, Neovim: every other LSP test), plain text to one that lists only
plain text."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from ptxls.fewshot.library import KERNELS_DIR

from lsp_helpers import init_params, open_doc


def _plain_text_client(root, options=None):
    return init_params(root, options, formats=[types.MarkupKind.PlainText])


@pytest.mark.lsp(init=_plain_text_client)
async def test_a_client_that_reads_only_plain_text_gets_plain_text(
    client: LanguageClient, tmp_path
):
    text = (KERNELS_DIR / "softmax_rows" / "kernel.ptx").read_text()
    uri = (tmp_path / "softmax_rows.ptx").as_uri()
    open_doc(client, uri, text)
    lines = text.splitlines()
    blank = next(i for i, t in enumerate(lines) if not t.strip())  # outside any function
    done = await client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=blank, character=0),
        )
    )
    items = done.items if isinstance(done, types.CompletionList) else done
    docs = [i.documentation for i in items if i.documentation is not None]
    assert docs and {d.kind for d in docs} == {types.MarkupKind.PlainText}
    # the hover on the entry joins the library's figures and the ISA's words: still plain text
    line = next(i for i, t in enumerate(lines) if ".entry softmax_rows" in t)
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line, character=lines[line].index("softmax_rows") + 3),
        )
    )
    assert hover is not None and hover.contents.kind == types.MarkupKind.PlainText
    assert "fewshot/kernels/softmax_rows" in hover.contents.value
