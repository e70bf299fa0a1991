"""Lowering as one call, for the CLI and the language server: pick the kernel, run the LLM loop
(or the compilers' reference, ``compiler_backend.py``), add the provenance header, decide the
output file; the best attempt of a lowering that did not pass is kept under
``.ptxls/attempts/``.

The job and its outcome are ``job.py``; the test a lowering is held to, ``source_spec.py``; the
step plan a person accepts first, ``plan.py``. Nothing here writes the result: the CLI writes the
file, the server sends a WorkspaceEdit (the editor owns the buffer). Transcripts are written as
the loop runs, under ``<workspace>/.ptxls/transcripts/``.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ptxls.fewshot.library import Example
from ptxls.toolchain.secrets import Endpoint, endpoint_of

from . import prompt, safe_write
from .accounting import header_line, run_summary
from .compiler_backend import lower_nvcc
from .job import LowerJob, LowerOutcome, choose_kernel, shown_path, workspace_of
from .loop import LoopOptions, LoopResult, Progress, run_loop
from .perf import Resources
from .protocols import ChatClient, Verifier
from .provenance import Provenance, plan_output, with_header
from .settings import LlmSettings
from .source_spec import default_verifier, facts_for_test, output_positions, source_spec, spec_text
from .sources import SourceKernel
from .target_isa import TargetChoice, choose_target
from .transcript import Transcript

if TYPE_CHECKING:
    from ptxls.gputest.spec import TestSpec

ATTEMPTS_DIR = Path(".ptxls") / "attempts"


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


@dataclass
class _LlmLowering:
    """One LLM lowering, decided before the loop runs: the kernel, the target, the test, the
    few-shot examples, the endpoint as shown (its key scrubbed from then on)."""

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
    examples: list[Example]
    endpoint: Endpoint

    @property
    def stem(self) -> str:
        return f"{self.job.source_path.stem}-{self.src.name or 'request'}"

    def shown_transcript(self) -> str:
        path = self.transcript.path
        return shown_path(path, self.root) if path else ""


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
            own = client = LlmClient(settings, run.endpoint)
        except LlmError as e:
            return LowerOutcome(False, str(e))
    opts = loop_options(settings, job)
    opts.arch, opts.isa = run.arch, run.choice.isa
    opts.facts = facts_for_test(run.spec, not run.not_tested_why)
    opts.output_params = output_positions(run.spec, run.src)
    started = time.monotonic()
    try:
        result = await run_loop(run.src, client=client, opts=opts, transcript=run.transcript,
                                examples=run.examples,
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
        accounting=run_summary(result, settings, time.monotonic() - started, run.endpoint),
    )
    if run.transcript.write_error:
        outcome.notes.append(run.transcript.write_error)
    if not result.ok or result.best is None:
        return _without_a_result(run, result, outcome)
    return _with_the_result(run, result, outcome)


async def _prepare(
    job: LowerJob, settings: LlmSettings, verifier: Verifier | None
) -> tuple[_LlmLowering, Verifier] | LowerOutcome:
    """The endpoint, the kernel, the target ISA, the verifier and the spec, the examples, the
    transcript; or why the lowering cannot run."""
    if not settings.ready:
        return LowerOutcome(False, settings.not_ready_message())
    # made once, here: the key and header values are scrubbed from everything from now on
    endpoint = endpoint_of(settings.base_url, settings.secrets())
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
    examples = prompt.fitting_examples(src, settings.fewshot_count)
    root, inside = workspace_of(job)
    transcript = Transcript.create(
        root, f"{job.source_path.stem}-{src.name or 'request'}", [settings.api_key]
    )
    transcript.record("settings", **settings.public_dict(endpoint))
    transcript.record(
        "target", arch=arch, isa=choice.isa, why=choice.why, spec=spec_text(spec) or None
    )
    run = _LlmLowering(job, settings, src, arch, choice, spec, not_tested_why, root, inside,
                       transcript, examples, endpoint)  # fmt: skip
    return run, verifier


def _without_a_result(run: _LlmLowering, result: LoopResult, outcome: LowerOutcome):
    """Nothing passed: the best attempt written under .ptxls/attempts, and said where."""
    if result.attempt is not None and not result.cancelled:
        text = _attempt_text(result.attempt, run.src, result.stop_reason, run.shown_transcript())
        outcome.attempt_path = write_attempt(run.root, run.stem, text)
    kept = (
        f"; best attempt ({result.attempt.describe()}) kept in "
        f"{shown_path(outcome.attempt_path, run.root)}"
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
        source=shown_path(job.source_path, job.workspace)
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
