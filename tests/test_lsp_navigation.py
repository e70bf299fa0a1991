"""End-to-end: outline, definition, references, hover and completion on a real server, driven
by annotated PTX files in tests/data/ptx_cases/navigation/ (one test per question).

Annotations (PTX comments; each points at the nearest line above that is not an annotation):

    .reg .f32   %f<4>;
//              ^^ def f-registers               a named range (a definition's target)
DONE:
// def: done-label                               a named line, at column 0 where carets cannot go

    st.global.f32   [%rd10], %f3;
//                           ^ definition f-registers
                                   go to definition at the caret lands on that range (or line)
//                           ^ references 4 "%rd7"
                                   4 references (declaration excluded), each covering the text
//                           ^ hover "text" "text"       the hover says each text
//                           ^ hover-without "text"      no hover, or one that does not say it
//                           ^ completion "%f1" "%p1"    completion offers at least these

// outline: vec_add [DONE] "vec_add_param_n"
                                   the outline: that function, its labels, its detail says it
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_helpers import DATA, SHARED_SERVER, open_doc, wait_for_publish

# every test only asks: one server for the module, each case file opened in it once
pytestmark = SHARED_SERVER

CASES = sorted((DATA / "ptx_cases" / "navigation").glob("*.ptx"))
CARET = re.compile(r"^//( *)(\^+) ([\w-]+)(.*)$")
LINE_DEF = re.compile(r"^// def: ([\w-]+)$")
OUTLINE = re.compile(r"^// outline: (\S+) \[([^\]]*)\]((?: \"[^\"]*\")*)$", re.M)


@dataclass(frozen=True)
class Ask:
    kind: str  # definition | references | hover | hover-without | completion
    line: int
    col: int
    args: tuple[str, ...]  # a definition's target name, or the quoted texts / count

    def __str__(self) -> str:
        return f"{self.kind}@{self.line}:{self.col}"


def read_annotations(text: str) -> tuple[dict[str, tuple[int, tuple[int, int] | None]], list[Ask]]:
    """Named targets (line, [start, end) or None for the whole line) and the questions."""
    targets: dict[str, tuple[int, tuple[int, int] | None]] = {}
    asks: list[Ask] = []
    above = 0
    for number, line in enumerate(text.split("\n")):
        caret, line_def = CARET.match(line), LINE_DEF.match(line)
        if line_def:
            targets[line_def.group(1)] = (above, None)
        elif caret:
            start = 2 + len(caret.group(1))
            kind, rest = caret.group(3), caret.group(4).strip()
            if kind == "def":
                targets[rest] = (above, (start, start + len(caret.group(2))))
            else:
                args = tuple(re.findall(r"\"([^\"]*)\"", rest)) or tuple(rest.split())
                if kind == "references":
                    args = (rest.split()[0], *args)
                asks.append(Ask(kind, above, start, args))
        else:
            above = number
    return targets, asks


QUESTIONS = [
    pytest.param(path, ask, id=f"{path.stem}-{ask}")
    for path in CASES
    for ask in read_annotations(path.read_text(encoding="utf-8"))[1]
]


_OPENED: dict[Path, types.TextDocumentIdentifier] = {}


@pytest_asyncio.fixture(loop_scope="module")
async def opened(shared_client: LanguageClient, tmp_path_factory, request):
    """The case file open in the server and checked once (ptxas -v feeds the entry hover)."""
    path: Path = request.node.callspec.params["path"]
    if path not in _OPENED:
        uri = (tmp_path_factory.mktemp("navigation") / path.name).as_uri()
        open_doc(shared_client, uri, path.read_text(encoding="utf-8"))
        await wait_for_publish(shared_client, uri)
        # the lints may be published before ptxas answers; its run is logged after its publish
        for _ in range(3000):
            if any(f"for {path.name} v1" in m.message for m in shared_client.log_messages):
                break
            await asyncio.sleep(0.01)
        _OPENED[path] = types.TextDocumentIdentifier(uri=uri)
    return _OPENED[path]


async def _answer(client: LanguageClient, doc, ask: Ask):
    pos = types.Position(line=ask.line, character=ask.col)
    if ask.kind == "definition":
        return await client.text_document_definition_async(
            types.DefinitionParams(text_document=doc, position=pos)
        )
    if ask.kind == "references":
        return await client.text_document_references_async(
            types.ReferenceParams(
                text_document=doc,
                position=pos,
                context=types.ReferenceContext(include_declaration=False),
            )
        )
    if ask.kind in ("hover", "hover-without"):
        return await client.text_document_hover_async(
            types.HoverParams(text_document=doc, position=pos)
        )
    if ask.kind == "completion":
        return await client.text_document_completion_async(
            types.CompletionParams(text_document=doc, position=pos)
        )
    raise AssertionError(f"unknown annotation {ask.kind}")


@pytest.mark.parametrize("path, ask", QUESTIONS)
async def test_navigation(shared_client: LanguageClient, opened, path, ask):
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    targets, _ = read_annotations(text)
    got = await _answer(shared_client, opened, ask)
    if ask.kind == "definition":
        line, cols = targets[ask.args[0]]
        start, end = got.range.start, got.range.end
        assert start.line == line, (lines[start.line], lines[line])
        if cols is not None:
            assert (start.character, end.line, end.character) == (cols[0], line, cols[1])
    elif ask.kind == "references":
        count, token = int(ask.args[0]), ask.args[1]
        assert len(got) == count
        assert all(
            lines[r.range.start.line][r.range.start.character : r.range.end.character] == token
            for r in got
        )
    elif ask.kind == "hover":
        assert got is not None and all(t in got.contents.value for t in ask.args), got
    elif ask.kind == "hover-without":
        assert got is None or not any(t in got.contents.value for t in ask.args)
    elif ask.kind == "completion":
        assert set(ask.args) <= {item.label for item in got.items}


OUTLINES = [
    pytest.param(path, id=path.stem)
    for path in CASES
    if OUTLINE.search(path.read_text(encoding="utf-8"))
]


@pytest.mark.parametrize("path", OUTLINES)
async def test_outline(shared_client: LanguageClient, opened, path):
    name, labels, texts = OUTLINE.search(path.read_text(encoding="utf-8")).groups()
    symbols = await shared_client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=opened)
    )
    assert [s.name for s in symbols] == [name]
    assert [c.name for c in symbols[0].children] == labels.split()
    assert all(t in symbols[0].detail for t in re.findall(r"\"([^\"]*)\"", texts))


def test_every_question_of_the_corpus_is_asked():
    kinds = {p.values[1].kind for p in QUESTIONS}
    assert kinds == {"definition", "references", "hover", "hover-without", "completion"}
    assert OUTLINES, "the outline is asked of at least one case"
