"""The CPU side of timing and benchmarking: which module globals the harness resets, how a
benchmark row is read from a test report (ratios as "times faster", flagged kernels get no
ratio), and what the table says. The GPU side is tests/gpu/test_library_cheaters.py."""

from __future__ import annotations

from ptxls.frontend.ptx import module_globals
from ptxls.gputest.bench import format_bench, geomean, row_from_report
from ptxls.gputest.report import CaseResult, TestReport


def test_module_globals_are_found_in_declarations_not_in_instructions_or_comments():
    ptx = """
    .visible .global .align 4 .u32 count = 0;
    .global .align 16 .b8 cache[1024];
    .extern .global .u32 elsewhere;
    // .global .u32 commented_out;
    /* .global .f32 also_commented; */
    .visible .entry k(.param .u64 p) {
        ld.global.f32 %f1, [p];
        cvta.to.global.u64 %rd1, %rd2;
    }
    """
    assert module_globals(ptx) == ["count", "cache"]


def _report(case: CaseResult, ceiling: float = 4000.0) -> TestReport:
    return TestReport("k", "pass", cases=[case], sizes=[case.n], copy_ceiling_gbps=ceiling)


def test_row_reads_ratios_as_times_faster_and_the_share_of_the_ceiling():
    timing = {"min_ms": 0.9, "max_ms": 1.3, "runs": 20, "ref_min_ms": 1.1, "ref_max_ms": 1.4,
              "torch_ms": 2.0, "torch_op": "add", "torch_check": "ok", "bound": "memory"}  # fmt: skip
    case = CaseResult(0, 1 << 28, 7, True, time_ms=1.0, ref_time_ms=1.2, gbps=3600.0, timing=timing)
    row = row_from_report(_report(case), "p.ptx")
    assert row.vs_nvcc == 1.2 and row.vs_torch == 2.0
    assert row.pct_ceiling == 90.0 and row.runs == 20 and not row.flags
    table = format_bench([row], {"name": "NVIDIA H200"})
    assert "| k | 268435456 | pass | 1.000 ms (900.0 µs–1.300 ms) | 1.200 ms | 1.20× |" in table
    assert "90 %" in table and "geometric mean vs nvcc -O3: **1.20×**" in table


def test_a_flagged_kernel_gets_no_time_and_the_table_says_why():
    flag = "module .global variable(s) cache cannot be reset between launches: ... no time"
    case = CaseResult(0, 1 << 20, 7, True, time_ms=None, ref_time_ms=1.0,
                      timing={"flags": [flag]})  # fmt: skip
    row = row_from_report(_report(case), "p.ptx")
    assert row.time_ms is None and row.vs_nvcc is None and row.flags == [flag]
    table = format_bench([row])
    assert "pass (flagged)" in table and f"- k: {flag}" in table


def test_a_wrong_nvcc_baseline_and_a_torch_mismatch_are_reported():
    timing = {"baseline": "c: 3 of 10 wrong", "torch_check": "shape differs: torch 5 elements"}
    case = CaseResult(0, 10, 7, True, time_ms=1.0, ref_time_ms=1.0, timing=timing)
    table = format_bench([row_from_report(_report(case), "p.ptx")])
    assert "the nvcc build is wrong: c: 3 of 10 wrong" in table
    assert "torch result shape differs" in table


def test_geomean_ignores_missing_ratios():
    assert geomean([2.0, 0.5, None]) == 1.0
    assert geomean([]) is None


def test_the_test_table_shows_flags_and_a_wrong_baseline():
    from ptxls.gputest.report import format_table

    timing = {"flags": ["runs 9.0× faster when launched again ... skips work"],
              "baseline": "c: 2 of 9 wrong"}  # fmt: skip
    case = CaseResult(0, 9, 7, True, time_ms=1.0, timing=timing)
    table = format_table(TestReport("k", "pass", cases=[case], sizes=[9]))
    assert "- n=9: flagged: runs 9.0× faster" in table
    assert "- n=9: the nvcc build of the reference is wrong: c: 2 of 9 wrong" in table
