"""ptxas's squiggles do not vanish while ptxas runs on the next version: the instant lints'
publish (ahead of ptxas) carries the last ptxas run's problems, moved through the edit's lines;
those on a line the edit touched are dropped until ptxas answers.

The server's ptxas is tests/data/slow_ptxas.sh, the real one answering a second late, so the
publish of the lints alone always comes first and can be looked at."""

from __future__ import annotations

import asyncio
import os
import shutil

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from ptxls.diagnostics.model import Fix, Problem, Severity
from ptxls.server.features.ptx_diagnostics import moved_through_edit

from lsp_helpers import BROKEN, DATA, SHARED_SERVER, open_doc, wait_for_publish

REAL_PTXAS = os.environ.get("PTXLS_PTXAS") or shutil.which("ptxas")
DELAY_S = 1.0
ENV = dict(
    os.environ,
    PTXLS_PTXAS=str(DATA / "slow_ptxas.sh"),
    SLOW_PTXAS_REAL=REAL_PTXAS or "",
    SLOW_PTXAS_DELAY=str(DELAY_S),
)

pytestmark = [pytest.mark.lsp(env=ENV, options={"debounceMs": 50}), *SHARED_SERVER]
needs_ptxas = pytest.mark.skipif(REAL_PTXAS is None, reason="no ptxas on PATH or PTXLS_PTXAS")


def _ptxas(params) -> list[tuple[int, int, int]]:
    """Where ptxas's problems are (their words may name lines: "declared on line 16")."""
    return sorted(
        (d.range.start.line, d.range.start.character, d.range.end.character)
        for d in params.diagnostics
        if d.source == "ptxas"
    )


def _insert(client: LanguageClient, uri: str, version: int, line: int, text: str) -> None:
    at = types.Position(line=line, character=0)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(start=at, end=at), text=text
                )
            ],
        )
    )


async def _publishes_of(client: LanguageClient, uri: str, version: int) -> list:
    """Every publish of ``version``, once ptxas's own (the last) has come: the server logs
    each ptxas run right after publishing its result."""
    ran = f"for broken.ptx v{version}"
    for _ in range(3000):
        if any(ran in m.message for m in client.log_messages):
            break
        await asyncio.sleep(0.01)
    else:
        raise AssertionError(f"no ptxas run logged for v{version} within 30 s")
    await asyncio.sleep(0.3)  # nothing may follow it; give a stray one time to show
    return [p for p in client.publishes if p.uri == uri and p.version == version]


@needs_ptxas
async def test_the_lints_publish_carries_ptxas_problems_moved_through_the_edit(
    shared_client, tmp_path
):
    client: LanguageClient = shared_client
    uri = (tmp_path / "broken.ptx").as_uri()
    open_doc(client, uri, BROKEN)
    first = await wait_for_publish(client, uri, lambda p: p.version == 1 and _ptxas(p), 30)
    lines = sorted({line for line, *_ in _ptxas(first)})
    assert len(lines) == 3  # %r6 on three lines (examples/broken.ptx)

    # a line added above them all: every one moves down by one
    _insert(client, uri, 2, 0, "// a line above\n")
    of_2 = await _publishes_of(client, uri, 2)
    assert len(of_2) == 2  # the lints first, ptxas's a second later
    moved = [(line + 1, *rest) for line, *rest in _ptxas(first)]
    assert _ptxas(of_2[0]) == moved, "ptxas's problems vanished while ptxas ran"
    assert _ptxas(of_2[1]) == moved
    said = sorted(d.message for d in first.diagnostics if d.source == "ptxas")
    assert sorted(d.message for d in of_2[0].diagnostics if d.source == "ptxas") == said

    # an edit on the middle one's line: that one is dropped until ptxas answers, not the others
    touched = lines[1] + 1
    _insert(client, uri, 3, touched, "    // a comment before it\n")
    of_3 = await _publishes_of(client, uri, 3)
    assert len(of_3) == 2
    kept = [(line if line < touched else line + 1, *rest) for line, *rest in moved
            if line != touched]  # fmt: skip
    assert _ptxas(of_3[0]) == kept
    # the lint on the touched line is still there (it is computed on the new text)
    assert any(d.source != "ptxas" and d.range.start.line == touched + 1
               for d in of_3[0].diagnostics)  # fmt: skip
    assert sorted({line for line, *_ in _ptxas(of_3[1])}) == [
        lines[0] + 1, lines[1] + 2, lines[2] + 2
    ]  # fmt: skip


def _p(line: int, end_line: int | None = None, fix_line: int | None = None) -> Problem:
    fix = None if fix_line is None else Fix("declare", fix_line, 4, "%r<6>", "%r<7>")
    return Problem(line, 2, 5, Severity.ERROR, f"at {line}", "ptxas", end_line=end_line, fix=fix)


def test_problems_above_an_edit_stay_below_it_move_on_it_go():
    # lines 10..12 replaced by text with one line break (3 lines become 2): delta -1
    before = [_p(3), _p(10), _p(12), _p(13), _p(20, end_line=22)]
    after = moved_through_edit(before, 10, 12, 1)
    assert [(p.line, p.end_line) for p in after] == [(3, None), (12, None), (19, 21)]
    assert after[0] is before[0]  # untouched, unmoved: the same object


def test_a_problem_spanning_the_edit_goes_and_fixes_move_with_their_lines():
    spanning = _p(4, end_line=8)
    fix_below = _p(2, fix_line=30)  # a problem above whose fix is on a line below the edit
    fix_on_edit = _p(40, fix_line=6)
    after = moved_through_edit([spanning, fix_below, fix_on_edit], 6, 6, 2)  # 2 lines inserted
    assert [p.line for p in after] == [2, 42]
    assert after[0].fix is not None and after[0].fix.line == 32
    assert after[1].fix is None  # its line was edited: the fix's old text may be gone
