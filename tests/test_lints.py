"""The instant checks never fire on PTX that nvcc generates and never raise on garbage.

What they find, case by case, is the annotated corpus in tests/data/ptx_cases/ (test_ptx_cases.py).
"""

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
