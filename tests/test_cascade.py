"""diagnostics/cascade.py: ptxas's cascade folded into its cause, the lint's words and fix kept."""

from __future__ import annotations

from ptxls.diagnostics.cascade import fold_cascade, rank
from ptxls.diagnostics.lints import lint_ptx
from ptxls.diagnostics.model import Problem, Severity

E = Severity.ERROR


def ptxas(line, col, end, message, severity=E):
    return Problem(line, col, end, severity, message, "ptxas")


def test_rank_orders_cause_before_consequence():
    assert rank("Unknown symbol '%f9'") == 0
    assert rank("Arguments mismatch for instruction 'add'") == 2
    assert rank("Label expected") == 1


def test_consequences_on_a_causes_line_fold_into_it_and_nothing_else_moves():
    problems = [
        ptxas(3, 4, 7, "Arguments mismatch for instruction 'add'"),
        ptxas(3, 12, 15, "Unknown symbol '%f9'"),
        ptxas(5, 4, 7, "Arguments mismatch for instruction 'mul'"),  # no cause on line 5
        ptxas(3, 0, 1, "Arguments mismatch for instruction 'add'", Severity.WARNING),
        Problem(3, 0, 2, E, "a lint of its own", "ptxls"),
    ]
    out = fold_cascade(problems, [])
    messages = [(p.line, p.source, p.severity, p.message) for p in out]
    assert messages == [
        (
            3,
            "ptxas",
            E,
            "Unknown symbol '%f9'; then, because of it: Arguments mismatch for instruction 'add'",
        ),
        (5, "ptxas", E, "Arguments mismatch for instruction 'mul'"),
        (3, "ptxas", Severity.WARNING, "Arguments mismatch for instruction 'add'"),
        (3, "ptxls", E, "a lint of its own"),
    ]


def test_two_consequences_are_both_said_once():
    out = fold_cascade(
        [
            ptxas(1, 9, 12, "Unknown symbol '%r9'"),
            ptxas(1, 0, 3, "Arguments mismatch for instruction 'add'"),
            ptxas(1, 0, 3, "Arguments mismatch for instruction 'add'"),
            ptxas(1, 0, 3, "Illegal operand type to instruction 'add'"),
        ],
        [],
    )
    assert [p.message for p in out] == [
        "Unknown symbol '%r9'; then, because of it: Arguments mismatch for instruction 'add'; "
        "Illegal operand type to instruction 'add'"
    ]


PTX = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<2>;
    mov.u32 %r4, %tid.x;
    add.s32 %r7, %r4, 1;
    ld.param.u64 %rd1, [p];
    st.global.u32 [%rd1], %r7;
    ret;
}
"""


def test_the_lint_fix_widens_the_range_to_the_highest_register_used():
    lints = [p for p in lint_ptx(PTX) if p.code == "undeclared-register"]
    assert {p.fix for p in lints} == {lints[0].fix}  # one edit for every use of the prefix
    fix = lints[0].fix
    assert fix.title == "Declare %r<8> on line 6 (covers %r3 to %r7)"
    line = PTX.splitlines()[fix.line]
    assert line[fix.col : fix.col + len(fix.old_text)] == "3"
    fixed = PTX.splitlines()
    fixed[fix.line] = line[: fix.col] + fix.new_text + line[fix.col + len(fix.old_text) :]
    assert not [p for p in lint_ptx("\n".join(fixed)) if p.code == "undeclared-register"]


def test_no_fix_where_no_range_of_that_prefix_exists():
    text = PTX.replace(".reg .b32 %r<3>;", ".reg .b32 %x;")
    lints = [p for p in lint_ptx(text) if p.code == "undeclared-register"]
    assert lints and all(p.fix is None for p in lints)


def test_ptxas_error_at_the_lints_token_takes_its_words_and_fix():
    lints = [p for p in lint_ptx(PTX) if p.code == "undeclared-register"]
    first = lints[0]
    said = ptxas(first.line, first.col, first.end_col, "Unknown symbol '%r4'")
    (out,) = fold_cascade([said], lints)
    assert out.message == f"Unknown symbol '%r4' — {first.message}"
    assert out.fix == first.fix
