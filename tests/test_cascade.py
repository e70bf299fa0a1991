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


LABELS = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<2>;
    ld.param.u32 %r1, [n];
    setp.eq.u32 %p1, %r1, 0;
    @%p1 bra Done;
    @%p1 bra LOOP_2;
    @%p1 bra LOOP3;
    @%p1 bra ELSEWHERE;
DONE:
LOOP1:
LOOP2:
    ret;
}
"""


def test_a_typod_label_gets_the_one_close_label_as_its_fix():
    by_name = {p.message.split("'")[1]: p for p in lint_ptx(LABELS) if p.code == "unknown-label"}
    done = by_name["Done"]
    assert done.message.endswith("did you mean 'DONE'?")
    assert done.fix.title == "Change to 'DONE' (a label of 'k')"
    line = LABELS.splitlines()[done.fix.line]
    assert line[done.fix.col : done.fix.col + len(done.fix.old_text)] == "Done"
    assert by_name["LOOP_2"].fix.new_text == "LOOP2"
    # LOOP3 is as close to LOOP1 as to LOOP2: no guess; ELSEWHERE is close to nothing
    assert by_name["LOOP3"].fix is None and by_name["ELSEWHERE"].fix is None
    assert "did you mean" not in by_name["ELSEWHERE"].message


WGMMA_LINE = "    wgmma.fence.sync.aligned;"


def test_an_instruction_the_header_cannot_have_gets_the_header_edit_as_its_fix():
    from ptxls.diagnostics.isa_lints import lint_availability

    text = LABELS.replace("    ret;", WGMMA_LINE + "\n    ret;")
    (needs,) = [p for p in lint_availability(text) if p.line == text.splitlines().index(WGMMA_LINE)]
    assert needs.code == "needs-arch-specific-target"
    assert (needs.fix.title, needs.fix.old_text, needs.fix.new_text) == (
        "Change .target sm_90 to sm_90a",
        "sm_90",
        "sm_90a",
    )
    assert text.splitlines()[needs.fix.line][needs.fix.col :].startswith("sm_90")

    old_isa = text.replace(".version 8.0", ".version 7.0")
    (needs,) = [p for p in lint_availability(old_isa) if p.code == "needs-newer-ptx-isa"]
    assert needs.fix.title == "Raise .version to 8.0" and needs.fix.old_text == "7.0"


def test_ptxas_error_at_an_isa_lints_token_takes_only_its_fix():
    from ptxls.diagnostics.isa_lints import lint_availability

    text = LABELS.replace("    ret;", WGMMA_LINE + "\n    ret;")
    (lint,) = lint_availability(text)
    said = ptxas(
        lint.line,
        lint.col,
        lint.col + 5,
        "Instruction 'wgmma.fence' not supported on .target 'sm_90'",
    )
    (out,) = fold_cascade([said], [lint])
    assert out.message == said.message and out.fix == lint.fix
