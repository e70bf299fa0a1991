"""The verification step after ptxas: pluggable, so the loop runs the same with or without a GPU.

A verifier is a ``protocols.Verifier``: an async callable ``(ptx, kernel, *, candidate) ->
VerifyResult``, ``candidate`` being what the loop's one ptxas run made of the PTX (``Candidate``:
the parse, the cubin); one with ``wants_cubin = True`` makes the loop keep that cubin. ``gpu_verifier`` wraps
the GPU-test harness (``ptxls.gputest.api``) when a device is present and loads the loop's cubin
instead of assembling the candidate again; ``compile_only_verifier`` passes everything through
with ``tested=False``, so the result says "not GPU-tested" instead of pretending.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from ptxls.frontend.ptx import PtxModule, global_names

from .protocols import Verifier

if TYPE_CHECKING:
    from ptxls.gputest.report import TestReport
    from ptxls.gputest.spec import TestSpec


@dataclass
class VerifyResult:
    ok: bool
    tested: bool  # False: nothing ran on a GPU (no device, no spec, harness missing)
    summary: str  # one line for progress and the report: "gpu: 6/6 cases passed on NVIDIA H200"
    feedback: str = (
        ""  # for the model when not ok: case, size, first wrong indices, expected vs got
    )
    gpu: str = ""  # device name when tested
    # ran on the CPU emulator (``tested`` stays False: nothing ran on a GPU); a wrong result or
    # an emulator finding fails the candidate like a GPU failure
    emulated: bool = False
    passed_cases: list[str] = field(default_factory=list)
    kernel_ms: float | None = None  # median time of the largest case, when timed
    reference_ms: float | None = None  # the same for the reference (nvcc-compiled source)
    details: dict = field(default_factory=dict)


@dataclass
class Candidate:
    """What the loop's one ptxas run made of a candidate, for the checks after it."""

    ptx: str
    kernel: str
    module: PtxModule | None = None  # the one parse
    cubin: bytes | None = None  # ptxas's output for ``arch`` (when the verifier wants it)
    arch: str = ""
    tool: str = ""  # which ptxas, with its version

    def assembled(self):
        """The cubin as the GPU test takes it (gputest.build.Assembled), or None."""
        if self.cubin is None:
            return None
        from ptxls.gputest.build import Assembled

        m = self.module
        return Assembled(self.cubin, self.arch, self.tool,
                         ptx_version=m.version if m is not None else None,
                         ptx_target=m.arch if m is not None else None,
                         globals=global_names(m) if m is not None else None)  # fmt: skip


def compile_only_verifier(reason: str) -> Verifier:
    async def verify(ptx: str, kernel: str, *, candidate: Candidate | None = None) -> VerifyResult:
        return VerifyResult(ok=True, tested=False, summary=f"not GPU-tested ({reason})")

    return verify


async def gpu_availability() -> tuple[bool, str]:
    """(available, reason) from the GPU-test harness; never raises."""
    try:
        from ptxls.gputest import api
    except Exception as e:  # a harness that cannot import means "no GPU testing"
        return False, f"GPU test harness unavailable: {type(e).__name__}: {e}"
    try:
        ok, reason = await api.gpu_available()
    except Exception as e:
        return False, f"GPU check failed: {type(e).__name__}: {e}"
    return bool(ok), str(reason)


class _Measured(TypedDict):
    """What every VerifyResult made of a report carries, whatever the verdict."""

    gpu: str
    passed_cases: list[str]
    kernel_ms: float | None
    reference_ms: float | None
    details: dict[str, Any]


def from_report(report: TestReport) -> VerifyResult:
    """A gputest TestReport as the loop's VerifyResult. A spec the harness cannot build or a
    missing GPU is no fault of the candidate: it passes untested and says so; a build error,
    a wrong result, a fault or a hang fails it with the harness's feedback."""
    from ptxls.gputest import api
    from ptxls.gputest.report import NO_GPU, SPEC_ERROR

    gpu = str((report.device or {}).get("name", ""))
    passed = [f"n={c.n}" for c in report.cases if c.passed]
    timed = report.timed_case
    common = _Measured(
        gpu=gpu,
        passed_cases=passed,
        kernel_ms=timed.time_ms if timed else None,
        reference_ms=timed.ref_time_ms if timed else None,
        details={
            "status": report.status,
            "reference": report.reference,
            "load_path": report.load_path,
            "seed": report.seed,
        },
    )
    if report.status in (NO_GPU, SPEC_ERROR) or report.refused:
        # (the emulator lacking an instruction is no fault of the candidate either)
        return VerifyResult(
            ok=True,
            tested=False,
            summary=f"not GPU-tested ({report.status}: {report.summary})",
            **common,
        )
    if report.passed and report.emulated:
        summary = (f"emulated (CPU), not GPU-verified: {len(passed)}/{len(report.sizes)} cases "
                   f"passed on the ptxls PTX emulator (seed {report.seed}), no time")  # fmt: skip
        return VerifyResult(ok=True, tested=False, summary=summary, emulated=True, **common)
    if report.passed:
        speed = ""
        if timed and timed.ref_time_ms:
            speed = (
                f"; {timed.time_ms:.3f} ms vs reference {timed.ref_time_ms:.3f} ms at n={timed.n}"
            )
        summary = f"gpu: {len(passed)}/{len(report.sizes)} cases passed on {gpu or 'the GPU'} (seed {report.seed}){speed}"
        return VerifyResult(ok=True, tested=True, summary=summary, **common)
    bad = report.failing_case
    where = f" (case n={bad.n})" if bad else ""
    on = "emulator" if report.emulated else "gpu"
    summary = f"{on}: {report.status}{where}: {report.summary}"[:300]
    return VerifyResult(
        ok=False, tested=not report.emulated, summary=summary, emulated=report.emulated,
        feedback=api.failure_feedback(report), **common,
    )  # fmt: skip


def spec_from_sources(kernel: str, options: dict) -> tuple[TestSpec | None, str]:
    """The spec from what the person gave — the reference CUDA or the original ``.ptx`` file —
    never from the candidate being tested (its ``@gputest`` lines could loosen its own test)."""
    from pathlib import Path

    from ptxls.gputest.spec_source import SpecSource, resolve_spec

    if options.get("reference_cuda") is not None:
        path = options.get("reference_path") or ""
        source = SpecSource("cuda", options["reference_cuda"], kernel, path)
    elif options.get("ptx_path"):
        path = options["ptx_path"]
        source = SpecSource("ptx", Path(path).read_text(errors="replace"), kernel, path)
    else:
        return None, "no test spec from the source (no reference CUDA, no original PTX)"
    res = resolve_spec(source)
    return (res.spec, "") if res.ok else (None, res.unusable)


class GpuVerifier:
    """Each candidate through ``ptxls.gputest.api.run_gpu_test``, loading the cubin of the
    loop's ptxas run (``Candidate``) where there is one for the device's arch."""

    wants_cubin = True

    def __init__(self, spec, options: dict):
        self.spec = spec
        self.options = options

    async def __call__(
        self, ptx: str, kernel: str, candidate: Candidate | None = None
    ) -> VerifyResult:
        from ptxls.gputest import api

        spec, why = (
            (self.spec, "") if self.spec is not None else spec_from_sources(kernel, self.options)
        )
        if spec is None:
            return VerifyResult(ok=True, tested=False, summary=f"not GPU-tested ({why})")
        assembled = candidate.assembled() if candidate is not None else None
        report = await api.run_gpu_test(ptx, kernel, spec, assembled=assembled, **self.options)
        return from_report(report)


def gpu_verifier(spec=None, **options) -> Verifier:
    """A ``GpuVerifier``; ``options`` go to ``run_gpu_test`` (``reference_cuda``,
    ``reference_path``, ``ptx_path``, ``sizes``, ``seed`` ...). The spec is ``spec``, else built
    from the reference / original file (``spec_from_sources``) — never from the candidate's own
    text."""
    return GpuVerifier(spec, options)
