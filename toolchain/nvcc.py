"""Compile a CUDA buffer to PTX with nvcc: the one place that knows how (temp folder named
like the user's file, include paths for the user's folder and the wheels' headers, killable)."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .discovery import Tool, cuda_include_dirs
from .process import ProcessResult, run_killable, scratch_name


@dataclass
class NvccRun:
    result: ProcessResult
    ptx: str | None  # None when nvcc failed or timed out
    source_name: str  # the file name nvcc saw (messages name it)
    temp_dir: str  # gone after the call; messages may still mention it, for callers to strip


def include_dirs_for(file_path: str | None) -> list[str]:
    dirs = list(cuda_include_dirs())
    if file_path and _usable_path(file_path):
        dirs.insert(0, str(Path(file_path).resolve().parent))
    return dirs


def _usable_path(path: str) -> bool:
    # A client's URI can decode to anything: '%00' (every file call raises ValueError), a
    # name longer than the file system allows, or no name at all ('file:///').
    return "\0" not in path and all(len(part.encode()) <= 255 for part in Path(path).parts)


def _source_name(file_path: str | None) -> str:
    """The name nvcc sees (its messages name it): the user's, when it is a plain file name."""
    name = Path(file_path).name if file_path and _usable_path(file_path) else ""
    return scratch_name(name, "input.cu", reserved=("out.ptx",))


async def nvcc_to_ptx(
    text: str,
    nvcc: Tool,
    *,
    file_path: str | None = None,
    arch: str = "sm_90",
    extra_args: tuple[str, ...] = (),
    timeout: float = 60.0,
) -> NvccRun:
    """Raises OSError only when nvcc cannot be started."""
    name = _source_name(file_path)
    with tempfile.TemporaryDirectory(prefix="ptxls-nvcc-") as tmp:
        src = Path(tmp) / name
        src.write_bytes(text.encode("utf-8", errors="replace"))
        out = Path(tmp) / "out.ptx"
        args = [nvcc.path, "-ptx", f"-arch={arch}", *extra_args, "-o", str(out)]
        args += [f"-I{d}" for d in include_dirs_for(file_path)] + [str(src)]
        # nvcc's intermediates (.ii: the preprocessed user source, .cubin, .fatbin) go to TMPDIR
        # and stay there when nvcc is killed: keep them in this private folder, removed below.
        env = {**os.environ, "TMPDIR": tmp, "TMP": tmp, "TEMP": tmp}
        res = await run_killable(args, timeout=timeout, cwd=tmp, env=env)
        ptx = out.read_text(errors="replace") if res.returncode == 0 and out.exists() else None
    return NvccRun(res, ptx, name, tmp)
