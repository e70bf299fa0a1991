"""compute-sanitizer on a real device: each planted kernel (tests/data/sanitizer/planted/) is
reported on the PTX line of its bug, the fixed twin and a library kernel are clean. Skips with the
reason where cuInit finds no device or no compute-sanitizer is installed.

Plain pytest with asyncio.run inside (the GPU machine has no pytest-asyncio)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ptxls.gputest.sanitize import SanitizeOptions, sanitize_ptx
from ptxls.gputest.supervisor import Supervisor
from ptxls.toolchain.sanitizer import find_sanitizer

from .device import HAVE_GPU, WHY, missing_tool

ROOT = Path(__file__).resolve().parents[2]
PLANTED = ROOT / "tests" / "data" / "sanitizer" / "planted"


pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not HAVE_GPU, reason=WHY),
    pytest.mark.skipif(
        bool(missing_tool(find_sanitizer)), reason=missing_tool(find_sanitizer) or "-"
    ),
]


def sanitize(path: Path, kernel: str, *tools: str):
    async def go():
        probe = Supervisor()  # closed in this loop (a worker left to the GC warns at exit)
        try:
            return await sanitize_ptx(path.read_text(), kernel, ptx_path=str(path),
                                      options=SanitizeOptions(tools=tools, probe=probe))  # fmt: skip
        finally:
            await probe.close()

    return asyncio.run(go())


def line_of(path: Path, tag: str) -> int:
    return next(i + 1 for i, t in enumerate(path.read_text().splitlines()) if tag in t)


def test_a_missing_barrier_is_a_race_on_the_store_and_the_load():
    path = PLANTED / "missing_barrier.ptx"
    result = sanitize(path, "swap_warps_no_barrier", "racecheck")
    assert result.status == "findings", result.summary
    [race] = result.findings
    assert race.kind == "race" and race.address.startswith("0x")
    assert (race.line, race.other_line) == (line_of(path, "tile[tid] = x[i]"),
                                            line_of(path, "tile[tid ^ 32]: another warp"))  # fmt: skip


def test_the_same_kernel_with_its_barrier_is_clean():
    result = sanitize(PLANTED / "missing_barrier.ptx", "swap_warps", "memcheck", "racecheck")
    assert result.status == "clean", result.summary


@pytest.mark.parametrize(
    ("kernel", "tag", "access"),
    [("stencil_no_halo", "tile[256] for thread 255", "read"),
     ("index_scaled_twice", "past the tile for tid >= 64", "write")],
)  # fmt: skip
def test_out_of_bounds_shared_accesses_on_their_lines(kernel, tag, access):
    path = PLANTED / "shared_oob.ptx"
    result = sanitize(path, kernel, "memcheck")
    [bad] = [f for f in result.findings if f.kind == "invalid-access"]
    assert bad.line == line_of(path, tag)
    assert f"invalid __shared__ {access} of 4 bytes" in bad.text and "out of bounds" in bad.text


def test_an_uninitialised_global_read_under_initcheck_only():
    path = PLANTED / "uninit_read.ptx"
    result = sanitize(path, "max_into_out", "memcheck", "initcheck")
    memcheck, initcheck = result.runs
    assert not memcheck.findings and memcheck.numbers == "pass"  # the numbers hide it
    [read] = initcheck.findings
    assert read.kind == "uninitialized-read"
    assert read.line == line_of(path, "before anything wrote it")


def test_a_library_kernel_is_clean():
    path = ROOT / "fewshot" / "kernels" / "reduce_sum" / "kernel.ptx"
    result = sanitize(path, "reduce_sum", "memcheck", "racecheck")
    assert result.status == "clean", result.summary
    assert all(run.numbers == "pass" for run in result.runs)
