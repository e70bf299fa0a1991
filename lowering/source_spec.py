"""The test a lowering is held to, from the source and the person only — never from a
candidate's PTX, whose ``@gputest`` lines could loosen its own test: the spec (one call of
gputest's one resolver, ``spec_source.resolve_spec``, for CUDA, PTX, a Triton kernel with its
build, a request's ``@gputest`` lines), the verifier
that runs it (on the GPU, the CPU emulator, or compile-only, with why), the spec in one line for
the provenance header, and what the prompt says the test will do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import prompt
from .job import LowerJob
from .protocols import Verifier
from .sources import SourceKernel
from .verify import compile_only_verifier, gpu_availability, gpu_verifier

if TYPE_CHECKING:
    from ptxls.gputest.spec import SpecResolution, TestSpec


def request_spec(src: SourceKernel, job: LowerJob) -> tuple[TestSpec | None, str]:
    """A plain-language request's spec, from its comment block's ``@gputest`` lines (a
    ``ref:`` among them): ``source_spec`` of a request."""
    return source_spec(src, job)


def source_spec(src: SourceKernel, job: LowerJob) -> tuple[TestSpec | None, str]:
    """The test spec, from the source and the person only — never from a candidate's PTX
    (whose ``@gputest`` lines could loosen its own test): the CUDA signature and the source's
    annotation / sidecar, the original PTX's annotation or paired CUDA ("Optimize"), a Triton
    signature, or a request's ``@gputest`` lines. (The spec, or None and why.)"""
    res = _resolved(src, job)
    return (None, res.reason) if res.reason else (res.spec, "")


def _resolved(src: SourceKernel, job: LowerJob) -> SpecResolution:
    """The spec, a Triton kernel's build (the reference its test launches) or why it cannot be
    tested: one call of gputest's resolver (``gputest/spec_source.py``), once per lowering."""
    from ptxls.gputest.spec_source import SpecSource, resolve_spec

    # a request described on the command line has no comment block: nothing to test against
    kernel = "" if src.kind == "request" and job.describe else src.name
    return resolve_spec(SpecSource(src.kind, job.text, kernel, str(job.source_path), line=src.end_line + 1))  # fmt: skip


def spec_text(spec) -> str:
    """The spec in one line, for the provenance header and the transcript."""
    if spec is None:
        return ""
    params = "; ".join(
        f"{p.name}: {p.role} {p.dtype}"
        + (f"[{p.length}]" if p.is_pointer else "")
        + (f" = {p.value}" if p.value else "")
        for p in spec.params
    )
    launch = f"launch grid={spec.launch.grid} block={spec.launch.block}"
    if spec.launch.shared not in ("", "0"):
        launch += f" shared={spec.launch.shared}"
    sizes = "sizes " + " ".join(str(n) for n in spec.sizes)
    tol = f"tol {spec.tol:g}" if spec.tol is not None else "tol: per-dtype default"
    ref = f"ref: {spec.numpy_ref}" if spec.numpy_ref else f"ref: {_compiled_reference(spec)}"
    return f"{params}; {launch}; {sizes}; {tol}; {ref}"


def _compiled_reference(spec) -> str:
    """What a spec without a numpy ``ref:`` is checked against: the source, compiled."""
    if any("Triton" in o for o in spec.origin):  # gputest/triton_ref.infer_spec
        return "the Triton kernel itself, launched by Triton"
    return "the nvcc-compiled source"


def facts_for_test(spec, tested: bool) -> prompt.TestFacts:
    """What the test will do, for the prompt: the launch, the sizes, the numerics."""
    if spec is None:
        return prompt.TestFacts()
    from ptxls.gputest.dtypes import DTYPES

    launch = f"grid ({spec.launch.grid}) blocks of ({spec.launch.block}) threads"
    if spec.launch.shared not in ("", "0"):
        launch += f" and {spec.launch.shared} bytes of dynamic shared memory"
    sizes = "n in " + ", ".join(str(n) for n in spec.sizes)
    outs = [p for p in spec.params if p.is_pointer and p.role in ("out", "inout")]
    tols = []
    for p in outs:
        dt = DTYPES.get(p.dtype)
        tol = spec.tol if spec.tol is not None else (dt.rtol if dt else None)
        if tol is not None:
            tols.append(f"{p.name} ({p.dtype}) within a relative error of {tol:g}")
    ref = "a float64 numpy reference" if spec.numpy_ref else _compiled_reference(spec)
    numerics = (
        f"outputs are compared element by element with {ref}: " + ", ".join(tols) if tols else ""
    )
    if numerics:
        numerics += "; use .rn arithmetic unless that tolerance allows .approx"
    return prompt.TestFacts(launch, sizes, numerics, tested)


def output_positions(spec, src: SourceKernel) -> tuple[int, ...]:
    """Positions of the kernel's ``out`` parameters, where the spec's parameters are the
    kernel's own in order (CUDA's signature, an original PTX entry); else none."""
    if spec is None or src.kind not in ("cuda", "ptx"):
        return ()
    if src.params is not None and [p.name for p in spec.params] != [p.name for p in src.params]:
        return ()
    return tuple(i for i, p in enumerate(spec.params) if p.role == "out")


async def default_verifier(
    src: SourceKernel, job: LowerJob
) -> tuple[Verifier, str, TestSpec | None]:
    """GPU-test against the source where a GPU is present and there is something to test
    against; otherwise compile-checked only, saying why. The spec is built here, from the
    source, and handed to the verifier: the candidate's own ``@gputest`` lines are never read."""
    res = _resolved(src, job)
    spec, why, build = (None, res.reason, None) if res.reason else (res.spec, "", res.build)
    if job.compile_only:
        why = "compile-only requested"
        return compile_only_verifier(why), why, spec
    if spec is None:
        return compile_only_verifier(why), why, None
    available, reason = (
        await gpu_availability() if job.device != "cpu" else (False, "the CPU emulator asked for")
    )
    # Without a GPU the candidates run on the CPU emulator (job.device "auto" or "cpu").
    device = "gpu" if available else "cpu"
    if not available and job.device == "gpu":
        return compile_only_verifier(reason), reason, spec
    if src.kind == "cuda":
        return (
            gpu_verifier(
                spec=spec,
                reference_cuda=job.text,
                reference_path=str(job.source_path),
                device=device,
            ),  # fmt: skip
            "",
            spec,
        )
    if src.kind == "triton":
        assert build is not None  # a Triton spec that resolved comes with its build
        # on the emulator the reference is Triton's own PTX of the kernel (gputest/emulated.py)
        return gpu_verifier(spec=spec, triton_reference=build.to_json(), device=device), "", spec
    return gpu_verifier(spec=spec, device=device), "", spec
