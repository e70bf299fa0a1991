"""GPU tests of the harness on a real device: vec_add passes, and every bad kernel in
examples/gpu/bad/ gets its precise message, after which a good test passes on the same
supervisor. Skip with the reason where cuInit finds no device.

Runs where pygls/pytest-asyncio are absent (the GPU machine): plain pytest, asyncio.run inside.
Set PTXLS_GPU_TRANSCRIPT=FILE to also write every report's table there.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from ptxls.gputest.api import format_table, run_gpu_test
from ptxls.gputest.supervisor import Supervisor

from .device import HAVE_GPU, WHY

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
BAD = EXAMPLES / "gpu" / "bad"


pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAVE_GPU, reason=WHY)]


def _transcript(title: str, text: str) -> None:
    path = os.environ.get("PTXLS_GPU_TRANSCRIPT")
    if path:
        with open(path, "a") as f:
            f.write(f"## {title}\n\n{text}\n\n")


async def _test_file(sup: Supervisor, ptx: Path, **kw):
    return await run_gpu_test(ptx.read_text(), "vec_add", ptx_path=str(ptx), supervisor=sup, **kw)


def test_vec_add_passes_against_nvcc_with_ratio_and_bandwidth():
    async def go():
        sup = Supervisor()
        try:
            return await _test_file(sup, EXAMPLES / "vec_add.ptx"), sup.starts
        finally:
            await sup.close()

    report, starts = asyncio.run(go())
    _transcript("examples/vec_add.ptx", format_table(report))
    assert report.status == "pass", format_table(report)
    assert [c.n for c in report.cases] == [0, 1, 255, 257, 3007, 1 << 24]
    assert report.load_path.startswith("cubin from ptxas")
    assert report.reference.startswith("nvcc -O3 vec_add.cu")
    assert report.ratio is not None and report.ratio > 0
    big = report.timed_case
    assert big.n == 1 << 24 and big.gbps > 0 and report.copy_ceiling_gbps > 0
    assert starts == 1


# kernel file → (expected status, the size of the first failing case, text the report must hold)
BAD_KERNELS = {
    "no_bounds_check": (
        "fail",
        0,
        "out-of-bounds write: c (length 0) was written at 256 elements past the end (c[0..255])",
    ),
    "writes_nothing": ("fail", 1, "c: 1 of 1 wrong (1 never written)"),
    "writes_element0": (
        "fail",
        255,
        "c: 254 of 255 wrong (254 never written); first wrong: c[1] expected",
    ),
    "writes_input": ("fail", 1, "input a was modified: 1 of 1 elements changed (first at 0)"),
    "v4_stride": ("fail", 255, "first wrong: c[4] expected"),
    "misaligned_v4": (
        "fail",
        255,
        "CUDA_ERROR_MISALIGNED_ADDRESS (misaligned address) in case n=255",
    ),
    "trap": ("fail", 1, "CUDA_ERROR_LAUNCH_FAILED (unspecified launch failure) in case n=1"),
    "infinite_loop": (
        "timeout",
        1,
        "timeout: no answer within 3 s while: case 2/6 n=1: running vec_add",
    ),
}


def test_bad_kernels_get_precise_messages_and_the_next_good_test_passes():
    good = EXAMPLES / "vec_add.ptx"

    async def go():
        sup = Supervisor()
        results = {}
        try:
            for name in BAD_KERNELS:
                bad = await _test_file(sup, BAD / f"{name}.ptx", timeout_s=3)
                after = await _test_file(sup, good, sizes=[0, 1, 257, 3007])
                results[name] = (bad, after, sup.starts)
        finally:
            await sup.close()
        return results

    results = asyncio.run(go())
    failures = []
    for name, (status, n, text) in BAD_KERNELS.items():
        bad, after, starts = results[name]
        table = format_table(bad)
        _transcript(f"examples/gpu/bad/{name}.ptx (worker starts so far: {starts})", table)
        first = bad.failing_case
        if bad.status != status or first is None or first.n != n or text not in table:
            failures.append(f"{name}: expected {status} at n={n} with {text!r}, got:\n{table}")
        if after.status != "pass":
            failures.append(f"good test after {name} did not pass:\n{format_table(after)}")
    assert not failures, "\n\n".join(failures)
    # Faults and hangs replaced the worker; plain wrong answers kept it warm.
    starts = {name: results[name][2] for name in BAD_KERNELS}
    assert starts["writes_input"] == starts["no_bounds_check"]
    assert starts["trap"] > starts["misaligned_v4"] > starts["v4_stride"]
