"""The lowering step of ``ptxls demo``: examples/vec_add.cu through the nvcc reference
(offline), and through the LLM loop when an endpoint is configured. Results go to a temporary
folder, never into examples/; what a person would get is printed."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

from .service import LowerJob, close_gpu_worker, lower_llm, lower_nvcc
from .settings import from_env


def _show(outcome, out) -> None:
    header = [ln for ln in outcome.ptx.splitlines() if ln.startswith("// ")][:9]
    entry = next((ln for ln in outcome.ptx.splitlines() if ".entry" in ln), "")
    for ln in header:
        print("    " + ln, file=out)
    print("    ...\n    " + entry.strip(), file=out)


async def _run(examples: Path, out) -> bool:
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


async def _run_and_close(examples: Path, out) -> bool:
    try:
        return await _run(examples, out)
    finally:
        await close_gpu_worker()  # nothing may outlive the loop (a quiet exit on 3.12)


def lowering_step(examples: Path, out) -> bool:
    print("\n== 2. lower examples/vec_add.cu to PTX (nvcc reference, offline) ==", file=out)
    return asyncio.run(_run_and_close(examples, out))
