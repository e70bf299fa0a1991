"""Data-driven: captured ptxas output (tests/data/ptxas_output/*.out) placed on the PTX beside
it must give exactly the problems in the matching .expect file (LINE:COL-ENDCOL, 1-based)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ptxls.diagnostics.engine import merge, split_lines
from ptxls.diagnostics.model import Problem, Severity
from ptxls.diagnostics.ptxas_output import parse_ptxas_output, place_messages

CASES = Path(__file__).parent / "data" / "ptxas_output"


@pytest.mark.parametrize("case", sorted(p.stem for p in CASES.glob("*.out")))
def test_captured_output_is_placed_as_expected(case: str):
    out = (CASES / f"{case}.out").read_text()
    lines = split_lines((CASES / f"{case}.ptx").read_text())
    problems = place_messages(parse_ptxas_output(out), lines)
    got = [
        f"{p.line + 1}:{p.col + 1}-{p.end_col + 1} {p.severity.value} {p.message}" for p in problems
    ]
    assert got == (CASES / f"{case}.expect").read_text().splitlines()


def test_jit_log_and_standalone_forms_parse_the_same():
    a = parse_ptxas_output((CASES / "standalone_errors.out").read_text())
    b = parse_ptxas_output((CASES / "jit_log.out").read_text())
    assert [(m.line, m.severity, m.text) for m in a] == [(m.line, m.severity, m.text) for m in b]
    assert b[0].file == "application ptx input"


def test_aborted_line_and_info_lines_are_not_messages():
    out = "ptxas info    : Used 12 registers\nptxas fatal   : Ptx assembly aborted due to errors\n"
    assert parse_ptxas_output(out) == []


def test_fatal_is_an_error_and_warning_a_warning():
    msgs = parse_ptxas_output((CASES / "warning_and_fatal.out").read_text())
    assert [m.severity for m in msgs] == [Severity.ERROR, Severity.WARNING]
    assert msgs[0].line is None


def test_token_match_is_whole_token():
    # '%r1' must not be found inside '%r10'
    problems = place_messages(
        parse_ptxas_output("ptxas x.ptx, line 1; error : Unknown symbol '%r1'"),
        ["  add.s32 %r10, %r1, 1;"],
    )
    assert (problems[0].col, problems[0].end_col) == (16, 19)


def test_message_without_token_covers_the_code_not_the_comment():
    problems = place_messages(
        parse_ptxas_output("ptxas x.ptx, line 1; error : syntax error"),
        ["    bogus stuff;   // a comment"],
    )
    assert (problems[0].col, problems[0].end_col) == (4, 16)


def test_line_past_the_end_is_clamped():
    problems = place_messages(parse_ptxas_output("ptxas x.ptx, line 99; error : oops"), ["a", "b"])
    assert problems[0].line == 1


def test_merge_drops_duplicates_and_lints_ptxas_already_reported():
    e = Severity.ERROR
    ptxas = [Problem(3, 4, 7, e, "Unknown symbol '%r6'", "ptxas")] * 2
    lints = [
        Problem(3, 4, 7, e, "register '%r6' is not declared", "ptxls"),
        Problem(5, 0, 3, e, "branch to unknown label 'X'", "ptxls"),
    ]
    merged = merge(lints, ptxas, cap=500)
    assert [(p.line, p.source) for p in merged] == [(3, "ptxas"), (5, "ptxls")]


def test_merge_caps_with_one_final_note():
    many = [Problem(i, 0, 1, Severity.ERROR, f"e{i}", "ptxas") for i in range(700)]
    merged = merge([], many, cap=500)
    assert len(merged) == 501
    assert merged[-1].severity is Severity.INFO and "200 more" in merged[-1].message
