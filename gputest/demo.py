"""The GPU step of ``ptxls demo``: test examples/vec_add.ptx against examples/vec_add.cu when a
CUDA device is there, say why not when it is not. Returns True when the step behaved as expected
(passed, or no GPU to run on)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from .api import format_table, run_gpu_test_file
from .supervisor import Supervisor


async def _run(ptx: Path):
    sup = Supervisor()
    try:
        return await run_gpu_test_file(str(ptx), "vec_add", supervisor=sup, device="gpu")
    finally:
        await sup.close()


def gpu_demo_step(examples: Path, out=None) -> bool:
    out = out or sys.stdout
    print("\n== 3. GPU test of examples/vec_add.ptx (against nvcc -O3 of vec_add.cu) ==", file=out)
    ptx = examples / "vec_add.ptx"
    if not ptx.is_file():
        print(f"(no {ptx}: step skipped)", file=out)
        return True
    [report] = asyncio.run(_run(ptx))
    if report.status == "no-gpu":
        print(f"skipped: {report.summary} — ptxls test needs a CUDA device", file=out)
        return True
    print(format_table(report), file=out)
    return report.passed
