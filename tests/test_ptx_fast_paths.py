"""The reader's and the lints' fast paths against the plain way of doing the same thing.

The parse and the instant lints run on every edit, so their hot loops take shortcuts: regexes
that lead with a literal instead of a lookbehind, a blanked copy of a body instead of a check
per use, one positions table, each register name judged once. Each shortcut is compared here
with the straightforward form (written out in this file: the regexes as a lookbehind or ``^``
says it, positions by counting newlines, a declaration looked up in every ``.reg``) on every
.ptx of the repository and on hand-made corner cases. No expected output is taken from our code.
"""

from __future__ import annotations

import bisect
import re
from pathlib import Path

import pytest

from ptxls.diagnostics import isa_lints
from ptxls.diagnostics.engine import instant_check
from ptxls.frontend.ptx import (
    _BRANCH_RE,
    _LABEL_RE,
    PtxFunction,
    blank_comments,
    is_special_register,
    line_starts,
    parse_ptx,
)

ROOT = Path(__file__).resolve().parent.parent
CORPUS = sorted(p for d in ("tests/data", "examples", "fewshot") for p in (ROOT / d).rglob("*.ptx"))

CORNERS = {
    "labels_and_branches": """.version 8.0
.target sm_90
.entry k(.param .u64 p)
{   .reg .pred %p<2>; .reg .b32 %r<3>;
L0:
  @%p1 bra L0;
\tL1 :   bra.uni   L1 ;
  xbra L0; abra.uni L1; bra Missing;
  .loc 1 2 3 %r9
  .pragma "nounroll %r8";
  mov.b32 %r5, %r2; { .reg .b32 %t; mov.b32 %t, %r1; }
  ld.global.u32 %r1, [ sym ]; ld.u32 %r1, [%r2+4]; st.u32 [glob], %r1;
  L2::
}""",
    "crlf_and_tabs": ".version 7.0\r\n.target sm_75\r\n.entry k()\r\n{\r\n.reg .b32 %r<2>;\r\n"
    "redux.sync.add.u32 %r1, %r0, 0xffffffff;\r\nbra DONE;\r\nDone:\r\nret;\r\n}\r\n",
    "body_at_offset_zero_and_empty_lines": "{\n\n}\n.entry k(){L:\nbra L;}",
    "nested_skip_regions": ".version 8.0\n.target sm_90\n.entry k()\n{\n"
    ".reg .b32 %a .loc %b; .pragma .reg %c; mov.b32 %d, %a;\n}\n",
    "unclosed": ".version 8.0\n.target sm_90\n.entry k()\n{\n.reg .b32 %r<2>;\nmov.b32 %r1, %r7",
}


def _texts() -> list[tuple[str, str]]:
    files = [(str(p.relative_to(ROOT)), p.read_text(errors="replace")) for p in CORPUS]
    return files + sorted(CORNERS.items())


TEXTS = _texts()


def test_the_corpus_is_there():
    assert len(CORPUS) > 50  # tests/data, examples and fewshot: a rename must not empty this


# -- the straightforward forms ----------------------------------------------------------------


def _pos(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset)
    return line, offset - (text.rfind("\n", 0, offset) + 1)


_PLAIN_LABEL = re.compile(r"(?m)^[ \t]*([A-Za-z_$][\w$]*)[ \t]*:(?!:)")
_PLAIN_BRANCH = re.compile(r"\b(bra(?:\.uni)?)\s+([A-Za-z_$][\w$]*)\s*;")
_PLAIN_DECL = re.compile(r"(?<![\w.$%])\.(reg|local|shared|param|const|global)\b[^;{}]*")
_PLAIN_DIRECTIVE = re.compile(
    r"(?<![\w.$%])\.(?:pragma|loc|file|branchtargets|calltargets|callprototype|section)\b[^;{}]*"
)
_PLAIN_INSTRUCTION = re.compile(
    r"(?<=[;{}])[ \t\r\n]*(?:[A-Za-z_$][\w$]*[ \t]*:(?!:)[ \t\r\n]*)*"
    r"(?:@!?%?[\w$]+[ \t\r\n]+)?([a-z][a-z0-9_]*(?:\.[\w:]+)*)"
)


def _body_offsets(clean: str, func: PtxFunction) -> tuple[int, int]:
    assert func.body is not None
    starts = [0] + [m.end() for m in re.finditer("\n", clean)]
    s, e = func.body
    return starts[s.line] + s.col + 1, starts[e.line] + e.col - 1


def _plain_body(clean: str, start: int, end: int) -> dict[str, list]:
    """What a body holds, read the plain way: a use counts unless a declaration or directive
    statement holds its first character."""
    skip = [m.span() for m in _PLAIN_DECL.finditer(clean, start, end)]
    skip += [m.span() for m in _PLAIN_DIRECTIVE.finditer(clean, start, end)]

    def skipped(at: int) -> bool:
        return any(a <= at < b for a, b in skip)

    labels: dict[str, tuple] = {}
    for m in _PLAIN_LABEL.finditer(clean, start, end):
        labels.setdefault(m.group(1), (_pos(clean, m.start(1)), _pos(clean, m.end(1))))
    regs = [
        (m.group(0), _pos(clean, m.start()), _pos(clean, m.end()))
        for m in re.finditer(r"%[A-Za-z_$][\w$]*", clean[:end])
        if m.start() >= start and not skipped(m.start())
    ]
    symbols = [
        (m.group(1), _pos(clean, m.start(1)), _pos(clean, m.end(1)))
        for m in re.finditer(r"\[\s*([A-Za-z_$][\w$]*)", clean[:end])
        if m.start() >= start and not skipped(m.start())
    ]
    branches = [
        (m.group(2), _pos(clean, m.start(2)), _pos(clean, m.end(2)))
        for m in _PLAIN_BRANCH.finditer(clean, start, end)
    ]
    return {"labels": labels, "regs": regs, "symbols": symbols, "branches": branches}


def _ours(func: PtxFunction) -> dict[str, list]:
    def plain(uses) -> list:
        return [(u.name, tuple(u.span.start), tuple(u.span.end)) for u in uses]

    return {
        "labels": {k: (tuple(v.start), tuple(v.end)) for k, v in func.labels.items()},
        "regs": plain(func.register_uses),
        "symbols": plain(func.symbol_uses),
        "branches": plain(func.branch_targets),
    }


# -- the comparisons --------------------------------------------------------------------------


@pytest.mark.parametrize("name,text", TEXTS, ids=[n for n, _ in TEXTS])
def test_line_starts_and_positions_are_the_counted_ones(name, text):
    clean = blank_comments(text)
    assert line_starts(clean) == [0] + [i + 1 for i, c in enumerate(clean) if c == "\n"]
    module, _ = parse_ptx(text)
    for func in module.functions:
        assert tuple(func.span.start) == _pos(clean, func.offsets[0])
        assert tuple(func.span.end) == _pos(clean, func.offsets[1])


@pytest.mark.parametrize("name,text", TEXTS, ids=[n for n, _ in TEXTS])
def test_a_body_reads_as_the_plain_passes_read_it(name, text):
    clean = blank_comments(text)
    module, _ = parse_ptx(text)
    for func in module.functions:
        if func.body is None:
            continue
        start, end = _body_offsets(clean, func)
        assert _ours(func) == _plain_body(clean, start, end), func.name


@pytest.mark.parametrize("name,text", TEXTS, ids=[n for n, _ in TEXTS])
def test_instructions_are_the_ones_the_lookbehind_finds(name, text):
    clean = blank_comments(text)
    module, _ = parse_ptx(text)
    for func in module.functions:
        if func.body is None:
            continue
        begin, end = _body_offsets(clean, func)
        begin -= 1  # the '{' itself, as lint_availability searches from
        plain = [m.span(1) for m in _PLAIN_INSTRUCTION.finditer(clean, begin, end)]
        fast = [m.span(1) for m in isa_lints._INSTRUCTION.finditer(clean, max(begin - 1, 0), end)]
        assert fast == plain


@pytest.mark.parametrize("name,text", TEXTS, ids=[n for n, _ in TEXTS])
def test_undeclared_registers_are_those_no_declaration_names(name, text):
    """The lint's per-name shortcut against Decl.declares asked of every declaration."""
    module, problems = instant_check(text)
    reported = {(p.line, p.message.split("'")[1]) for p in problems
                if p.code == "undeclared-register"}  # fmt: skip
    expected = set()
    for func in module.functions:
        decls = func.decls + module.globals
        known = {p.name for p in func.params + func.return_params}
        for use in func.register_uses:
            if use.name in known or is_special_register(use.name):
                continue
            if not any(d.declares(use.name) for d in decls):
                expected.add((use.span.start.line, use.name))
    assert reported == expected


def test_the_fast_regexes_say_what_the_plain_ones_say_on_tricky_neighbours():
    text = "\n".join(
        [
            "bra L;",
            " xbra L; _bra L; $bra L; .bra L; (bra L; %bra L; bra.uni\tM ;",
            "L:",
            "  A1 : B2:: C3:",
            "\t$x:",
        ]
    )
    start = 1  # as a body: never at a line's start
    assert [m.span(2) for m in _PLAIN_BRANCH.finditer(text, start)] == [
        m.span(1) for m in _BRANCH_RE.finditer(text, start)
    ]
    assert [m.span(1) for m in _PLAIN_LABEL.finditer(text, start)] == [
        m.span(1) for m in _LABEL_RE.finditer(text, start)
    ]
    starts = line_starts(text)
    assert all(
        bisect.bisect_right(starts, i) - 1 == text.count("\n", 0, i) for i in range(len(text))
    )
