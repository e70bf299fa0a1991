"""Run ptxas on a PTX text, killably (a newer edit cancels the job and kills the process)."""

from __future__ import annotations

import asyncio
import atexit
import functools
import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

from .discovery import Tool
from .process import ProcessResult, run_killable, scratch_name


@dataclass
class PtxasRun(ProcessResult):
    cubin: bytes | None = None


@functools.lru_cache(maxsize=1)
def _scratch() -> Path:
    """One scratch folder per process (a fresh temp dir per run costs ~3 ms)."""
    path = Path(tempfile.mkdtemp(prefix="ptxls-"))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def _write(path: Path, text: str) -> None:
    path.write_bytes(text.encode("utf-8", errors="replace"))


def _prepare(job: Path, src: Path, text: str) -> None:
    job.mkdir()
    try:
        _write(src, text)
    except BaseException:
        shutil.rmtree(job, ignore_errors=True)
        raise


def _remove_later(job: Path) -> None:
    """Remove a run's folder in a worker thread (here, where no loop runs or it is closing)."""
    try:
        asyncio.get_running_loop().run_in_executor(None, shutil.rmtree, job, True)
    except RuntimeError:
        shutil.rmtree(job, ignore_errors=True)


async def run_ptxas(
    text: str,
    *,
    tool: Tool,
    arch: str,
    timeout: float = 60.0,
    extra_args: tuple[str, ...] = (),
    want_cubin: bool = False,
    file_name: str = "input.ptx",
) -> PtxasRun:
    """Assemble ``text`` for ``arch``. Raises OSError only when the binary cannot be started."""
    job = _scratch() / uuid.uuid4().hex
    src = job / scratch_name(file_name, "input.ptx", reserved=("out.cubin",))
    # the folder, the copy and their removal off the loop: on a loaded machine these file
    # operations were most of the loop's time in a burst of 3,000 didOpens (a stack sampler)
    await asyncio.to_thread(_prepare, job, src, text)
    try:
        out = job / "out.cubin"
        args = [
            tool.path,
            f"-arch={arch}",
            *extra_args,
            str(src),
            "-o",
            str(out) if want_cubin else os.devnull,
        ]
        res = await run_killable(args, timeout=timeout)
        cubin = out.read_bytes() if want_cubin and res.returncode == 0 and out.exists() else None
    finally:
        _remove_later(job)
    # Messages should name the user's file, not our scratch copy of it.
    res.stderr = res.stderr.replace(str(src), file_name)
    res.stdout = res.stdout.replace(str(src), file_name)
    return PtxasRun(**vars(res), cubin=cubin)
