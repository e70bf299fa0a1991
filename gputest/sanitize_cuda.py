"""A CUDA ``__global__`` kernel's GPU test under compute-sanitizer, each report on its .cu line.

    result = await sanitize_cuda(cu_text, "stencil", cuda_path="stencil.cu")
    for f in result.findings: print(f.line, f.text)      # lines of stencil.cu

The test is the one ``ptxls test FILE.cu`` runs (gputest/api.py ``run_gpu_test_cuda``: the spec
from the signature and its ``@gputest`` annotation, the annotation's numpy reference or the kernel
against itself), with the kernel built the way "Show PTX" builds it: ``nvcc -ptx -lineinfo``, whose
``.loc`` directives name the .cu lines. That PTX is run as ``sanitize_ptx`` runs a .ptx file (the
project's ptxas, a fresh sanitized worker per tool), so compute-sanitizer's ``in stencil.cu:31`` is
line 31 of the buffer the person sees, and every finding quotes that .cu line.

Where nvcc's PTX carries no line info of its own, ptxls gives it its own (frontend/line_info.py)
and the findings name lines of nvcc's PTX, saying so (``Finding.file``); a report in another file
(a header) names that file and line.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from ptxls.frontend.line_info import add_line_info
from ptxls.frontend.ptx import find_entries
from ptxls.toolchain.discovery import ToolNotFound, find_nvcc
from ptxls.toolchain.nvcc import nvcc_to_ptx

from .sanitize import SanitizeOptions, SanitizeResult, _Job, preflight, run_job

NVCC_TIMEOUT_S = 120.0
NVCC_ARGS = ("-lineinfo", "-O3")  # as Show PTX and Show SASS compile a .cu


@dataclass
class CudaPtx:
    """nvcc's PTX of a .cu, or why there is none."""

    ptx: str = ""
    file_name: str = ""  # the name nvcc saw, which its .file (and so the reports) name
    error: str = ""


async def cuda_ptx(
    cuda_text: str,
    *,
    cuda_path: str | None = None,
    arch: str = "sm_90",
    nvcc: str | None = None,
    timeout: float = NVCC_TIMEOUT_S,
) -> CudaPtx:
    """``nvcc -ptx -lineinfo -O3`` of the buffer, its ``.file`` naming the .cu by its own name
    (not the scratch folder nvcc ran in). Never raises for a bad source: ``error`` says."""
    try:
        tool = await asyncio.to_thread(find_nvcc, nvcc)
    except ToolNotFound as e:
        return CudaPtx(error=str(e))
    try:
        run = await nvcc_to_ptx(cuda_text, tool, file_path=cuda_path, arch=arch,
                                extra_args=NVCC_ARGS, timeout=timeout)  # fmt: skip
    except OSError as e:
        return CudaPtx(error=f"could not run {tool.path}: {e}")
    if run.ptx is None:
        if run.result.timed_out:
            return CudaPtx(file_name=run.source_name,
                           error=f"nvcc did not finish within {timeout:g} s")  # fmt: skip
        said = (run.result.stderr or run.result.stdout).replace(run.temp_dir + "/", "").strip()
        return CudaPtx(file_name=run.source_name, error=f"nvcc failed:\n{said}")
    return CudaPtx(run.ptx.replace(run.temp_dir + "/", ""), run.source_name)


def entry_for(ptx_text: str, kernel: str) -> str | None:
    """The PTX entry nvcc made of the CUDA kernel ``kernel``: itself (``extern "C"``) or its
    C++ mangling ``_Z<len><name>...`` (the first, for an overloaded name)."""
    names = [e.name for e in find_entries(ptx_text)]
    if kernel in names:
        return kernel
    prefix = f"_Z{len(kernel)}{kernel}"
    return next((n for n in names if n.startswith(prefix)), None)


def _spec(cuda_text: str, kernel: str, path: str):
    from .pairing import infer_spec_from_cuda

    return infer_spec_from_cuda(cuda_text, kernel, path=path)


async def sanitize_cuda(
    cuda_text: str,
    kernel: str,
    *,
    cuda_path: str | None = None,
    reference_cuda: str | None = None,
    reference_path: str | None = None,
    options: SanitizeOptions | None = None,
) -> SanitizeResult:
    """Run the CUDA kernel ``kernel``'s GPU test under each of ``options.tools``; findings on
    lines of ``cuda_text``. Never raises on a bad kernel: no GPU, no compute-sanitizer, a spec
    problem, an nvcc error, a kernel that faults or hangs are results."""
    opts = options or SanitizeOptions()
    started = time.monotonic()
    result = SanitizeResult(kernel, "error")
    sanitizer = await preflight(opts, result)
    if sanitizer is None:
        return result
    spec, problems = await asyncio.to_thread(_spec, cuda_text, kernel, cuda_path or "")
    if spec is None or problems:
        said = "; ".join(str(p) for p in problems[:3]) or "no spec"
        result.summary = f"the test spec has problems; nothing ran: {said}"
        return result
    if opts.on_progress:
        opts.on_progress(f"nvcc -ptx -lineinfo: {kernel}")
    built = await cuda_ptx(cuda_text, cuda_path=cuda_path, arch=_arch(opts), nvcc=opts.nvcc)
    if built.error:
        result.summary = f"the kernel did not build: {built.error}"
        return result
    entry = entry_for(built.ptx, kernel)
    if entry is None:
        result.summary = (f"nvcc's PTX has no entry for '{kernel}' (a template needs an "
                          "instantiation the file makes)")  # fmt: skip
        return result
    job = _job(sanitizer, opts, built, entry, cuda_text, spec, reference_cuda, reference_path)
    if job.line_file:
        result.notes.append(f"nvcc's PTX carries no line info: the findings name lines of "
                            f"{job.line_file} (Show PTX gives the same PTX)")  # fmt: skip
    else:
        result.notes.append(f"lines are lines of {built.file_name}: its kernel ran as "
                            f"nvcc -ptx {' '.join(NVCC_ARGS)} made it ({entry})")  # fmt: skip
    return await run_job(job, result, started)


def _job(sanitizer, opts, built: CudaPtx, entry, cuda_text, spec, ref, ref_path) -> _Job:
    """The sanitized test of nvcc's PTX: its findings on the .cu's lines when nvcc's ``.loc``
    name them, else on lines of the PTX with line info ptxls added."""
    cu_name = built.file_name
    marked = add_line_info(built.ptx, f"{cu_name}.ptx")
    if marked.maps_to == "source":  # nvcc's own .loc: reports say "in NAME.cu:LINE"
        return _Job(sanitizer, entry, built.ptx, built.ptx, cu_name, opts, None, ref, ref_path,
                    spec, quoted=cuda_text, barrier="a __syncthreads()")  # fmt: skip
    return _Job(sanitizer, entry, built.ptx, marked.text, f"{cu_name}.ptx", opts, None, ref,
                ref_path, spec, line_file=f"nvcc's PTX of {cu_name}")  # fmt: skip


def _arch(opts: SanitizeOptions) -> str:
    """The -arch nvcc compiles for: the setting, else the device's (preflight asked it)."""
    if opts.arch:
        return opts.arch
    from .supervisor import shared_supervisor

    device = (opts.probe or shared_supervisor()).device or {}
    return device.get("arch") or "sm_90"
