"""Turning sources into something the worker loads: PTX → cubin with the project's ptxas, the
CUDA reference → cubin with nvcc. Runs in the parent (asyncio subprocesses, killable); the
worker only loads files. Problems are data: a failed build is a result, not an exception."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import hashlib
import os
import re
import shutil
import tempfile
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from ptxls.frontend.ptx import ptx_version
from ptxls.toolchain.discovery import ToolNotFound, cuda_include_dirs, find_nvcc, find_ptxas
from ptxls.toolchain.process import run_killable

BUILD_TIMEOUT_S = 120.0


@dataclass
class Built:
    cubin_path: str | None = None
    tool: str = ""  # which ptxas/nvcc ran, with its version
    symbol: str = ""  # the name to look up in the module (mangled for C++ kernels)
    error: str = ""  # why there is no cubin ("" when there is one)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    temporary: bool = False  # not in the warm cache: the caller removes it after the test

    def discard(self) -> None:
        if self.temporary and self.cubin_path:
            shutil.rmtree(Path(self.cubin_path).parent, ignore_errors=True)


@dataclass
class Assembled:
    """A cubin ptxas already made (the lowering loop's one ptxas run per candidate): the GPU test
    loads it instead of assembling the PTX again. What the caller's parse of the PTX said comes
    with it, so the test does not read the text again."""

    cubin: bytes
    arch: str  # the -arch it was assembled for; another target is assembled afresh
    tool: str  # which ptxas made it, with its version
    ptx_version: tuple[int, int] | None = None
    ptx_target: str | None = None  # the .target's sm_XX
    globals: list[str] | None = None  # module-scope .global variables (None: not known)


def use_assembled(assembled: Assembled, tag: str = "kernel") -> Built:
    """The prebuilt cubin as a build the worker can load (a file in this process's scratch)."""
    out_dir = Path(tempfile.mkdtemp(prefix=f"{tag}-", dir=workdir()))
    cubin = out_dir / f"{tag}.cubin"
    try:
        cubin.write_bytes(assembled.cubin)
    except OSError as e:
        return _failed(out_dir, assembled.tool, f"could not write the cubin: {e}")
    return Built(str(cubin), assembled.tool, temporary=True)


# Builds by (source hash, arch, tool): a warm re-test of unchanged text skips ptxas/nvcc (nvcc
# alone is ~0.4 s). Bounded; an evicted build's folder is removed.
_CACHE: OrderedDict[tuple, Built] = OrderedDict()
_CACHE_SIZE = 32


def _cached(key: tuple) -> Built | None:
    hit = _CACHE.get(key)
    if hit is not None and hit.cubin_path and Path(hit.cubin_path).exists():
        _CACHE.move_to_end(key)
        return hit
    return None


def _remember(key: tuple, built: Built) -> Built:
    if built.cubin_path:
        _CACHE[key] = built
        while len(_CACHE) > _CACHE_SIZE:
            _, old = _CACHE.popitem(last=False)
            if old.cubin_path:
                shutil.rmtree(Path(old.cubin_path).parent, ignore_errors=True)
    return built


def _key(*parts: str) -> tuple:
    return tuple(hashlib.sha256(p.encode()).hexdigest() if len(p) > 64 else p for p in parts)


def _failed(out_dir: Path, tool: str, error: str, seconds: float = 0.0) -> Built:
    shutil.rmtree(out_dir, ignore_errors=True)  # nothing in it is worth keeping
    return Built(tool=tool, error=error, seconds=seconds)


@functools.lru_cache(maxsize=1)
def workdir() -> Path:
    """This process's private scratch root: a fresh ``mkdtemp`` (mode 0700, owned by us — never
    a fixed name in the shared temp folder, which anyone could create first or symlink), removed
    when the process exits. Each build gets its own folder inside; a failed or cancelled build's
    folder is removed at once, the sources of a good one right after the build, and the cubins
    the warm cache keeps go with the root."""
    d = Path(tempfile.mkdtemp(prefix="ptxls-gputest-"))
    atexit.register(shutil.rmtree, d, ignore_errors=True)
    return d


def _tool_env(out_dir: Path) -> dict:
    """nvcc writes its intermediates (.ii = the preprocessed source, .fatbin, ...) to TMPDIR and
    leaves them when killed: point it at the build's own folder."""
    return {**os.environ, "TMPDIR": str(out_dir), "TMP": str(out_dir), "TEMP": str(out_dir)}


async def assemble_ptx(
    ptx: str, arch: str, *, ptxas: str | None = None, tag: str = "kernel"
) -> Built:
    """ptxas -arch=ARCH → cubin. Picks a ptxas that accepts the file's .version (the wheel's
    13.5 ptxas takes ISA 9.5 where the machine's 13.0 one stops at 9.0)."""
    try:
        # Tool discovery runs ptxas --version once (cached): keep it off the event loop.
        tool = await asyncio.to_thread(find_ptxas, ptxas, needs_isa=ptx_version(ptx))
    except ToolNotFound as e:
        return Built(error=str(e))
    key = _key("ptxas", tool.path, arch, ptx)
    if hit := _cached(key):
        return hit
    out_dir = Path(tempfile.mkdtemp(prefix=f"{tag}-", dir=workdir()))
    src, cubin = out_dir / f"{tag}.ptx", out_dir / f"{tag}.cubin"
    src.write_text(ptx)
    try:
        res = await run_killable(
            [tool.path, f"-arch={arch}", str(src), "-o", str(cubin)], timeout=BUILD_TIMEOUT_S
        )
    except OSError as e:
        return _failed(out_dir, tool.describe(), f"could not run {tool.path}: {e}")
    except BaseException:  # cancelled: nothing of this build stays behind
        shutil.rmtree(out_dir, ignore_errors=True)
        raise
    finally:
        with contextlib.suppress(OSError):
            src.unlink()
    if res.timed_out:
        return _failed(
            out_dir, tool.describe(), f"ptxas did not finish within {BUILD_TIMEOUT_S:g} s"
        )
    if res.returncode != 0 or not cubin.exists():
        msg = (res.stderr or res.stdout).strip().replace(str(src), "input.ptx")
        return _failed(out_dir, tool.describe(), f"ptxas failed:\n{msg}", seconds=res.seconds)
    return _remember(key, Built(str(cubin), tool.describe(), seconds=res.seconds))


async def compile_cuda(source: str, kernel: str, arch: str, *, nvcc: str | None = None) -> Built:
    """nvcc -cubin -O3 of the reference source; the kernel's symbol is found in the cubin (C++
    kernels are mangled: vec_add → _Z7vec_addPKfS0_Pfi)."""
    try:
        tool = await asyncio.to_thread(find_nvcc, nvcc)
    except ToolNotFound as e:
        return Built(error=str(e))
    key = _key("nvcc", tool.path, arch, kernel, source)
    if hit := _cached(key):
        return hit
    out_dir = Path(tempfile.mkdtemp(prefix="ref-", dir=workdir()))
    src, cubin = out_dir / "ref.cu", out_dir / "ref.cubin"
    src.write_text(source)
    arch_flag = arch.replace("sm_", "")
    args = [
        tool.path,
        "-cubin",
        "-O3",
        f"-gencode=arch=compute_{arch_flag},code={arch}",
        str(src),
        "-o",
        str(cubin),
    ]
    for inc in cuda_include_dirs():
        args += ["-I", inc]
    try:
        res = await run_killable(
            args, timeout=BUILD_TIMEOUT_S, cwd=str(out_dir), env=_tool_env(out_dir)
        )
    except OSError as e:
        return _failed(out_dir, tool.describe(), f"could not run {tool.path}: {e}")
    except BaseException:  # cancelled: nothing of this build stays behind
        shutil.rmtree(out_dir, ignore_errors=True)
        raise
    finally:
        with contextlib.suppress(OSError):
            src.unlink()
    if res.timed_out:
        return _failed(
            out_dir, tool.describe(), f"nvcc did not finish within {BUILD_TIMEOUT_S:g} s"
        )
    if res.returncode != 0 or not cubin.exists():
        msg = (res.stderr or res.stdout).strip().replace(str(src), "reference.cu")
        return _failed(out_dir, tool.describe(), f"nvcc failed:\n{msg}", seconds=res.seconds)
    symbol = find_symbol(cubin.read_bytes(), kernel)
    if symbol is None:
        return _failed(
            out_dir, tool.describe(), f"no kernel named '{kernel}' in what nvcc compiled"
        )
    return _remember(key, Built(str(cubin), tool.describe(), symbol=symbol, seconds=res.seconds))


def find_symbol(image: bytes, kernel: str) -> str | None:
    """The ELF symbol of ``kernel``: itself (extern "C") or its Itanium mangling _Z<len><name>…"""
    names = set(re.findall(rb"[A-Za-z_$][\w$]*", image))
    if kernel.encode() in names and b".text." + kernel.encode() in image:
        return kernel
    prefix = f"_Z{len(kernel)}{kernel}".encode()
    mangled = sorted(n for n in names if n.startswith(prefix))
    if mangled:
        return mangled[0].decode()
    return kernel if kernel.encode() in names else None
