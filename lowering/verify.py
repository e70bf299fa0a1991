"""The verification step after ptxas: pluggable, so the loop runs the same with or without a GPU.

A verifier is any async callable ``(ptx, kernel) -> VerifyResult``. ``gpu_verifier`` wraps the
GPU-test harness (``ptxls.gputest.api``) when a device is present; ``compile_only_verifier``
passes everything through with ``tested=False``, so the result says "not GPU-tested" instead of
pretending.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field


@dataclass
class VerifyResult:
    ok: bool
    tested: bool  # False: nothing ran on a GPU (no device, no spec, harness missing)
    summary: str  # one line for progress and the report: "gpu: 6/6 cases passed on NVIDIA H200"
    feedback: str = (
        ""  # for the model when not ok: case, size, first wrong indices, expected vs got
    )
    gpu: str = ""  # device name when tested
    passed_cases: list[str] = field(default_factory=list)
    kernel_ms: float | None = None  # median time of the largest case, when timed
    reference_ms: float | None = None  # the same for the reference (nvcc-compiled source)
    details: dict = field(default_factory=dict)


Verifier = Callable[[str, str], Awaitable[VerifyResult]]


def compile_only_verifier(reason: str) -> Verifier:
    async def verify(ptx: str, kernel: str) -> VerifyResult:
        return VerifyResult(ok=True, tested=False, summary=f"not GPU-tested ({reason})")

    return verify


def _get(obj, *names, default=None):
    for n in names:
        if isinstance(obj, dict) and n in obj:
            return obj[n]
        if hasattr(obj, n):
            return getattr(obj, n)
    return default


def gpu_availability() -> tuple[bool, str]:
    """(available, reason) from the GPU-test harness; never raises."""
    try:
        from ptxls.gputest import api
    except Exception as e:  # noqa: BLE001 - a harness that cannot import means "no GPU testing"
        return False, f"GPU test harness unavailable: {type(e).__name__}: {e}"
    try:
        ok, reason = api.gpu_available()
    except Exception as e:  # noqa: BLE001
        return False, f"GPU check failed: {e}"
    return bool(ok), str(reason)


def gpu_verifier(
    *, spec=None, reference_cuda: str | None = None, reference_kernel: str | None = None, **options
) -> Verifier:
    """Run the harness's ``run_gpu_test`` on each candidate. ``spec``: a TestSpec (or None to let
    the harness derive one from the reference CUDA); extra ``options`` go to the harness."""

    async def verify(ptx: str, kernel: str) -> VerifyResult:
        from ptxls.gputest import api

        kwargs = dict(options)
        if spec is not None:
            kwargs["spec"] = spec
        if reference_cuda is not None:
            kwargs["reference_cuda"] = reference_cuda
        if reference_kernel is not None:
            kwargs["reference_kernel"] = reference_kernel
        report = await api.run_gpu_test(ptx, kernel, **kwargs)
        ok = bool(_get(report, "passed", "ok", default=False))
        gpu = str(_get(report, "gpu", "device", "gpu_name", default="") or "")
        cases = _get(report, "cases", default=[]) or []
        passed = [
            str(_get(c, "label", "name", default=_get(c, "n", default="?")))
            for c in cases
            if _get(c, "passed", "ok", default=False)
        ]
        summary = _get(report, "summary", default=None)
        if callable(summary):
            summary = summary()
        if not summary:
            summary = f"gpu: {len(passed)}/{len(cases)} cases passed" + (
                f" on {gpu}" if gpu else ""
            )
        feedback = "" if ok else api.failure_feedback(report)
        return VerifyResult(
            ok=ok,
            tested=bool(_get(report, "ran", "tested", default=True)),
            summary=str(summary),
            feedback=feedback,
            gpu=gpu,
            passed_cases=passed,
            kernel_ms=_get(report, "kernel_ms", "time_ms", default=None),
            reference_ms=_get(report, "reference_ms", default=None),
            details={"report": repr(report)[:4000]},
        )

    return verify
