"""Lowering as one call, for the CLI and the language server: pick the kernel, run the nvcc
reference or the LLM loop, add the provenance header, decide the output file.

Nothing here writes the result: the CLI writes the file, the server sends a WorkspaceEdit (the
editor owns the buffer). Transcripts are written as the loop runs, under
``<workspace>/.ptxls/transcripts/``.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from pathlib import Path

from ptxls.fewshot.retrieve import pick_examples

from .loop import LoopOptions, LoopResult, Progress, run_loop
from .nvcc_reference import lower_with_nvcc
from .perf import resource_usage
from .provenance import OutputPlan, Provenance, plan_output, with_header
from .settings import LlmSettings
from .sources import SourceKernel, kernels_in, language_of
from .transcript import Transcript
from .verify import Verifier, compile_only_verifier, gpu_availability, gpu_verifier


@dataclass
class LowerJob:
    source_path: Path
    text: str
    backend: str = "llm"  # "llm" or "nvcc"
    kernel: str | None = None  # by name ...
    line: int | None = None  # ... or the one at this 0-based line
    describe: str | None = None  # a plain-language request instead of a kernel in the file
    optimize: bool = False  # "Optimize with LLM": all candidates verified and timed, fastest kept
    arch: str | None = None
    output: Path | None = None
    workspace: Path | None = None  # transcripts go under <workspace>/.ptxls/transcripts
    ptxas_path: str | None = None
    nvcc_path: str | None = None


@dataclass
class LowerOutcome:
    ok: bool
    message: str
    kernel: str = ""
    ptx: str = ""  # with the provenance header
    output: OutputPlan | None = None
    report: str = ""
    transcript: Path | None = None
    loop: LoopResult | None = None
    gpu_tested: bool = False
    notes: list[str] = field(default_factory=list)


def choose_kernel(job: LowerJob) -> SourceKernel | str:
    """The kernel (or request) the job is about, or a message saying why there is none."""
    if job.describe:
        from .sources import requests

        found = requests("// @ptx: " + job.describe.strip())
        if found:
            if job.kernel and not found[0].name:
                found[0].name = job.kernel
            return found[0]
        return "empty description"
    language = language_of(str(job.source_path))
    if language is None:
        return f"{job.source_path.name}: not a .cu, .py or .ptx file"
    found = kernels_in(job.text, language)
    if job.backend == "nvcc":
        found = [k for k in found if k.kind == "cuda"]
    if job.line is not None:
        # the line wins, but a name given with it must agree (the buffer may have moved)
        at = [k for k in found if k.contains(job.line) and (not job.kernel or k.name == job.kernel)]
        if at:
            return at[0]
        if not job.kernel:
            return f"no kernel at line {job.line + 1} of {job.source_path.name}"
    if job.kernel:
        named = [k for k in found if k.name == job.kernel]
        if named:
            return named[0]
        names = ", ".join(k.name or "(request)" for k in found) or "none"
        return f"no kernel '{job.kernel}' in {job.source_path.name} (found: {names})"
    kernels = [k for k in found if k.kind != "request"]
    if len(kernels) == 1:
        return kernels[0]
    if not found:
        return f"no kernel in {job.source_path.name}"
    if len(found) == 1:
        return found[0]
    names = ", ".join(k.name or "(request)" for k in found)
    return f"{job.source_path.name} has several kernels ({names}): name one with --kernel"


def _shown_path(path: Path, root: Path | None) -> str:
    try:
        return str(path.resolve().relative_to((root or Path.cwd()).resolve()))
    except ValueError:
        return str(path)


async def lower_nvcc(job: LowerJob, progress: Progress | None = None) -> LowerOutcome:
    src = choose_kernel(job)
    if isinstance(src, str):
        return LowerOutcome(False, src)
    if src.kind != "cuda":
        return LowerOutcome(False, "the nvcc reference lowering needs a CUDA __global__ kernel")
    arch = job.arch or "sm_90"
    (progress or (lambda _m: None))(f"nvcc -ptx -arch={arch} {job.source_path.name}")
    res = await lower_with_nvcc(
        job.text,
        file_path=str(job.source_path),
        kernel=src.name,
        arch=arch,
        nvcc_path=job.nvcc_path,
        ptxas_path=job.ptxas_path,
    )
    if not res.ok:
        return LowerOutcome(False, res.message, src.name, notes=res.notes)
    usage = await resource_usage(res.ptx, res.entry, arch=arch, ptxas_path=job.ptxas_path)
    prov = Provenance(
        resources=f"{usage.text()} (ptxas -v, {arch})" if usage.registers is not None else "",
        backend="nvcc",
        source=_shown_path(job.source_path, job.workspace),
        kernel=src.name,
        tool=res.tool,
        rounds="1 (deterministic compiler output)",
        compile=res.compile_summary,
        gpu="not GPU-tested (compiler reference)",
        notes=tuple(res.notes),
    )
    ptx = with_header(res.ptx, prov)
    plan = plan_output(job.source_path, src.name, "nvcc", ptx, job.output)
    report = f"nvcc lowering of {src.name}: {res.compile_summary}\n" + "\n".join(
        f"  {n}" for n in res.notes
    )
    return LowerOutcome(
        True,
        f"{src.name}: nvcc reference lowering, {res.compile_summary}",
        src.name,
        ptx,
        plan,
        report,
        notes=res.notes,
    )


def request_spec(src: SourceKernel, job: LowerJob):  # -> (TestSpec | None, why)
    """A plain-language request is GPU-testable when its comment block carries ``@gputest``
    lines: the parameters in order and a numpy ``ref:`` (gputest/README.md), e.g.

        // @ptx: relu(float* x, int n): x[i] = max(x[i], 0) for i < n
        // @gputest x: inout f32[n]; n: size
        // @gputest ref: x = np.maximum(x, 0)
    """
    no_ref = (
        "no reference to test against for a plain-language request (add @gputest lines with a ref:)"
    )
    if job.describe or not src.name:
        return None, no_ref
    from ptxls.gputest import annotations

    lines = job.text.splitlines()
    spec, problems = annotations.apply(None, lines, src.end_line + 1, src.name, where="request")
    if problems:
        return None, "the request's @gputest lines have problems: " + "; ".join(
            p.message for p in problems
        )
    if spec is None:
        return None, no_ref
    if not spec.numpy_ref:
        return None, "the request's @gputest lines give no 'ref:' to compare with"
    return spec, ""


async def default_verifier(src: SourceKernel, job: LowerJob) -> tuple[Verifier, str]:
    """GPU-test against the source where a GPU is present and there is something to test
    against (the CUDA source, or for "Optimize" the PTX's own pairing/annotation); otherwise
    compile-checked only, saying why."""
    if src.kind == "request":
        spec, why = request_spec(src, job)
        if spec is None:
            return compile_only_verifier(why), why
        available, reason = await gpu_availability()
        if not available:
            return compile_only_verifier(reason), reason
        return gpu_verifier(spec=spec), ""
    if src.kind == "triton":
        why = "no runnable Triton reference"
        return compile_only_verifier(why), why
    available, reason = await gpu_availability()
    if not available:
        return compile_only_verifier(reason), reason
    if src.kind == "cuda":
        return gpu_verifier(reference_cuda=job.text, reference_path=str(job.source_path)), ""
    if src.kind == "ptx":
        return gpu_verifier(ptx_path=str(job.source_path)), ""
    return compile_only_verifier(f"cannot test a {src.kind} source"), src.kind


def loop_options(settings: LlmSettings, job: LowerJob, reference_ptx: str = "") -> LoopOptions:
    return LoopOptions(
        candidates=settings.candidates,
        rounds=settings.rounds,
        strategy=settings.strategy,
        optimize=job.optimize,
        seed=settings.seed,
        arch=job.arch or settings.arch,
        ptxas_path=job.ptxas_path,
        file_name="" if job.describe else job.source_path.name,
        reference_ptx=reference_ptx,
    )


async def lower_llm(
    job: LowerJob,
    settings: LlmSettings,
    *,
    progress: Progress | None = None,
    cancel: asyncio.Event | None = None,
    verifier: Verifier | None = None,
    client=None,
) -> LowerOutcome:
    if not settings.ready:
        return LowerOutcome(False, settings.not_ready_message())
    src = choose_kernel(job)
    if isinstance(src, str):
        return LowerOutcome(False, src)
    if verifier is None:
        verifier, _ = await default_verifier(src, job)
    root = job.workspace or job.source_path.parent
    transcript = Transcript.create(
        root, f"{job.source_path.stem}-{src.name or 'request'}", [settings.api_key]
    )
    transcript.record("settings", **settings.public_dict())
    examples = pick_examples(src.text, settings.fewshot_count)
    own_client = client is None
    if own_client:
        from .llm_client import LlmClient, LlmError

        try:
            client = LlmClient(settings)
        except LlmError as e:
            return LowerOutcome(False, str(e))
    try:
        result = await run_loop(
            src,
            client=client,
            examples=examples,
            opts=loop_options(settings, job),
            transcript=transcript,
            verifier=verifier,
            progress=progress,
            cancel=cancel,
        )
    finally:
        if own_client:
            await client.aclose()
    shown_transcript = _shown_path(transcript.path, root) if transcript.path else ""
    outcome = LowerOutcome(
        result.ok,
        result.message,
        result.kernel,
        report=result.report(),
        transcript=transcript.path,
        loop=result,
    )
    if not result.ok or result.best is None:
        outcome.message = f"{result.message} (transcript: {shown_transcript})"
        return outcome
    best = result.best
    from ptxls.diagnostics.ptx_parse import parse_ptx

    kernel = src.name or next((e.name for e in parse_ptx(best.ptx)[0].entries), "kernel")
    v = best.verify
    gpu_line = v.summary if v else "not GPU-tested"
    last = best.rounds[-1]
    arch = job.arch or settings.arch
    usage = await resource_usage(best.ptx, kernel, arch=arch, ptxas_path=job.ptxas_path)
    prov = Provenance(
        resources=f"{usage.text()} (ptxas -v, {arch})" if usage.registers is not None else "",
        backend="llm",
        source=_shown_path(job.source_path, job.workspace)
        if not job.describe
        else f"request: {src.text[:120]}",
        kernel=kernel,
        model=best.model or settings.model or "",
        rounds=f"{len(best.rounds)}"
        + (f", PTX of round {best.best_round}" if best.best_round != len(best.rounds) else "")
        + f" (candidate {best.index} of {settings.candidates}, max {settings.rounds} rounds, strategy {settings.strategy})",
        compile=last.summary.split(";")[0],
        gpu=gpu_line,
        transcript=shown_transcript,
    )
    outcome.ptx = with_header(best.ptx, prov)
    outcome.kernel = kernel
    outcome.gpu_tested = bool(v and v.tested)
    outcome.output = plan_output(job.source_path, kernel, "llm", outcome.ptx, job.output)
    outcome.message = f"{kernel}: {result.message}"
    return outcome


async def lower(job: LowerJob, settings: LlmSettings | None = None, **kw) -> LowerOutcome:
    if job.backend == "nvcc":
        return await lower_nvcc(job, kw.get("progress"))
    if settings is None:
        from .settings import from_env

        settings, _ = from_env(os.environ)
    return await lower_llm(job, settings, **kw)
