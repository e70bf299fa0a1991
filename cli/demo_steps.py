"""The lowering and GPU-test steps of ``ptxls demo``; the demo itself is ``demo.py``.

- Lowering: examples/vec_add.cu through the nvcc reference (offline), and through the LLM loop
  when an endpoint is configured. Results go to a temporary folder, never into examples/;
  what a person would get is printed.
- GPU test: examples/vec_add.ptx against examples/vec_add.cu when a CUDA device is there; why
  not when it is not.

Each returns True when the step behaved as expected (passed, or nothing to run it on).
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
from pathlib import Path


def _show(outcome, out) -> None:
    header = [ln for ln in outcome.ptx.splitlines() if ln.startswith("// ")][:9]
    entry = next((ln for ln in outcome.ptx.splitlines() if ".entry" in ln), "")
    for ln in header:
        print("    " + ln, file=out)
    print("    ...\n    " + entry.strip(), file=out)


async def _lower(examples: Path, out) -> bool:
    from ptxls.lowering.compiler_backend import lower_nvcc
    from ptxls.lowering.service import LowerJob, lower_llm
    from ptxls.lowering.settings import from_env

    src = examples / "vec_add.cu"
    if not src.exists():
        print(f"(no {src.name} in {examples})", file=out)
        return False
    with tempfile.TemporaryDirectory(prefix="ptxls-demo-") as tmp:
        cu = Path(tmp) / "vec_add.cu"
        shutil.copy(src, cu)
        job = LowerJob(cu, cu.read_text(), backend="nvcc", kernel="vec_add", workspace=Path(tmp))
        res = await lower_nvcc(job)
        print(res.message, file=out)
        if not res.ok:
            return False
        _show(res, out)
        print("\n== 2b. lower examples/vec_add.cu with the LLM loop ==", file=out)
        settings, problems = from_env()
        for p in problems:
            print(f"  {p}", file=out)
        if not settings.ready:
            print("(skipped: " + settings.not_ready_message() + ")", file=out)
            return True
        job = LowerJob(cu, cu.read_text(), backend="llm", kernel="vec_add", workspace=Path(tmp))
        llm = await lower_llm(
            job, settings, progress=lambda m: print(f"  {m}", file=out, flush=True)
        )
        print(llm.report, file=out)
        print(llm.message, file=out)
        if llm.ok:
            _show(llm, out)
        return llm.ok


async def _lower_and_close(examples: Path, out) -> bool:
    from ptxls.lowering.service import close_gpu_worker

    try:
        return await _lower(examples, out)
    finally:
        await close_gpu_worker()  # nothing may outlive the loop (a quiet exit on 3.12)


def lowering_step(examples: Path, out) -> bool:
    print("\n== 2. lower examples/vec_add.cu to PTX (nvcc reference, offline) ==", file=out)
    return asyncio.run(_lower_and_close(examples, out))


async def _gpu_test(ptx: Path):
    from ptxls.gputest.api import run_gpu_test_file
    from ptxls.gputest.supervisor import Supervisor

    sup = Supervisor()
    try:
        return await run_gpu_test_file(str(ptx), "vec_add", supervisor=sup, device="gpu")
    finally:
        await sup.close()


def gpu_step(examples: Path, out=None) -> bool:
    from ptxls.gputest.api import format_table

    out = out or sys.stdout
    print("\n== 3. GPU test of examples/vec_add.ptx (against nvcc -O3 of vec_add.cu) ==", file=out)
    ptx = examples / "vec_add.ptx"
    if not ptx.is_file():
        print(f"(no {ptx}: step skipped)", file=out)
        return True
    [report] = asyncio.run(_gpu_test(ptx))
    if report.status == "no-gpu":
        print(f"skipped: {report.summary} — ptxls test needs a CUDA device", file=out)
        return True
    print(format_table(report), file=out)
    return report.passed
