"""Plain text for a terminal from the Markdown the hovers use: the GPU-test table a person sees
from `ptxls test` must read as aligned columns with no Markdown marks."""

from __future__ import annotations

from ptxls.cli.output_format import markdown_to_text
from ptxls.gputest.report import CaseResult, TestReport, format_table

LAUNCH = {"grid": [1, 1, 1], "block": [256, 1, 1], "shared": 0}


def _report() -> TestReport:
    cases = [
        CaseResult(0, 0, 11, True, launch=LAUNCH),
        CaseResult(1, 257, 12, False, 1.0, 0.0035, 0.0034, launch=LAUNCH, messages=["c[3]: expected 1, got 0"]),
        CaseResult(2, 1 << 24, 13, True, 0.0, 0.0662, 0.0663, 3039.0, launch=LAUNCH),
    ]  # fmt: skip
    return TestReport("vec_add", "fail", cases=cases, sizes=[0, 257, 1 << 24], seed=7)


def test_gpu_test_table_as_plain_text():
    markdown = format_table(_report())
    text = markdown_to_text(markdown)
    assert "|" in markdown and "**" in markdown  # the hover's form has both
    assert "|" not in text and "**" not in text and "`" not in text
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.lstrip().startswith("n "))
    assert lines[header].split() == ["n", "result", "max", "rel", "err", "time", "ref", "time"]
    rows = lines[header + 2 : header + 5]
    # right-aligned numbers end in the same column; every row is as wide as the rule under the header
    assert [r.split()[0] for r in rows] == ["0", "257", "16777216"]
    assert len({len(r.split()[0]) + r.index(r.split()[0]) for r in rows}) == 1
    assert "FAIL" in rows[1] and "pass" in rows[0]


def test_text_keeps_prose_and_drops_only_marks():
    assert (
        markdown_to_text("**kernel `k`** — ptxas -v\n- registers: 12")
        == "kernel k — ptxas -v\n- registers: 12"
    )
    assert markdown_to_text("_NVIDIA H200; seed 7_") == "NVIDIA H200; seed 7"
