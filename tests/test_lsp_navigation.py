"""End-to-end: outline, definition, references, hover and completion on a real server."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_helpers import EXAMPLES, open_doc, wait_for_publish

TEXT = (EXAMPLES / "vec_add.ptx").read_text()
LINES = TEXT.splitlines()


def where(needle: str, nth: int = 0, offset: int = 0) -> types.Position:
    """Position of the nth occurrence of needle (plus offset characters)."""
    count = 0
    for i, line in enumerate(LINES):
        start = 0
        while (col := line.find(needle, start)) >= 0:
            if count == nth:
                return types.Position(line=i, character=col + offset)
            count += 1
            start = col + 1
    raise AssertionError(needle)


@pytest.fixture(autouse=True)
async def _vec_add_open(client: LanguageClient, tmp_path):
    """Every test here asks about examples/vec_add.ptx, open and checked once."""
    uri = (tmp_path / "vec_add.ptx").as_uri()
    client.uri = uri
    open_doc(client, uri, TEXT)
    await wait_for_publish(client, uri)


def doc(client):
    return types.TextDocumentIdentifier(uri=client.uri)


async def test_outline_lists_the_entry_and_its_labels(client: LanguageClient):
    symbols = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=doc(client))
    )
    assert [s.name for s in symbols] == ["vec_add"]
    assert [c.name for c in symbols[0].children] == ["DONE"]
    assert "vec_add_param_n" in symbols[0].detail


async def test_definition_of_a_register_is_its_reg_line(client: LanguageClient):
    use = where("%f3", nth=1)  # st.global.f32 [%rd10], %f3;
    loc = await client.text_document_definition_async(
        types.DefinitionParams(text_document=doc(client), position=use)
    )
    line = LINES[loc.range.start.line]
    assert line.strip().startswith(".reg .f32")
    assert line[loc.range.start.character : loc.range.end.character] == "%f"


async def test_definition_of_a_label_and_a_param(client: LanguageClient):
    loc = await client.text_document_definition_async(
        types.DefinitionParams(text_document=doc(client), position=where("DONE;", offset=1))
    )
    assert LINES[loc.range.start.line].startswith("DONE:")
    loc = await client.text_document_definition_async(
        types.DefinitionParams(
            text_document=doc(client), position=where("[vec_add_param_b]", offset=3)
        )
    )
    assert "param .u64 vec_add_param_b" in LINES[loc.range.start.line]


async def test_references_of_a_register(client: LanguageClient):
    refs = await client.text_document_references_async(
        types.ReferenceParams(
            text_document=doc(client),
            position=where("%rd7", offset=1),
            context=types.ReferenceContext(include_declaration=False),
        )
    )
    # written by mul.wide, read by the three adds
    assert len(refs) == 4
    assert all(
        LINES[r.range.start.line][r.range.start.character : r.range.end.character] == "%rd7"
        for r in refs
    )


async def test_hover_on_register_and_param(client: LanguageClient):
    h = await client.text_document_hover_async(
        types.HoverParams(text_document=doc(client), position=where("%r5", nth=1, offset=1))
    )
    assert ".reg .b32 %r<6>" in h.contents.value
    h = await client.text_document_hover_async(
        types.HoverParams(text_document=doc(client), position=where("[vec_add_param_n]", offset=2))
    )
    assert "parameter 4 of `vec_add`" in h.contents.value and ".u32" in h.contents.value


async def test_completion_offers_declared_registers(client: LanguageClient):
    pos = where("%f3, %f1", offset=1)
    result = await client.text_document_completion_async(
        types.CompletionParams(text_document=doc(client), position=pos)
    )
    labels = {i.label for i in result.items}
    assert {"%f1", "%f2", "%f3", "%rd10", "%p1"} <= labels


async def test_hover_on_a_special_register_is_not_called_undeclared(client: LanguageClient):
    h = await client.text_document_hover_async(
        types.HoverParams(text_document=doc(client), position=where("%tid.x", offset=2))
    )
    assert h is None or "not declared" not in h.contents.value


async def test_hover_on_the_entry_name_shows_ptxas_resources(client: LanguageClient):
    h = await client.text_document_hover_async(
        types.HoverParams(text_document=doc(client), position=where("vec_add(", offset=2))
    )
    assert h is not None
    assert "registers: 12 per thread" in h.contents.value  # what ptxas -v says for this kernel
    assert "occupancy" in h.contents.value


async def test_hover_on_an_opcode_explains_it_and_its_modifiers(client: LanguageClient):
    h = await client.text_document_hover_async(
        types.HoverParams(text_document=doc(client), position=where("ld.global.f32", offset=3))
    )
    assert h is not None and "ld" in h.contents.value and ".global" in h.contents.value
