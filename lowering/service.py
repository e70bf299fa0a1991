"""Lowering as one call, for the CLI and the language server: pick the kernel, run the nvcc
reference or the LLM loop, add the provenance header, decide the output file.

Nothing here writes the result: the CLI writes the file, the server sends a WorkspaceEdit (the
editor owns the buffer). Transcripts are written as the loop runs, under
``<workspace>/.ptxls/transcripts/``.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ptxls.fewshot.retrieve import pick_examples
from ptxls.frontend.languages import language_of

from . import prompt, safe_write
from .accounting import header_line, run_summary
from .loop import LoopOptions, LoopResult, Progress, run_loop
from .perf import Resources
from .protocols import ChatClient, Verifier
from .provenance import OutputPlan, Provenance, plan_output, with_header
from .settings import LlmSettings
from .sources import SourceKernel, sources_in
from .target_isa import TargetChoice, choose_target
from .transcript import Transcript
from .verify import compile_only_verifier, gpu_availability, gpu_verifier

if TYPE_CHECKING:
    from ptxls.gputest.spec import TestSpec

ATTEMPTS_DIR = Path(".ptxls") / "attempts"
PLANS_DIR = Path(".ptxls") / "plans"


@dataclass
class LowerJob:
    source_path: Path
    text: str
    backend: str = "llm"  # "llm", "nvcc" or "triton" (the compilers' reference lowerings)
    kernel: str | None = None  # by name ...
    line: int | None = None  # ... or the one at this 0-based line
    describe: str | None = None  # a plain-language request instead of a kernel in the file
    optimize: bool = False  # "Optimize with LLM": all candidates verified and timed, fastest kept
    arch: str | None = None
    output: Path | None = None
    workspace: Path | None = None  # transcripts go under <workspace>/.ptxls/transcripts
    ptxas_path: str | None = None
    nvcc_path: str | None = None
    compile_only: bool = False  # asked on purpose: ptxas-checked, no GPU test
    device: str = "auto"  # where candidates are tested: auto | gpu | cpu (the emulator)
    plan_text: str = ""  # a step plan the person accepted (strategy "plan")


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
    not_tested_why: str = ""  # when ok but not GPU-tested: why (no device, no reference, asked)
    emulated: bool = False  # passed its tests on the CPU emulator (never called GPU-tested)
    compile_only: bool = False  # the person asked for compile-only
    attempt_path: Path | None = None  # the best failing attempt, written when nothing passed
    warnings: list[str] = field(default_factory=list)
    spec: str = ""  # the test spec used, in words (recorded in the provenance header)
    ran: bool = False  # the lowering ran (False: it could not: no endpoint, no such kernel)
    inside_workspace: bool = True  # the source lies in the workspace (outputs may be written)
    backend: str = "llm"
    # model, endpoint, candidates, rounds and their verdicts, tokens, duration, cost
    # (accounting.run_summary); empty when no LLM loop ran
    accounting: dict = field(default_factory=dict)

    @property
    def status(self) -> str:
        """ "passed" (GPU-tested), "compiled" (ptxas-clean, not GPU-tested), "failed", "error"."""
        if self.ok:
            return "passed" if self.gpu_tested else "compiled"
        return "failed" if self.ran else "error"


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
    found = sources_in(job.text, language)
    if job.backend == "nvcc":
        found = [k for k in found if k.kind == "cuda"]
    elif job.backend == "triton":
        found = [k for k in found if k.kind == "triton"]
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
        source=_shown_path(job.source_path, job.workspace),
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


def request_spec(src: SourceKernel, job: LowerJob) -> tuple[TestSpec | None, str]:
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


def source_spec(src: SourceKernel, job: LowerJob) -> tuple[TestSpec | None, str]:
    """The test spec, from the source and the person only — never from a candidate's PTX
    (whose ``@gputest`` lines could loosen its own test): the CUDA signature and the source's
    annotation / sidecar, the original PTX's annotation or paired CUDA ("Optimize"), or a
    request's ``@gputest`` lines."""
    from ptxls.gputest.pairing import SpecResolution
    from ptxls.gputest.spec_source import SpecSource, resolve_spec, unusable

    if src.kind == "request":
        return request_spec(src, job)
    if src.kind in ("cuda", "ptx"):
        res = resolve_spec(SpecSource(src.kind, job.text, src.name, str(job.source_path)))
    elif src.kind == "triton":
        from .triton_reference import triton_test_spec

        spec, problems, _build = triton_test_spec(job.text, src.name, str(job.source_path))
        res = SpecResolution(spec, problems)
    else:
        return None, f"no runnable {src.kind.capitalize()} reference"
    return (res.spec, "") if res.ok else (None, unusable(res))


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
    if job.compile_only:
        why = "compile-only requested"
        spec, _ = source_spec(src, job)
        return compile_only_verifier(why), why, spec
    spec, why = source_spec(src, job)
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
        from .triton_reference import triton_test_spec

        _spec, _problems, build = triton_test_spec(job.text, src.name, str(job.source_path))
        # on the emulator the reference is Triton's own PTX of the kernel (gputest/emulated.py)
        return gpu_verifier(spec=spec, triton_reference=build.to_json(), device=device), "", spec
    return gpu_verifier(spec=spec, device=device), "", spec


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
        temperature=settings.temperature,
        budget_s=getattr(settings, "budget_s", None),
        plan_text=job.plan_text,
        max_total_tokens=settings.max_total_tokens,
        max_cost=settings.max_cost,
        price_prompt=settings.price_prompt,
        price_completion=settings.price_completion,
    )


def fitting_examples(src: SourceKernel, k: int):
    """Few-shot examples for the request, never the exact answer to it: an example whose kernel
    is the one asked for (same entry name, or the same CUDA text) is left out."""
    from ptxls.fewshot.library import load_examples

    def norm(t: str) -> str:
        return " ".join(t.split())

    everything = load_examples()
    own = norm(src.text)
    allowed = [
        e
        for e in everything
        if not (src.name and f".entry {src.name}(" in e.ptx.replace(" (", "("))
        and norm(e.reference_cu) != own
        and not (own and own in norm(e.reference_cu))
    ]
    return pick_examples(src.text, k, allowed) if allowed else []


def workspace_of(job: LowerJob) -> tuple[Path, bool]:
    """(the folder ptxls may write this job's files in, whether the source lies inside it).
    A source outside the workspace gets its transcripts and attempts in ptxls's own cache
    folder, and no result beside it."""
    if job.workspace is not None and (
        job.describe or safe_write.is_inside(job.source_path, job.workspace)
    ):
        return Path(job.workspace), True
    cache = safe_write.user_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    return cache, False


def _attempt_text(attempt, src: SourceKernel, why: str, transcript: str) -> str:
    lines = [
        "// NOT A PASSING RESULT: the best attempt of a lowering that did not pass.",
        f"// kernel: {src.name or '(request)'}",
        f"// attempt: {attempt.describe()}",
        f"// why the lowering stopped: {why}",
    ]
    if transcript:
        lines.append(f"// transcript: {transcript}")
    return "\n".join(lines) + "\n" + attempt.ptx.strip() + "\n"


def write_attempt(root: Path, stem: str, text: str) -> Path | None:
    target = root / ATTEMPTS_DIR / f"{stem}.attempt.ptx"
    try:
        return safe_write.write_text(target, text, root=root, replace_symlink=True)
    except (safe_write.UnsafeWrite, OSError):
        return None


async def make_plan(
    job: LowerJob,
    settings: LlmSettings,
    *,
    client: ChatClient | None = None,
    progress: Progress | None = None,
) -> tuple[str, str]:
    """Only the step plan (strategy "plan"), for a person to check before any PTX is written.
    Returns (plan, error)."""
    if not settings.ready:
        return "", settings.not_ready_message()
    src = choose_kernel(job)
    if isinstance(src, str):
        return "", src
    arch = job.arch or settings.arch
    choice = await choose_target(arch, ptxas_path=job.ptxas_path)
    if choice.problem:
        return "", choice.problem
    spec, _ = source_spec(src, job)
    examples = fitting_examples(src, settings.fewshot_count)
    messages = prompt.first_messages(
        src,
        examples,
        prompt.Target(arch, choice.isa),
        file_name="" if job.describe else job.source_path.name,
        plan=True,
        facts=facts_for_test(spec, False),
    )
    from .llm_client import LlmClient, LlmError

    own = None  # the client made here (closed here), when the caller gave none
    if client is None:
        try:
            own = client = LlmClient(settings)
        except LlmError as e:
            return "", str(e)
    try:
        (progress or (lambda _m: None))("asking the model for a step plan")
        reply = await client.chat(messages, seed=settings.seed)
    except LlmError as e:
        return "", str(e)
    finally:
        if own is not None:
            await own.aclose()
    plan = (reply.text or "").strip()
    if not plan:
        return "", "the model sent an empty plan" + (
            " (cut at the token limit: raise ptxls.llm.maxTokens)"
            if reply.finish_reason == "length"
            else ""
        )
    return plan, ""


def plan_document(job: LowerJob, kernel: str, plan: str) -> str:
    """The plan as a document a person edits and accepts."""
    return (
        f"# Plan for lowering {kernel or 'the request'} to PTX\n\n"
        f"Source: {job.source_path.name}\n\n"
        "Edit the steps below if they are wrong and save, then accept them: the code lens "
        '"Lower with this plan" (on this file, or on the kernel in its source), or '
        "`ptxls lower ... --plan THIS_FILE`. No PTX has been written yet.\n\n"
        "<!-- the plan starts below this line -->\n"
        f"{plan.strip()}\n"
    )


def plan_from_document(text: str) -> str:
    marker = "<!-- the plan starts below this line -->"
    return text.split(marker, 1)[1].strip() if marker in text else text.strip()


@dataclass
class _LlmLowering:
    """One LLM lowering, decided before the loop runs: the kernel, the target, the test."""

    job: LowerJob
    settings: LlmSettings
    src: SourceKernel
    arch: str
    choice: TargetChoice
    spec: TestSpec | None
    not_tested_why: str
    root: Path
    inside: bool
    transcript: Transcript

    @property
    def stem(self) -> str:
        return f"{self.job.source_path.stem}-{self.src.name or 'request'}"

    def shown_transcript(self) -> str:
        path = self.transcript.path
        return _shown_path(path, self.root) if path else ""


async def lower_llm(
    job: LowerJob,
    settings: LlmSettings,
    *,
    progress: Progress | None = None,
    cancel: asyncio.Event | None = None,
    verifier: Verifier | None = None,
    client: ChatClient | None = None,
) -> LowerOutcome:
    prepared = await _prepare(job, settings, verifier)
    if isinstance(prepared, LowerOutcome):
        return prepared
    run, verifier = prepared
    own = None  # the client made here (closed here), when the caller gave none
    if client is None:
        from .llm_client import LlmClient, LlmError

        try:
            own = client = LlmClient(settings)
        except LlmError as e:
            return LowerOutcome(False, str(e))
    opts = loop_options(settings, job)
    opts.arch, opts.isa = run.arch, run.choice.isa
    opts.facts = facts_for_test(run.spec, not run.not_tested_why)
    opts.output_params = output_positions(run.spec, run.src)
    started = time.monotonic()
    try:
        result = await run_loop(run.src, client=client, opts=opts, transcript=run.transcript,
                                examples=fitting_examples(run.src, settings.fewshot_count),
                                verifier=verifier, progress=progress, cancel=cancel)  # fmt: skip
    finally:
        if own is not None:
            await own.aclose()
    outcome = LowerOutcome(
        result.ok,
        result.message,
        result.kernel,
        report=result.report(),
        transcript=run.transcript.path,
        loop=result,
        warnings=list(result.warnings),
        spec=spec_text(run.spec),
        # the endpoint never answered (every request refused or failed): it could not run
        ran=not result.never_answered,
        compile_only=job.compile_only,
        inside_workspace=run.inside,
        accounting=run_summary(result, settings, time.monotonic() - started),
    )
    if run.transcript.write_error:
        outcome.notes.append(run.transcript.write_error)
    if not result.ok or result.best is None:
        return _without_a_result(run, result, outcome)
    return _with_the_result(run, result, outcome)


async def _prepare(
    job: LowerJob, settings: LlmSettings, verifier: Verifier | None
) -> tuple[_LlmLowering, Verifier] | LowerOutcome:
    """The kernel, the target ISA, the verifier and the spec, the transcript; or why the
    lowering cannot run."""
    if not settings.ready:
        return LowerOutcome(False, settings.not_ready_message())
    src = choose_kernel(job)
    if isinstance(src, str):
        return LowerOutcome(False, src)
    arch = job.arch or settings.arch
    choice = await choose_target(arch, ptxas_path=job.ptxas_path)
    if choice.problem:
        return LowerOutcome(False, choice.problem, src.name)
    not_tested_why = ""
    if verifier is None:
        verifier, not_tested_why, spec = await default_verifier(src, job)
    else:
        spec, _ = source_spec(src, job)
    root, inside = workspace_of(job)
    transcript = Transcript.create(
        root, f"{job.source_path.stem}-{src.name or 'request'}", [settings.api_key]
    )
    transcript.record("settings", **settings.public_dict())
    transcript.record(
        "target", arch=arch, isa=choice.isa, why=choice.why, spec=spec_text(spec) or None
    )
    run = _LlmLowering(job, settings, src, arch, choice, spec, not_tested_why, root, inside,
                       transcript)  # fmt: skip
    return run, verifier


def _without_a_result(run: _LlmLowering, result: LoopResult, outcome: LowerOutcome):
    """Nothing passed: the best attempt written under .ptxls/attempts, and said where."""
    if result.attempt is not None and not result.cancelled:
        text = _attempt_text(result.attempt, run.src, result.stop_reason, run.shown_transcript())
        outcome.attempt_path = write_attempt(run.root, run.stem, text)
    kept = (
        f"; best attempt ({result.attempt.describe()}) kept in "
        f"{_shown_path(outcome.attempt_path, run.root)}"
        if outcome.attempt_path and result.attempt
        else ""
    )
    shown = run.shown_transcript() or "not written"
    outcome.message = f"{result.message}{kept} (transcript: {shown})"
    return outcome


def _with_the_result(run: _LlmLowering, result: LoopResult, outcome: LowerOutcome):
    """The passing PTX with its provenance header, and where it goes."""
    job, settings, best = run.job, run.settings, result.best
    assert best is not None and best.ptx is not None  # the caller's check; a pass keeps its PTX
    kernel = run.src.name or best.kernel or "kernel"
    v = best.verify
    tested = bool(v and v.tested)
    emulated = bool(v and v.emulated)  # its summary says "emulated (CPU), not GPU-verified"
    gpu_line = v.summary if v else "not GPU-tested"
    if not tested and not emulated and "not GPU-tested" not in gpu_line:
        gpu_line = f"not GPU-tested ({run.not_tested_why or gpu_line})"
    usage = best.usage or Resources()  # from the ptxas run that passed it: no second run
    notes = [f"warning: {w}" for w in result.warnings]
    notes.append(f".version {run.choice.isa}: {run.choice.why}")
    rounds = f"{len(best.rounds)}" + (
        f", PTX of round {best.best_round}" if best.best_round != len(best.rounds) else ""
    )
    rounds += (f" (candidate {best.index} of {settings.candidates}, max {settings.rounds} rounds,"
               f" strategy {settings.strategy})")  # fmt: skip
    prov = Provenance(
        resources=f"{usage.text()} (ptxas -v, {run.arch})" if usage.registers is not None else "",
        spent=header_line(outcome.accounting) if outcome.accounting else "",
        backend="llm",
        source=_shown_path(job.source_path, job.workspace)
        if not job.describe
        else f"request: {run.src.text[:120]}",
        kernel=kernel,
        model=best.model or settings.model or "",
        rounds=rounds,
        compile=best.rounds[-1].summary.split(";")[0],
        gpu=gpu_line,
        spec=(spec_text(run.spec) if tested or emulated else ""),
        transcript=run.shown_transcript(),
        notes=tuple(notes),
    )
    outcome.ptx = with_header(best.ptx, prov)
    outcome.kernel = kernel
    outcome.gpu_tested = tested
    outcome.emulated = emulated
    outcome.not_tested_why = "" if tested else (run.not_tested_why or gpu_line)
    if run.inside or job.output is not None:
        outcome.output = plan_output(job.source_path, kernel, "llm", outcome.ptx, job.output)
    if tested:
        outcome.message = f"{kernel}: {result.message}"
    else:
        outcome.message = (
            f"{kernel}: ptxas-clean, NOT GPU-tested ({outcome.not_tested_why}) — "
            f"candidate {best.index}, round {len(best.rounds)}"
        )
    return outcome


async def close_gpu_worker() -> None:
    """Close the GPU-test worker this event loop started (``gpu_availability`` starts one and
    keeps it warm). A one-shot ``asyncio.run`` caller (the CLI, the demo) must await this before
    its loop ends: a subprocess transport that outlives its loop prints "Exception ignored ...
    Event loop is closed" at exit on Python 3.12."""
    try:
        from ptxls.gputest import supervisor
    except Exception:  # no harness: nothing was started
        return
    await supervisor.close_shared()  # the GPU's worker and the emulator's


async def lower(job: LowerJob, settings: LlmSettings | None = None, **kw) -> LowerOutcome:
    if job.backend in ("nvcc", "triton"):
        return await lower_nvcc(job, kw.get("progress"))
    if settings is None:
        from .settings import from_env

        settings, _ = from_env(os.environ)
    return await lower_llm(job, settings, **kw)
