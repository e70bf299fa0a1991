"""The compilers' own lowering (``backend`` "nvcc" or "triton"): nvcc's or Triton's PTX of the
kernel with the provenance header, checked by ptxas but not GPU-tested — the reference an LLM
lowering is compared with, and the offline answer when no model is configured.
"""

from __future__ import annotations

from .job import LowerJob, LowerOutcome, choose_kernel, shown_path, workspace_of
from .loop_records import Progress
from .perf import Resources
from .provenance import Provenance, plan_output, with_header
from .sources import SourceKernel


async def _compiler_lowering(job: LowerJob, src: SourceKernel, arch: str):
    """nvcc's or Triton's own PTX of ``src`` (NvccLowering / TritonLowering), or why not."""
    if job.backend == "triton":
        from .triton_reference import lower_with_triton

        if src.kind != "triton":
            return "the Triton reference lowering needs an @triton.jit function"
        return await lower_with_triton(job.text, file_path=str(job.source_path), kernel=src.name,
                                       arch=arch, ptxas_path=job.ptxas_path)  # fmt: skip
    if src.kind != "cuda":
        return "the nvcc reference lowering needs a CUDA __global__ kernel"
    from .nvcc_reference import lower_with_nvcc  # nvcc's backend only: not on the LLM path

    return await lower_with_nvcc(job.text, file_path=str(job.source_path), kernel=src.name,
                                 arch=arch, nvcc_path=job.nvcc_path, ptxas_path=job.ptxas_path)  # fmt: skip


async def lower_nvcc(job: LowerJob, progress: Progress | None = None) -> LowerOutcome:
    """The compilers' reference lowering (``backend`` "nvcc" or "triton"): their PTX with the
    provenance header, not GPU-tested."""
    src = choose_kernel(job)
    if isinstance(src, str):
        return LowerOutcome(False, src)
    arch = job.arch or "sm_90"
    res = await _compiler_lowering(job, src, arch)
    if isinstance(res, str):
        return LowerOutcome(False, res)
    if not res.ok:  # ran: the compiler rejected the source (exit 1), not a tool missing (2)
        return LowerOutcome(False, res.message, src.name, notes=res.notes, backend=job.backend,
                            ran=getattr(res, "rejected", False))  # fmt: skip
    arch = getattr(res, "arch", "") or arch  # Triton's PTX targets sm_90a
    usage = res.usage or Resources()  # from the compile check's ptxas -v: no second run
    prov = Provenance(
        resources=f"{usage.text()} (ptxas -v, {arch})" if usage.registers is not None else "",
        backend=job.backend,
        source=shown_path(job.source_path, job.workspace),
        kernel=src.name,
        tool=res.tool,
        rounds="1 (deterministic compiler output)",
        compile=res.compile_summary,
        gpu="not GPU-tested (compiler reference)",
        notes=tuple(res.notes),
    )
    ptx = with_header(res.ptx, prov)
    _root, inside = workspace_of(job)
    plan = (
        plan_output(job.source_path, src.name, job.backend, ptx, job.output)
        if inside or job.output is not None
        else None
    )
    report = "\n".join(f"note: {n}" for n in res.notes)  # the success itself is said once, last
    return LowerOutcome(
        True,
        f"{src.name}: {job.backend} reference lowering, {res.compile_summary} (not GPU-tested)",
        src.name,
        ptx,
        plan,
        report,
        notes=res.notes,
        not_tested_why=f"the {job.backend} reference is compiler output, not GPU-tested",
        ran=True,
        inside_workspace=inside,
        backend=job.backend,
    )
