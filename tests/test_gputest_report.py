"""The report's two readings: the table (hover, CLI) and the failure text for the LLM."""

from __future__ import annotations

from ptxls.gputest.report import CaseResult, TestReport, failure_feedback, format_table

LAUNCH = {"grid": [2, 1, 1], "block": [256, 1, 1], "shared": 0}


def _report(**kw) -> TestReport:
    cases = [
        CaseResult(0, 0, 11, True, launch=LAUNCH),
        CaseResult(1, 1, 12, True, 0.0, 0.0034, 0.0033, 0.0, launch=LAUNCH),
        CaseResult(2, 257, 13, False, float("inf"), 0.0035, 0.0034, 1.0, launch=LAUNCH, outputs=[{"name": "c"}],
                   messages=["c: 255 of 257 wrong (255 never written); first wrong: c[2] expected 0.5 got unwritten"]),
        CaseResult(3, 1 << 24, 14, True, 0.0, 0.0662, 0.0663, 3039.0, launch={"grid": [65536, 1, 1], "block": [256, 1, 1], "shared": 0}),
    ]  # fmt: skip
    base = dict(kernel="vec_add", status="fail", summary="case n=257: c: 255 of 257 wrong",
                cases=cases, sizes=[0, 1, 257, 1 << 24], seed=11, reference="nvcc -O3 vec_add.cu",
                load_path="cubin from ptxas 13.0 -arch=sm_90", copy_ceiling_gbps=4100.0,
                device={"name": "NVIDIA H200", "arch": "sm_90", "driver_cuda": "13.0"})  # fmt: skip
    base.update(kw)
    return TestReport(**base)


def test_table_has_a_row_per_size_then_ratio_and_bandwidth_at_the_largest():
    table = format_table(_report())
    assert table.startswith("**GPU test vec_add: FAIL** — 3/4 cases pass")
    assert "| 257 | **FAIL** | inf | 3.5 µs | 3.4 µs |" in table
    assert "| 16777216 | pass | 0 | 66.2 µs | 66.3 µs |" in table
    assert "time vs reference at n=16777216: **1.00×** (66.2 µs vs 66.3 µs" in table
    assert (
        "effective bandwidth at n=16777216: 3039 GB/s = 74% of the measured copy ceiling (4100 GB/s)"
        in table
    )
    assert "failed case n=257 (seed 13, grid=2 block=256 shared=0):" in table
    assert (
        "NVIDIA H200 (sm_90, driver CUDA 13.0); loaded as cubin from ptxas 13.0 -arch=sm_90"
        in table
    )


def test_a_run_that_stopped_early_lists_sizes_not_run_and_claims_no_speed():
    r = _report(
        status="timeout", summary="timeout: no answer within 3 s", cases=_report().cases[:2]
    )
    table = format_table(r)
    assert "| 257 | not run | — | — | — |" in table and "| 16777216 | not run |" in table
    assert "time vs reference" not in table and "GB/s" not in table


def test_failure_feedback_names_case_indices_values_counts_and_launch():
    text = failure_feedback(_report())
    assert "GPU test of kernel vec_add failed (fail)." in text
    assert "Case n=257 (case 3 of 4, seed 13), launch grid=2 block=256 shared=0:" in text
    assert (
        "c: 255 of 257 wrong (255 never written); first wrong: c[2] expected 0.5 got unwritten"
        in text
    )
    assert "Passing sizes: 0, 1, 16777216." in text


def test_passing_report_feedback_and_no_gpu_table():
    ok = _report(status="pass", cases=[c for c in _report().cases if c.passed], summary="")
    assert failure_feedback(ok) == "GPU test of vec_add passed all 3 cases."
    no = TestReport("vec_add", "no-gpu", summary="no CUDA device (no driver)")
    assert format_table(no).startswith("**GPU test vec_add: NO GPU**\n\nno CUDA device (no driver)")
