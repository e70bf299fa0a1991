"""The instant checks: they find what is certain, and never fire on PTX that nvcc generates."""

from __future__ import annotations

from pathlib import Path

import pytest

from ptxls.diagnostics.lints import lint_ptx

from toolchain_helpers import nvcc_id, nvcc_ptx, nvccs

KERNELS = Path(__file__).parent / "data" / "cuda_kernels"
EXAMPLES = Path(__file__).parent.parent / "examples"
GOOD = (EXAMPLES / "vec_add.ptx").read_text()


@pytest.mark.parametrize("nvcc", nvccs(), ids=nvcc_id)
@pytest.mark.parametrize("cu", sorted(KERNELS.glob("*.cu")), ids=lambda p: p.stem)
@pytest.mark.parametrize("opt", ["-O3", "-G"], ids=["O3", "debug"])
def test_no_false_positive_on_nvcc_output(nvcc, cu, opt, tmp_path):
    ptx = nvcc_ptx(nvcc, cu, tmp_path, opt=opt)
    assert ".entry" in ptx
    assert lint_ptx(ptx) == []


def test_clean_hand_written_example_is_clean():
    assert lint_ptx(GOOD) == []


def test_register_outside_its_range_is_reported_on_the_token():
    text = GOOD.replace(
        "mad.lo.s32      %r5, %r2, %r3, %r4;", "mad.lo.s32      %r6, %r2, %r3, %r4;"
    )
    problems = lint_ptx(text)
    assert len(problems) == 1
    p = problems[0]
    line = text.splitlines()[p.line]
    assert line[p.col : p.end_col] == "%r6"
    assert "%r<6>" in p.message and "%r0 to %r5" in p.message


def test_undeclared_register_family():
    problems = lint_ptx(GOOD.replace("setp.ge.s32     %p1,", "setp.ge.s32     %q1,"))
    assert [p.message for p in problems] == ["register '%q1' is not declared"]


def test_special_registers_are_not_undeclared():
    text = GOOD.replace(
        "mov.u32         %r4, %tid.x;",
        "mov.u32         %r4, %laneid;\n    mov.u64 %rd1, %globaltimer;\n    mov.u32 %r4, %envreg3;",
    )
    assert lint_ptx(text) == []


def test_branch_to_unknown_label():
    problems = lint_ptx(GOOD.replace("@%p1 bra        DONE;", "@%p1 bra        DONEE;"))
    assert len(problems) == 1 and "DONEE" in problems[0].message


def test_missing_version_and_target():
    text = "\n".join(
        line for line in GOOD.splitlines() if not line.startswith((".version", ".target"))
    )
    codes = {p.code for p in lint_ptx(text)}
    assert codes == {"missing-version", "missing-target"}


@pytest.mark.parametrize(
    "edit, message",
    [
        (("DONE:\n    ret;\n}", "DONE:\n    ret;\n"), "never closed"),
        (("DONE:\n    ret;\n}", "DONE:\n    ret;\n}\n}"), "without a matching"),
    ],
    ids=["missing-close", "extra-close"],
)
def test_unbalanced_braces(edit, message):
    problems = lint_ptx(GOOD.replace(*edit))
    assert any(message in p.message for p in problems)


def test_braces_in_comments_and_vector_operands_do_not_count():
    text = GOOD.replace(
        "DONE:",
        "    // } stray brace in a comment {\n    /* { */\n    mov.b64 %rd1, {%r1, %r2};\nDONE:",
    )
    assert lint_ptx(text) == []


def test_non_ascii_character_is_reported_where_it_is():
    text = GOOD.replace("// vec_add written by hand", "// vec_add écrit à la main")
    (p,) = lint_ptx(text)
    assert (p.line, p.col) == (0, 11) and "U+00E9" in p.message


@pytest.mark.parametrize(
    "junk",
    [
        "",
        "\x00" * 10,
        "}}}{{{",
        ".entry",
        ".entry (",
        ".reg .b32 %r<;",
        "{" * 5000,
        "%" * 1000,
        ".func (.param .b32 r) f(" * 50,
    ],
)
def test_never_raises_on_garbage(junk):
    lint_ptx(junk)
    lint_ptx(GOOD[: len(GOOD) // 2] + junk)


def test_random_damage_never_raises():
    """Thousands of random edits of real PTX (deleted, duplicated, swapped spans; stray braces,
    quotes, comment openers): the instant checks answer every one without an exception."""
    import random

    from ptxls.diagnostics.engine import instant_check

    base = GOOD + (KERNELS.parent / "ptxas_output" / "warning_and_fatal.ptx").read_text()
    rng = random.Random(1234)
    junk = [
        "{",
        "}",
        "/*",
        "*/",
        "//",
        '"',
        "%",
        ".reg",
        ".entry",
        "(",
        ")",
        ";",
        "<",
        ">",
        "\x00",
        "é",
        "\r",
    ]
    for _ in range(2000):
        text = base
        for _ in range(rng.randint(1, 4)):
            i, j = sorted(rng.randrange(len(text) + 1) for _ in range(2))
            op = rng.randrange(3)
            if op == 0:
                text = text[:i] + text[j:]
            elif op == 1:
                text = text[:i] + text[i:j] * 2 + text[j:]
            else:
                text = text[:i] + rng.choice(junk) + text[i:]
        module, problems = instant_check(text)
        last_line = len(text.replace("\r\n", "\n").replace("\r", "\n").split("\n")) - 1
        for p in problems:  # every problem points inside the text
            assert (
                0 <= p.line <= last_line and p.col >= 0 and (p.end_col >= p.col or p.end_col == 0)
            )
