"""``ptxls test FILE.cu --sanitize`` on a real device: each planted CUDA kernel of
tests/data/sanitizer/planted/planted_cuda.cu is reported on the .cu line of its bug (nvcc -lineinfo's
PTX names the .cu lines), its fixed twin is clean, and the CLI prints the .cu line. Skips with the
reason where cuInit finds no device, no compute-sanitizer or no nvcc is installed.

Plain pytest with asyncio.run inside (the GPU machine has no pytest-asyncio)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ptxls.gputest.sanitize import SanitizeOptions
from ptxls.gputest.sanitize_cuda import sanitize_cuda
from ptxls.gputest.supervisor import Supervisor
from ptxls.toolchain.discovery import find_nvcc
from ptxls.toolchain.sanitizer import find_sanitizer

from .device import HAVE_GPU, WHY, missing_tool

ROOT = Path(__file__).resolve().parents[2]
CU = ROOT / "tests" / "data" / "sanitizer" / "planted" / "planted_cuda.cu"


pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not HAVE_GPU, reason=WHY),
    pytest.mark.skipif(
        bool(missing_tool(find_sanitizer)), reason=missing_tool(find_sanitizer) or "-"
    ),
    pytest.mark.skipif(bool(missing_tool(find_nvcc)), reason=missing_tool(find_nvcc) or "-"),
]


def sanitize(kernel: str, *tools: str):
    async def go():
        probe = Supervisor()  # closed in this loop (a worker left to the GC warns at exit)
        try:
            return await sanitize_cuda(CU.read_text(), kernel, cuda_path=str(CU),
                                       options=SanitizeOptions(tools=tools, probe=probe))  # fmt: skip
        finally:
            await probe.close()

    return asyncio.run(go())


def line_of(tag: str) -> int:
    return next(i + 1 for i, t in enumerate(CU.read_text().splitlines()) if tag in t)


def test_an_out_of_bounds_shared_write_is_reported_on_its_cu_line():
    result = sanitize("reverse_tile_oob", "memcheck")
    assert result.status == "findings", result.summary + "\n" + "\n".join(result.notes)
    bad = [f for f in result.findings if f.kind == "invalid-access"]
    assert bad, [f.text for f in result.findings]
    [write] = bad
    assert write.file == "" and write.line == line_of("tile[256 - tid] ="), write.text
    assert "invalid __shared__ write of 4 bytes" in write.text and "out of bounds" in write.text
    assert write.line_texts == ["tile[256 - tid] = i < n ? x[i] : 0.0f;"]


def test_the_fixed_twin_is_clean_under_memcheck_and_racecheck():
    result = sanitize("reverse_tile", "memcheck", "racecheck")
    assert result.status == "clean", result.summary
    assert all(run.numbers == "pass" for run in result.runs)


def test_a_missing_syncthreads_is_a_race_on_the_cu_store_and_load():
    result = sanitize("swap_warps_no_sync", "racecheck")
    assert result.status == "findings", result.summary
    [race] = result.findings
    assert race.kind == "race" and race.address.startswith("0x")
    assert (race.line, race.other_line) == (
        line_of("planted: the store another warp reads"),
        line_of("planted: the load that races"),
    ), race.text
    assert "a __syncthreads() between them" in race.text


def test_the_cli_prints_the_cu_line():
    r = subprocess.run(
        [sys.executable, "-m", "ptxls.cli.main", "test", str(CU), "--kernel", "reverse_tile_oob",
         "--sanitize", "memcheck"],
        capture_output=True, text=True, timeout=300, cwd=ROOT, env=dict(os.environ),
    )  # fmt: skip
    assert r.returncode == 1, r.stdout + r.stderr  # a finding
    line = line_of("tile[256 - tid] =")
    assert f"on line {line}" in r.stdout and f"{line} | tile[256 - tid] = i < n" in r.stdout
