"""Every library kernel passes its GPU test at all of its spec's sizes (the odd ones included),
exactly as `ptxls test fewshot/kernels/NAME/kernel.ptx` runs it: spec from the spec.json
beside the PTX, numpy reference in float64, nvcc -O3 build of reference.cu checked too.
Skips with the reason where cuInit finds no device.

Runs where pygls/pytest-asyncio are absent (the GPU machine): plain pytest, asyncio.run inside.
Set PTXLS_GPU_TRANSCRIPT=FILE to also write every report's table there.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from ptxls.gputest.api import format_table, run_gpu_test_file
from ptxls.gputest.supervisor import Supervisor

from .device import HAVE_GPU, WHY

ROOT = Path(__file__).resolve().parents[2]
KERNELS = sorted(
    d.name for d in (ROOT / "fewshot" / "kernels").iterdir() if (d / "spec.json").is_file()
)


pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAVE_GPU, reason=WHY)]


@pytest.mark.parametrize("name", KERNELS)
def test_library_kernel_passes_at_every_size(name):
    ptx = ROOT / "fewshot" / "kernels" / name / "kernel.ptx"

    async def go():
        sup = Supervisor()
        try:
            return await run_gpu_test_file(str(ptx), name, supervisor=sup, time_it=False,
                                           timeout_s=60)  # fmt: skip
        finally:
            await sup.close()

    (report,) = asyncio.run(go())
    table = format_table(report)
    path = os.environ.get("PTXLS_GPU_TRANSCRIPT")
    if path:
        with open(path, "a") as f:
            f.write(f"## {name}\n\n{table}\n\n")
    assert report.status == "pass", table
    assert [c.n for c in report.cases] == report.sizes  # every size ran
    assert report.reference.startswith("numpy in float64"), report.reference
    assert "timed against nvcc -O3" in report.reference, report.reference
    for c in report.cases:  # the nvcc baseline computes the same function
        assert c.timing.get("baseline") == "ok", (c.n, c.timing)
