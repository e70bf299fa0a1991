"""The offline, deterministic lowering of a Triton kernel: Triton's own PTX for it, like
``nvcc_reference`` is for CUDA, and the "Show PTX for this kernel" view with the Python lines
interleaved.

"Show PTX" for a Triton kernel is ``show_ptx.show_ptx`` on a .py file: it compiles through
``compile_kernel`` here and interleaves the Python lines like it does the CUDA ones.

The kernel is read with ``ast`` (``frontend/triton.py``) and compiled in a separate, killable
process from its own ``def`` text only (``toolchain/triton_compile.py`` says why no code of the
file runs). The signature and constexprs come from the source: the ``# ptxls: signature`` line,
the annotations, the ``@gputest`` lines or the first autotune config; when none says, the message
shows the line to add.

Triton appends two pointer parameters of its own to every entry (global and profile scratch). When
the kernel uses neither (size 0, never loaded) they are dropped, so the entry takes the kernel's
own parameters -- what an LLM lowering of it takes, and what the GPU test passes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ptxls.frontend.triton_build import TritonBuild
from ptxls.gputest.triton_ref import gputest_types
from ptxls.toolchain.triton_compile import TritonCompile, recipe_for, triton_to_ptx
from ptxls.toolchain.triton_compile import source_name as source_name  # for triton_sass

from .nvcc_reference import _lower_version
from .perf import Resources
from .ptx_check import PtxasUnavailable, compile_check

NO_TRITON = (
    "Triton is not installed in ptxls's environment: pip install 'ptxls[triton]' "
    "(or set PTXLS_TRITON_PYTHON to a Python that has it)"
)


@dataclass
class TritonLowering:
    ok: bool
    ptx: str = ""
    message: str = ""
    tool: str = ""  # "Triton 3.6.0"
    entry: str = ""
    notes: list[str] = field(default_factory=list)
    compile_summary: str = ""
    metadata: dict | None = None  # num_warps, num_stages, shared, scratch sizes
    build: TritonBuild | None = None
    arch: str = ""  # what ptxas assembles it for: Triton writes sm_90a for sm_90
    usage: Resources | None = None  # the entry's ptxas -v numbers, from the compile check


def assembled_arch(ptx: str, arch: str) -> str:
    """Triton targets the arch-specific variant (``.target sm_90a``); ptxas must be asked for
    that, not for the plain ``sm_90`` (which it refuses for such PTX)."""
    m = re.search(r"^\s*\.target\s+(sm_\w+)", ptx, re.MULTILINE)
    return m.group(1) if m and m.group(1).startswith(arch) else arch


async def compile_kernel(
    text: str, kernel: str, file_path: str | None, arch: str, timeout: float
) -> tuple[TritonBuild | None, TritonCompile]:
    build, why = recipe_for(text, kernel, file_path, gputest_types(text, kernel))
    if build is None:
        return None, TritonCompile(False, message=why)
    result = await triton_to_ptx(build.to_json(), arch=arch, timeout=timeout)
    if result.no_triton:
        result.message = NO_TRITON
    return build, result


def drop_debug_sections(ptx: str) -> str:
    """Triton's PTX ends with ``.section .debug_*`` blocks (line tables): not for reading."""
    m = re.search(r"^\s*\.section\s+\.debug", ptx, re.MULTILINE)
    return ptx[: m.start()].rstrip() + "\n" if m else ptx


_LOC_LINE = re.compile(r"^\s*\.loc\s.*\n?", re.MULTILINE)
_FILE_LINE = re.compile(r"^\s*\.file\s.*\n?", re.MULTILINE)


def drop_line_info(ptx: str) -> str:
    """The lowering result without Triton's line info (.loc/.file, debug sections)."""
    return _FILE_LINE.sub("", _LOC_LINE.sub("", drop_debug_sections(ptx)))


def drop_unused_scratch(ptx: str, entry: str, own_params: int, meta: dict) -> tuple[str, str]:
    """Remove Triton's trailing scratch parameters when the kernel never reads them.
    Returns (ptx, note)."""
    if meta.get("global_scratch_size") or meta.get("profile_scratch_size"):
        return ptx, ""
    pattern = re.compile(rf"(\.entry\s+{re.escape(entry)}\s*\()(?P<params>[^)]*)\)", re.MULTILINE)
    m = pattern.search(ptx)
    if not m:
        return ptx, ""
    params = [p for p in m.group("params").split(",") if p.strip()]
    extra = params[own_params:]
    names = [p.split()[-1] for p in extra]
    if not extra or any(re.search(rf"\[{re.escape(n)}\]", ptx) for n in names):
        return ptx, ""
    kept = ",".join(params[:own_params]).rstrip()
    ptx = ptx[: m.start("params")] + kept + "\n" + ptx[m.end("params") :]
    return ptx, (
        f"Triton's {len(extra)} scratch pointer parameter(s) ({', '.join(names)}) dropped: this "
        "kernel uses no scratch memory, so the entry takes only its own parameters"
    )


async def lower_with_triton(
    text: str,
    *,
    file_path: str | None = None,
    kernel: str,
    arch: str = "sm_90",
    ptxas_path: str | None = None,
    timeout: float = 120.0,
) -> TritonLowering:
    """Triton's PTX of ``kernel``. Every failure is a message in the result."""
    build, result = await compile_kernel(text, kernel, file_path, arch, timeout)
    if not result.ok:
        return TritonLowering(False, message=result.message, build=build)
    meta = result.metadata or {}
    entry = meta.get("name") or kernel
    notes = list(build.notes) if build else []
    own = sum(1 for v in build.signature.values() if v != "constexpr") if build else 0
    ptx, note = drop_unused_scratch(drop_line_info(result.ptx), entry, own, meta)
    if note:
        notes.append(note)
    notes.append(_launch_note(build, meta))
    arch = assembled_arch(ptx, arch)
    ptx, version_note = await _lower_version(ptx, arch, ptxas_path)
    if version_note:
        notes.append(version_note.replace("(nvcc)", "(Triton)"))
    usage = None
    try:
        check = await compile_check(ptx, arch=arch, ptxas_path=ptxas_path)
        summary, ok = f"{check.summary()} ({check.tool})", check.ok
        usage = check.resources(entry or None)
    except PtxasUnavailable as e:
        summary, ok = f"not assembled: {e}", True
    tool = f"Triton {result.version}"
    message = "Triton lowering " + ("done" if ok else "failed ptxas")
    return TritonLowering(ok, ptx, message, tool, entry, notes, summary, meta, build, arch, usage)


def _launch_note(build: TritonBuild | None, meta: dict) -> str:
    warps = meta.get("num_warps", 4)
    consts = ", ".join(f"{k}={v!r}" for k, v in (build.constexprs if build else {}).items())
    shared = meta.get("shared", 0)
    return (
        f"launch with {warps * 32} threads per block (num_warps={warps}) and {shared} bytes of "
        f"dynamic shared memory; one block per Triton program; constexprs {consts or 'none'}"
    )


async def gpu_test_against_triton(
    ptx: str, text: str, kernel: str, file_path: str | None, *, shared: int = 0, **kw
):
    """GPU-test ``ptx`` (Triton's own PTX, or an LLM lowering) against the Triton kernel
    itself, launched by Triton, with the spec from the kernel's signature and ``# @gputest``
    lines. ``shared``: the dynamic shared memory the PTX needs (Triton's metadata says how much
    its own PTX takes). Returns the gputest TestReport."""
    from ptxls.gputest import api
    from ptxls.gputest.report import SPEC_ERROR, TestReport
    from ptxls.gputest.spec_source import SpecSource, resolve_spec

    res = resolve_spec(SpecSource("triton", text, kernel, file_path or ""))
    spec, problems, build = res.spec, res.problems, res.build
    if spec is None or problems or build is None:
        summary = "; ".join(str(p) for p in problems) or "no spec"
        return TestReport(kernel, SPEC_ERROR, problems=problems, summary=summary)
    if shared:
        spec.launch.shared = str(shared)
    kw.setdefault("device", "gpu")  # Triton launches its reference on a GPU only
    return await api.run_gpu_test(ptx, kernel, spec, triton_reference=build.to_json(), **kw)
