"""frontend/sanitizer_report.py on compute-sanitizer's real output: the logs under
tests/data/sanitizer/h200/ are what the H200's compute-sanitizer 2025.3.1 (and the pip wheel's
2026.4 for *-wheel.log) wrote for the planted kernels in tests/data/sanitizer/planted/ and two
library kernels (bench/sanitizer_gpu_checks.sh); cpu-no-driver-memcheck.log is the wheel's binary on
a machine without a driver."""

from __future__ import annotations

from pathlib import Path

import pytest

from ptxls.frontend import sanitizer_report as sr
from ptxls.frontend.sanitizer_report import Location, parse_location, parse_sanitizer_output

DATA = Path(__file__).parent / "data" / "sanitizer"


def log(name: str, tool: str = "") -> sr.SanitizerReport:
    path = DATA / name if name.startswith("cpu") else DATA / "h200" / name
    return parse_sanitizer_output(path.read_text(), tool)


@pytest.mark.parametrize(
    "name", ["swap_warps_no_barrier-racecheck.log", "swap_warps_no_barrier-racecheck-wheel.log"]
)
def test_racecheck_hazards_name_both_lines_the_shared_byte_and_the_threads(name):
    r = log(name)
    assert r.tool == "racecheck"
    assert (r.racecheck_hazards, r.racecheck_errors, r.racecheck_warnings) == (100, 4097, 0)
    assert len(r.records) == 100 and {x.kind for x in r.records} == {sr.HAZARD}
    first = r.records[0]
    assert first.severity == sr.ERROR and first.hazard_type == "RAW" and first.space == "shared"
    assert first.kernel == "swap_warps_no_barrier"
    assert first.lines == [("missing_barrier.ptx", 42), ("missing_barrier.ptx", 47)]
    assert first.accesses == ["Write", "Read"]
    assert [side for side, _ in first.threads] == ["Write", "Read"]
    # racecheck is byte-accurate: consecutive records are consecutive bytes of one float
    assert [x.address for x in r.records[:4]] == [first.address + i for i in range(4)]
    assert first.block is not None and first.threads[1][1][0] - first.threads[0][1][0] == 32
    assert not r.clean


def test_memcheck_out_of_bounds_shared_read_and_the_launch_failure_after_it():
    r = log("stencil_no_halo-memcheck.log", "memcheck")
    bad = [x for x in r.records if x.kind == sr.INVALID_ACCESS]
    assert len(bad) == 4  # thread 255 of each of the 4 blocks
    for x in bad:
        assert (x.space, x.access, x.size) == ("shared", "read", 4)
        assert x.locations[0] == Location("stencil_no_halo", 0x140, "shared_oob.ptx", 48)
        assert x.thread == (255, 0, 0) and x.address == 0x800
        assert x.address_note == "is out of bounds"
    assert sorted(x.block for x in bad) == [(b, 0, 0) for b in range(4)]
    calls = [x for x in r.records if x.kind == sr.API_ERROR]
    assert len(calls) == 4 and "CUDA_ERROR_LAUNCH_FAILED from cuCtxSynchronize" in calls[0].details
    # the worker ends itself on the sticky error; compute-sanitizer then says so and sums up
    assert [x.message for x in r.tool_errors] == ["Target application returned an error"]
    assert r.error_summary == 8 and not r.clean


def test_a_log_cut_before_its_summary_still_reads():
    """The first H200 run killed the sanitizer with the worker (no grace): no summary."""
    r = log("stencil_no_halo-memcheck-killed.log", "memcheck")
    assert len([x for x in r.records if x.kind == sr.INVALID_ACCESS]) == 4
    assert r.error_summary is None and not r.clean


def test_memcheck_every_thread_past_the_tile_is_one_group():
    r = log("index_scaled_twice-memcheck.log", "memcheck")
    assert len([x for x in r.records if x.kind == sr.INVALID_ACCESS]) == 100
    assert all(x.access == "write" for x in r.records if x.kind == sr.INVALID_ACCESS)
    assert (r.error_summary, r.not_printed) == (772, 672)  # 3 blocks x 192 threads + 4 calls
    [group] = sr.group_records(r.findings[:100])
    assert group.count == 100 and group.first.lines == [("shared_oob.ptx", 88)]
    assert group.threads[0] == (64, 0, 0)  # tid * 16 passes the 1 KiB tile from thread 64 on
    assert group.address_range[0] == 0x800 and (group.addresses[1] - group.addresses[0]) == 16


def test_initcheck_uninitialized_read_and_the_errors_past_the_print_limit():
    r = log("max_into_out-initcheck.log", "initcheck")
    assert {x.kind for x in r.records} == {sr.UNINITIALIZED}
    x = r.records[0]
    assert (x.tool, x.space, x.size, x.access) == ("initcheck", "global", 4, "read")
    assert x.lines == [("uninit_read.ptx", 38)] and x.address is not None
    assert r.error_summary == 257 and r.not_printed == 157  # the second line does not overwrite


@pytest.mark.parametrize(
    "name",
    [
        "swap_warps-racecheck.log",
        "swap_warps_no_barrier-memcheck.log",
        "swap_warps_no_barrier-synccheck.log",
        "max_into_out-memcheck.log",
        "library-vec_add-memcheck.log",
        "library-sgemm_128x128-racecheck.log",
    ],
)
def test_clean_runs_are_clean(name):
    r = log(name)
    assert r.clean and not r.records
    assert r.error_summary == 0 or r.racecheck_hazards == 0


def test_the_tools_own_failure_is_not_a_finding_and_not_clean():
    r = log("cpu-no-driver-memcheck.log", "memcheck")
    assert [x.message for x in r.tool_errors] == [
        "Error: process didn't terminate successfully",
        "Error: Target application terminated before first instrumented API call",
    ]
    assert "Unified Memory" in r.tool_errors[0].details[0]
    assert not r.findings and not r.clean


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("k+0x1b0 in k.ptx:31", Location("k", 0x1B0, "k.ptx", 31)),
        ("k+0x1b0", Location("k", 0x1B0)),
        ("sumKernel(int *, int *)+0x90 in block_error.cu:41",
         Location("sumKernel(int *, int *)", 0x90, "block_error.cu", 41)),
        ("0x00000070 in /tmp/x.cu:5:kernel(int*)", Location("kernel(int*)", 0x70, "/tmp/x.cu", 5)),
        ("unaligned_kernel():0x160 in memcheck_demo.cu:6",
         Location("unaligned_kernel()", 0x160, "memcheck_demo.cu", 6)),
        ("NVIDIA Internal [0x520]", Location("NVIDIA Internal [0x520]")),
    ],
)  # fmt: skip
def test_locations_in_every_format_seen(text, expected):
    assert parse_location(text) == expected


def test_a_race_analysis_record_and_synccheck_and_program_output():
    text = (
        "hello from the program\n"
        "========= COMPUTE-SANITIZER\n"
        "========= Error: Race reported between Write access at k+0x90 in k.ptx:41\n"
        "=========     and Read access at k+0x100 in k.ptx:51 [508 hazards]\n"
        "=========\n"
        "========= Barrier error detected. Divergent thread(s) in block\n"
        "=========     at k+0xf0 in k.ptx:79\n"
        "=========     by thread (37,0,0) in block (0,0,0)\n"
        "=========\n"
        "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n"
    )
    r = parse_sanitizer_output(text)
    race, barrier = r.records
    assert race.kind == sr.RACE and race.hazards == 508 and race.accesses == ["Write", "Read"]
    assert race.lines == [("k.ptx", 41), ("k.ptx", 51)]
    assert barrier.kind == sr.BARRIER and barrier.tool == "synccheck"
    assert barrier.lines == [("k.ptx", 79)] and barrier.thread == (37, 0, 0)
    assert r.racecheck_hazards == 1 and r.tool == "racecheck"


@pytest.mark.parametrize(
    "text",
    ["", "\x00\xff" * 100, "=========" * 1000, "=========     at \n" * 50,
     "========= Invalid __global__ read of size x bytes\n=========     by thread (a,b,c)\n",
     "========= ERROR SUMMARY: 99999999999999999999999 errors\n", None, 12],
)  # fmt: skip
def test_never_raises(text):
    r = parse_sanitizer_output(text)  # type: ignore[arg-type]
    assert isinstance(r, sr.SanitizerReport)
