"""What other rooms call. Everything here is async or cheap, never blocks the event loop, and
never raises on bad user code: a kernel that faults, hangs or is wrong is a TestReport.

    report = await run_gpu_test(ptx_text, "vec_add", reference_cuda=cu_text)
    print(format_table(report))          # hover / CLI
    prompt += failure_feedback(report)   # LLM repair loop
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ptxls.frontend.kernels import kernels_in
from ptxls.frontend.languages import CUDA, PTX, language_of
from ptxls.frontend.ptx import ptx_target, ptx_version

from . import build
from .emulated import run_on_emulator
from .launch import launch_dims, scalar_env
from .pairing import SpecResolution, infer_spec_from_cuda, spec_for_ptx
from .report import (
    BUILD_ERROR,
    ERROR,
    FAIL,
    NO_GPU,
    PASS,
    SPEC_ERROR,
    TIMEOUT,
    CaseResult,
    TestReport,
    failure_feedback,
    format_table,
)  # fmt: skip
from .spec import TestSpec
from .spec_check import check_spec
from .spec_source import SpecSource, resolve_spec
from .supervisor import Supervisor, shared_supervisor
from .triton_ref import with_triton_shared

__all__ = [
    "run_gpu_test", "run_gpu_test_cuda", "run_gpu_test_file", "infer_spec_from_cuda",
    "spec_for_ptx", "gpu_available", "format_table", "failure_feedback", "TestReport",
    "TestSpec", "CaseResult", "GpuTestOptions",
]  # fmt: skip

DEFAULT_TIMEOUT_S = 10.0  # per step: a launch that takes longer is treated as hung
DEVICES = ("auto", "gpu", "cpu")  # GpuTestOptions.device


def no_gpu_text(reason: str) -> str:
    return f"no CUDA device ({reason})"


async def gpu_available(supervisor: Supervisor | None = None) -> tuple[bool, str]:
    """(True, 'NVIDIA H200 (sm_90), driver CUDA 13.0') or (False, 'no CUDA device (why)').
    Asks the worker, so the answer is what a test would meet; the worker stays warm."""
    sup = supervisor or shared_supervisor()
    reply = await sup.request({"op": "hello"}, timeout_s=60)
    if reply.timed_out:
        return False, no_gpu_text("the GPU worker did not start within 60 s")
    if reply.crashed:
        return False, no_gpu_text(f"the GPU worker exited at start: {reply.stderr_tail}")
    if reply.data.get("no_device") or not reply.data.get("ok"):
        return False, no_gpu_text(reply.data.get("no_device") or reply.data.get("error", "unknown"))
    d = reply.data["device"]
    return (
        True,
        f"{d['name']} ({d['arch']}), driver CUDA {d['driver_cuda']}, PTX ISA ≤ {'.'.join(map(str, d['max_ptx_isa']))} for its JIT",
    )


@dataclass
class GpuTestOptions:
    """How one test runs, whatever the kernel's source (the keywords of ``run_gpu_test*``)."""

    sizes: list[int] | None = None  # instead of the spec's
    timeout_s: float = DEFAULT_TIMEOUT_S  # per step: a launch that takes longer is hung
    supervisor: Supervisor | None = None  # None: the shared, warm worker
    arch: str | None = None  # None: the device's (or the .target's variant of it, sm_90a)
    ptxas: str | None = None
    nvcc: str | None = None
    seed: int | None = None  # None: the spec's, else a fresh one (reported)
    time_it: bool = True
    on_progress: Callable[[str], None] | None = None
    trusted: bool = False  # the spec's expressions may use more than the whitelist
    torch_baseline: bool = False  # also time the spec's bench.torch op (ptxls bench)
    # a TritonBuild's JSON (frontend/triton_build.py): the Triton kernel itself, launched by Triton in
    # the worker, is the reference (gputest/triton_ref.py)
    triton_reference: dict | None = None
    # where it runs: "gpu", "cpu" (the emulator: gputest/emulated.py, nothing timed) or
    # "auto" (the GPU when the worker finds one, else the emulator)
    device: str = "auto"
    emulator_budget: int | None = None  # thread-instructions per case (emulated.CASE_BUDGET)
    emulator_supervisor: Supervisor | None = None  # None: the shared emulator worker


@dataclass
class KernelSource:
    kind: str  # "ptx" or "cuda"
    text: str
    assembled: build.Assembled | None = None  # a cubin ptxas already made of ``text``

    def target(self) -> str | None:
        """The .target's sm_XX of PTX (from the caller's parse when it came assembled)."""
        if self.kind != "ptx":
            return None
        return self.assembled.ptx_target if self.assembled else ptx_target(self.text)

    def version(self) -> tuple[int, int] | None:
        return self.assembled.ptx_version if self.assembled else ptx_version(self.text)


async def run_gpu_test(
    ptx_text: str,
    kernel: str,
    spec: TestSpec | None = None,
    *,
    reference_cuda: str | None = None,
    reference_path: str | None = None,
    ptx_path: str | None = None,
    spec_path: str | None = None,
    assembled: build.Assembled | None = None,
    **options,
) -> TestReport:
    """Test ``kernel`` of ``ptx_text`` on the GPU; ``options`` are ``GpuTestOptions`` fields.
    The spec comes from ``spec``, else ``spec_path`` (``--spec FILE``), else a ``spec.json``
    beside ``ptx_path`` that names this kernel (the library's layout), else the paired CUDA
    (``reference_cuda`` or found beside ``ptx_path``) and/or the PTX's ``@gputest`` annotation.
    The reference is ``reference_cuda`` compiled by nvcc, else the spec's numpy expression (with
    a spec.json's ``reference`` CUDA timed beside it as the nvcc baseline), else the paired CUDA,
    else the kernel itself. ``assembled``: the cubin ptxas already made of ``ptx_text`` (the
    lowering loop's check), loaded instead of assembling again when its arch is the device's."""
    opts = GpuTestOptions(**options)
    started = time.monotonic()
    resolution = SpecResolution(spec, [], reference_cuda, reference_path)
    if spec is None:
        # Reads files and evaluates annotations (text from the repository): a worker thread,
        # never the event loop. A PTX lowered from a Triton kernel (its header names the .py) is
        # tested against the Triton kernel itself (gputest/triton_ref.py).
        wanted = SpecSource("ptx", ptx_text, kernel, ptx_path or "",
                            reference_cuda=reference_cuda, reference_path=reference_path,
                            spec_file=spec_path or "", spec_json_beside=True,
                            triton_header=not opts.triton_reference)  # fmt: skip
        resolution = await asyncio.to_thread(resolve_spec, wanted)
        if resolution.build is not None:  # paired with the Triton kernel its header names
            await with_triton_shared(ptx_text, resolution)
            opts.triton_reference = resolution.build.to_json()
    source = KernelSource("ptx", ptx_text, assembled)
    report = await _run(source, kernel, resolution, opts, reference_cuda is not None)
    report.seconds = time.monotonic() - started
    return report


async def run_gpu_test_cuda(
    cuda_text: str, kernel: str, *, path: str = "", reference_cuda: str | None = None, **options
) -> TestReport:
    """Test a ``__global__`` kernel compiled by nvcc against its annotation's numpy reference,
    or a given reference CUDA, or (with neither) itself: then only self-consistency is checked.
    ``options`` are ``GpuTestOptions`` fields."""
    opts = GpuTestOptions(**options)
    started = time.monotonic()
    resolved = await asyncio.to_thread(resolve_spec, SpecSource("cuda", cuda_text, kernel, path))
    # the reference is the one named (``--ref``), else none: the source itself is under test
    resolution = replace(resolved, reference_source=reference_cuda, reference_path=None)
    source = KernelSource("cuda", cuda_text)
    report = await _run(source, kernel, resolution, opts, reference_cuda is not None)
    report.seconds = time.monotonic() - started
    return report


async def run_gpu_test_file(
    path: str, kernel: str | None = None, *, ref: str | None = None, **kw
) -> list[TestReport]:
    """The CLI's entry: every kernel of a .ptx or .cu file (or the one named)."""
    p = Path(path)
    text = p.read_text(errors="replace")
    language = PTX if language_of(path) == PTX else CUDA
    names = [k for k, _, _ in kernels_in(text, language)]
    if kernel:
        names = [kernel]
    if not names:
        return [TestReport(kernel or p.name, SPEC_ERROR,
                           summary=f"no kernels in {path} (.entry in PTX, __global__ in CUDA)")]  # fmt: skip
    ref_text = Path(ref).read_text(errors="replace") if ref else None
    reports = []
    for name in names:
        if language == "ptx":
            reports.append(await run_gpu_test(text, name, ptx_path=str(p), reference_cuda=ref_text,
                                              reference_path=ref, **kw))  # fmt: skip
        else:
            reports.append(
                await run_gpu_test_cuda(text, name, path=str(p), reference_cuda=ref_text, **kw)
            )
    return reports


@dataclass
class _Plan:
    """One test, decided: what runs, against what, with which seed."""

    source: KernelSource
    kernel: str
    spec: TestSpec
    resolution: SpecResolution
    opts: GpuTestOptions
    ref_kind: str  # "cuda", "numpy", "triton" or "self"
    with_baseline: bool  # a library spec.json: its reference.cu timed beside a numpy reference
    seed: int

    def builds(self, target: str) -> list:
        opts, text = self.opts, self.source.text
        if self.source.kind == "cuda":
            jobs = [build.compile_cuda(text, self.kernel, target, nvcc=opts.nvcc)]
        elif self.source.assembled is not None and self.source.assembled.arch == target:
            jobs = [_use(self.source.assembled)]
        else:
            jobs = [build.assemble_ptx(text, target, ptxas=opts.ptxas)]
        if self.ref_kind == "cuda" or self.with_baseline:
            ref = self.resolution.reference_source
            assert ref is not None  # _plan picks "cuda" and a baseline only with a source
            jobs.append(build.compile_cuda(ref, self.kernel, target, nvcc=opts.nvcc))
        return jobs


async def _use(assembled: build.Assembled) -> build.Built:
    return build.use_assembled(assembled)


async def _run(
    source: KernelSource,
    kernel: str,
    resolution: SpecResolution,
    opts: GpuTestOptions,
    explicit_cuda_ref: bool,
) -> TestReport:
    plan = await _plan(source, kernel, resolution, opts, explicit_cuda_ref)
    if isinstance(plan, TestReport):
        return plan
    report = TestReport(kernel, ERROR, sizes=list(plan.spec.sizes), seed=plan.seed)
    if opts.device not in DEVICES:
        report.summary = f"unknown device {opts.device!r} (one of {', '.join(DEVICES)})"
        return report
    sup = opts.supervisor or shared_supervisor()
    if opts.device == "cpu":
        await run_on_emulator(plan, report)
        return report
    if opts.device == "auto" and (sup.device or sup.no_device):
        ok, why = await gpu_available(sup)
        if not ok:
            await run_on_emulator(plan, report, why)
            return report
    # Nothing known of the device yet (a new worker): the builds start beside its start-up in
    # _build_on_device instead of after it; without a GPU they are cancelled.
    on_device = await _build_on_device(plan, sup, report)
    if on_device is None and opts.device == "auto" and report.status == NO_GPU:
        why, report.status, report.summary, report.seed = report.summary, ERROR, "", plan.seed
        await run_on_emulator(plan, report, why)
        return report
    if on_device is None:
        return report
    built, target = on_device
    try:
        msg = _request(plan, built, report)
        if msg is None:
            return report
        reply = await sup.request(msg, timeout_s=opts.timeout_s, on_progress=opts.on_progress)
    finally:
        built[0].discard()
    _read_reply(report, reply, plan, f"{built[0].tool.split(' (')[0]} -arch={target}")
    return report


async def _plan(
    source: KernelSource,
    kernel: str,
    resolution: SpecResolution,
    opts: GpuTestOptions,
    explicit_cuda_ref: bool,
) -> _Plan | TestReport:
    """The checked spec and what the test compares against; a SPEC_ERROR report when the spec
    cannot run."""
    spec = resolution.spec
    if spec is None or resolution.problems:
        return TestReport(kernel, SPEC_ERROR, problems=resolution.problems,
                          summary="the test spec has problems; nothing ran")  # fmt: skip
    spec = TestSpec.from_dict(spec.to_dict())  # callers keep theirs unchanged
    if opts.sizes:
        spec.sizes = list(opts.sizes)
    # The spec is text from the repository: bounded, whitelisted, off the event loop.
    problems = await asyncio.to_thread(check_spec, spec, trusted=opts.trusted)
    if problems:
        return TestReport(kernel, SPEC_ERROR, problems=problems,
                          summary="the test spec has problems; nothing ran")  # fmt: skip
    seed = (
        opts.seed
        if opts.seed is not None
        else spec.seed
        if spec.seed is not None
        else random.randrange(1, 2**31)
    )
    if opts.triton_reference is not None:
        ref_kind = "triton"
    elif explicit_cuda_ref or (not spec.numpy_ref and resolution.reference_source):
        ref_kind = "cuda"
    elif spec.numpy_ref:
        ref_kind = "numpy"
    else:
        ref_kind = "self"
    with_baseline = bool(ref_kind == "numpy" and spec.reference and resolution.reference_source)
    return _Plan(source, kernel, spec, resolution, opts, ref_kind, with_baseline, seed)


async def _build_on_device(
    plan: _Plan, sup: Supervisor, report: TestReport
) -> tuple[list, str] | None:
    """The kernel's (and the reference's) builds for the device's arch, and that arch; None
    when the report already says why nothing runs (no GPU, a build error).

    The worker (cold: ~1 s) and the builds (nvcc: ~0.4 s) start at the same time. The arch is
    a guess until the worker names the device: the last device seen, the file's .target, or
    sm_90; a wrong guess is rebuilt (and cancelled builds kill their compilers)."""
    file_target = plan.source.target()
    arch = plan.opts.arch
    last_seen = (sup.device or {}).get("arch")
    assembled = plan.source.assembled
    guess = arch or (assembled.arch if assembled and not last_seen else None)
    guess = guess or _arch_for(file_target, last_seen or "sm_90")
    hello = asyncio.ensure_future(gpu_available(sup))
    early = asyncio.ensure_future(asyncio.gather(*plan.builds(guess)))
    try:
        ok, why = await hello
    except BaseException:
        await _discard(early)
        raise
    if not ok:
        await _discard(early)
        report.status, report.summary, report.seed = NO_GPU, why, None
        return None
    device = sup.device or {}
    report.device = device
    target = arch or _arch_for(file_target, device.get("arch", "sm_90"))
    if target == guess:
        built = await early
    else:
        await _discard(early)
        built = await asyncio.gather(*plan.builds(target))
    kb = built[0]
    if kb.cubin_path is None:
        if plan.source.kind == "ptx" and ("not found" in kb.error or "could not run" in kb.error):
            report.notes.append(f"{kb.error.splitlines()[0]} — using the driver JIT instead")
        else:
            report.status, report.summary = BUILD_ERROR, kb.error
            return None
    return built, target


def _request(plan: _Plan, built: list, report: TestReport) -> dict | None:
    """The worker's "run" request; None (and a BUILD_ERROR report) when a reference did not
    build."""
    kb, source = built[0], plan.source
    kernel_req = {"name": kb.symbol or plan.kernel, "cubin_path": kb.cubin_path,
                  "assembler": kb.tool, "ptx": source.text if source.kind == "ptx" else None}  # fmt: skip
    if source.assembled is not None and source.assembled.globals is not None:
        kernel_req["globals"] = source.assembled.globals  # the caller's parse: no scan there
    if plan.ref_kind == "cuda" or plan.with_baseline:
        rb = built[1]
        if rb.cubin_path is None:
            report.status, report.summary = BUILD_ERROR, f"the reference did not build: {rb.error}"
            return None
    ref_req = _reference(plan, built, report)
    msg = {"op": "run", "spec": plan.spec.to_dict(), "seed": plan.seed,
           "time": plan.opts.time_it, "kernel": kernel_req, "reference": ref_req}  # fmt: skip
    if plan.with_baseline:
        rb = built[1]
        msg["baseline"] = {"name": rb.symbol, "cubin_path": rb.cubin_path}
        where = Path(plan.resolution.reference_path or "reference.cu").name
        report.reference += f"; timed against nvcc -O3 {where} ({rb.tool.split(' (')[0]})"
    torch = (plan.spec.bench or {}).get("torch")
    if plan.opts.torch_baseline and torch:
        msg["torch"] = torch
    return msg


def _reference(plan: _Plan, built: list, report: TestReport) -> dict:
    """What the kernel is compared with, for the worker; says it in the report."""
    spec = plan.spec
    if plan.ref_kind == "cuda":
        rb = built[1]
        path = plan.resolution.reference_path
        where = Path(path).name if path else "the reference CUDA"
        report.reference = f"nvcc -O3 {where} ({rb.tool.split(' (')[0]})"
        return {"kind": "cuda", "name": rb.symbol, "cubin_path": rb.cubin_path}
    if plan.ref_kind == "triton":
        build = plan.opts.triton_reference
        assert build is not None  # the kind "triton" comes from it (_plan)
        report.reference = f"the Triton kernel {build['kernel']}, launched by Triton"
        return {"kind": "triton", "build": build}
    if plan.ref_kind == "numpy":
        report.reference = f"numpy in float64: {spec.numpy_ref}"
        return {"kind": "numpy", "expr": spec.numpy_ref, "trusted": plan.opts.trusted}
    report.reference = "none — the kernel against itself (self-consistency, poison and bounds only)"
    report.notes.append("no independent reference: add '// @gputest ref: out = ...' or pair a .cu")
    return {"kind": "self"}


def _read_reply(report: TestReport, reply, plan: _Plan, assembler: str) -> None:
    """The worker's reply into the report: cases, load path, and the status in words.
    ``assembler``: "ptxas 13.0 -arch=sm_90", what made the cubin."""
    report.worker_restarted = reply.restarted
    data = reply.data
    result = data.get("result") or {}
    report.cases = [CaseResult.from_dict(c) for c in result.get("cases", reply.cases)]
    report.copy_ceiling_gbps = result.get("copy_ceiling_gbps")
    load = result.get("load") or {}
    if load.get("path") == "cubin":
        report.load_path = f"cubin from {assembler}"
    elif load.get("path"):
        report.load_path = "PTX through the driver JIT"
    report.jit_log = load.get("jit_log", "")
    report.notes += load.get("notes", [])
    if plan.source.kind == "ptx":
        report.notes += isa_notes(plan.source.version(), report.device, report.load_path)
    bad = report.failing_case
    if reply.timed_out:
        report.status = TIMEOUT
        step = f" while: {reply.last_progress}" if reply.last_progress else ""
        report.summary = (f"timeout: no answer within {plan.opts.timeout_s:g} s{step} — the kernel "
                          "is hung (infinite loop?); the worker was killed and will be replaced")  # fmt: skip
        _mark_hung_case(report, reply.last_progress, plan.spec)
    elif reply.crashed:
        report.summary = (
            f"the GPU worker died during the test ({reply.stderr_tail}); it will be replaced"
        )
    elif data.get("no_device"):
        report.status, report.summary = NO_GPU, no_gpu_text(data["no_device"])
    elif load.get("error"):
        report.status, report.summary = BUILD_ERROR, load["error"]
    elif data.get("cuda_error") and bad is not None:
        # The kernel faulted in a case: a failure of the kernel, not of the harness.
        report.status = FAIL
        report.summary = f"case n={bad.n}: " + "; ".join(bad.messages)
        if data.get("sticky"):
            report.notes.append("the CUDA context was lost; the worker was replaced")
    elif not data.get("ok"):
        report.summary = data.get("error", "unknown error")
    else:
        report.status = PASS if report.cases and all(c.passed for c in report.cases) else FAIL
        if bad is not None:
            report.summary = f"case n={bad.n}: " + "; ".join(bad.messages)


async def _discard(fut: asyncio.Future) -> None:
    """Cancel builds nobody needs and wait for their compilers to be killed."""
    fut.cancel()
    await asyncio.wait([fut])  # our own cancellation still propagates
    if not fut.cancelled() and fut.exception() is None:  # retrieved: no "never retrieved" at exit
        for built in fut.result():
            built.discard()  # a prebuilt cubin's copy (cached builds stay cached)


def isa_notes(version: tuple[int, int] | None, device: dict, load_path: str) -> list[str]:
    """What to tell the person when the PTX's .version is above what the driver's JIT takes
    (docs/gpu-facts.md: the 13.0 driver refuses 9.1+, while the wheel's ptxas writes and takes 9.5)."""
    limit = tuple(device.get("max_ptx_isa") or ())
    if not version or len(limit) != 2 or version <= limit:
        return []
    v, lim = f"{version[0]}.{version[1]}", f"{limit[0]}.{limit[1]}"
    driver = f"this driver (CUDA {device.get('driver_cuda', '?')})"
    if load_path.startswith("cubin"):
        return [f"the PTX is .version {v}, above the {lim} that {driver} can JIT; it ran because "
                "ptxas assembled it to a cubin"]  # fmt: skip
    return [f"the PTX is .version {v}, but {driver} can JIT only up to {lim}: use a ptxas that "
            f"takes {v} (pip install nvidia-cuda-nvcc) so it is loaded as a cubin, or lower the "
            ".version"]  # fmt: skip


def _arch_for(ptx_target_arch: str | None, device_arch: str) -> str:
    """The device's sm_XX, or the file's arch-specific variant of it (sm_90a) when it asks."""
    if ptx_target_arch and ptx_target_arch.startswith(device_arch):
        return ptx_target_arch
    return device_arch


def _mark_hung_case(report: TestReport, progress: str, spec: TestSpec) -> None:
    """Turn 'case 3/6 n=255: running k' into a failed CaseResult, so tables show where it hung."""
    import re

    m = re.match(r"case (\d+)/\d+ n=(\d+)", progress or "")
    if not m:
        return
    idx, n = int(m.group(1)) - 1, int(m.group(2))
    if all(c.index != idx for c in report.cases):
        try:
            grid, block, shared = launch_dims(spec, scalar_env(spec, n))
            launch = {"grid": list(grid), "block": list(block), "shared": shared}
        except Exception:  # the table still shows the case without its launch
            launch = {}
        report.cases.append(CaseResult(idx, n, (report.seed or 0) + idx, False,
                                       messages=[report.summary], launch=launch))  # fmt: skip
