"""The generate → ptxas → (interface) → GPU test → repair loop.

Candidates run in parallel, each for up to ``rounds`` rounds (one generation plus repairs);
the first candidate that passes wins and the others are cancelled. In "optimize" mode every
candidate runs to the end and the fastest passing one is kept. Every request, reply and tool
output goes to the transcript; ``on_progress`` gets one line per step ("candidate 2, round 3:
ptxas: 2 errors"). Cancelling the task (or setting ``cancel``) stops everything promptly and
kills running tools (the diagnostics engine's subprocesses die with their task).

Timings per round separate the model's time from everything else, so the loop's own overhead
(extraction, ptxas, interface checks, GPU test, bookkeeping) can be measured (bench/).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ptxls.fewshot.library import Example

from . import prompt
from .extract import extract_ptx
from .llm_client import LlmError
from .perf import perf_feedback, resource_usage
from .ptx_check import PtxasUnavailable, compile_check, interface_problems
from .sources import SourceKernel
from .transcript import Transcript
from .verify import Verifier, VerifyResult, compile_only_verifier

# errors that no other candidate or round can fix
FATAL_LLM_ERRORS = ("config", "auth", "model", "unreachable", "rate_limit", "bad_request")


@dataclass
class RoundRecord:
    candidate: int
    round: int
    outcome: str  # "passed", "no_ptx", "ptxas", "interface", "gpu", "llm_error"
    summary: str  # "ptxas: 2 errors"
    feedback: str = ""  # what the model was told next (empty when passed)
    ptx: str | None = None
    llm_s: float = 0.0  # the model's time (request to last token)
    check_s: float = 0.0  # lints + ptxas
    verify_s: float = 0.0  # the GPU test (or the compile-only stand-in)
    total_s: float = 0.0  # the whole round

    @property
    def overhead_s(self) -> float:
        return max(self.total_s - self.llm_s, 0.0)


@dataclass
class CandidateResult:
    index: int
    rounds: list[RoundRecord] = field(default_factory=list)
    passed: bool = False
    ptx: str | None = None
    verify: VerifyResult | None = None
    model: str = ""
    error: str = ""  # why it stopped early
    plan: str = ""  # the model's plan (strategy "plan")
    best_round: int = 0  # the round whose PTX is kept


@dataclass
class LoopResult:
    ok: bool
    best: CandidateResult | None
    candidates: list[CandidateResult]
    message: str
    cancelled: bool = False
    kernel: str = ""

    @property
    def rounds_used(self) -> int:
        return (
            len(self.best.rounds)
            if self.best
            else max((len(c.rounds) for c in self.candidates), default=0)
        )

    def report(self) -> str:
        lines = [self.message]
        for c in sorted(self.candidates, key=lambda c: c.index):
            state = "passed" if c.passed else (c.error or "did not pass")
            lines.append(f"candidate {c.index}: {state}")
            for r in c.rounds:
                lines.append(f"  round {r.round}: {r.summary}")
                if r.outcome not in ("passed",) and r.feedback:
                    first = [ln for ln in r.feedback.splitlines() if ln.strip()][:3]
                    lines.extend(f"      {ln}" for ln in first)
        return "\n".join(lines)


@dataclass
class LoopOptions:
    candidates: int = 2
    rounds: int = 5
    strategy: str = "direct"  # or "plan"
    optimize: bool = False  # run all candidates, keep the fastest
    seed: int | None = 1234
    arch: str = "sm_90"
    isa: str = "8.0"
    ptxas_path: str | None = None
    file_name: str = ""
    reference_ptx: str = ""
    perf_rounds: int = 1  # optimize: after a pass, ask this many times for a faster version


Progress = Callable[[str], None]


class _Stop(Exception):
    """A fatal error in one candidate that ends the whole loop."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


async def _candidate(
    index: int,
    src: SourceKernel,
    examples: list[Example],
    client,
    verifier: Verifier,
    opts: LoopOptions,
    transcript: Transcript,
    progress: Progress,
) -> CandidateResult:
    result = CandidateResult(index)
    target = prompt.Target(opts.arch, opts.isa)
    messages = prompt.first_messages(
        src,
        examples,
        target,
        file_name=opts.file_name,
        reference_ptx=opts.reference_ptx,
        plan=opts.strategy == "plan",
    )
    seed = None if opts.seed is None else opts.seed + index - 1  # distinct candidates
    tag = f"candidate {index}"

    async def ask(round_no: int, purpose: str):
        transcript.record(
            "request",
            candidate=index,
            round=round_no,
            purpose=purpose,
            seed=seed,
            messages=messages,
        )
        progress(f"{tag}, round {round_no}: asking the model")

        shown = [0]

        def on_text(chars: int) -> None:
            if chars - shown[0] >= 1000:  # every ~1000 characters, not every token
                shown[0] = chars
                progress(f"{tag}, round {round_no}: receiving ({chars} chars)")

        def on_retry(reason: str, wait: float) -> None:
            transcript.record("retry", candidate=index, round=round_no, reason=reason, wait_s=wait)
            progress(f"{tag}, round {round_no}: {reason}; retrying in {wait:.1f} s")

        try:
            reply = await client.chat(messages, seed=seed, on_text=on_text, on_retry=on_retry)
        except LlmError as e:
            transcript.record(
                "llm_error", candidate=index, round=round_no, error_kind=e.kind, message=str(e)
            )
            raise
        transcript.record(
            "reply",
            candidate=index,
            round=round_no,
            purpose=purpose,
            model=reply.model,
            text=reply.text,
            finish_reason=reply.finish_reason,
            attempts=reply.attempts,
            seconds=round(reply.seconds, 4),
            usage=reply.usage,
        )
        result.model = reply.model
        messages.append({"role": "assistant", "content": reply.text})
        return reply

    try:
        if opts.strategy == "plan":
            plan = await ask(0, "plan")
            result.plan = plan.text
            messages.append({"role": "user", "content": prompt.after_plan_request()})
        perf_done = 0
        kernel = src.name
        for round_no in range(1, opts.rounds + 1):
            t0 = time.monotonic()
            reply = await ask(round_no, "ptx" if round_no == 1 else "repair")
            rec = RoundRecord(index, round_no, "", "", llm_s=reply.seconds)
            ext = extract_ptx(reply.text, src.name or None)
            if ext.ptx is None:
                rec.outcome, rec.summary = "no_ptx", f"no PTX in the reply ({ext.problem})"
                rec.feedback = (
                    f"I could not find PTX in your reply: {ext.problem}. Reply with the complete "
                    "PTX module inside one ```ptx fenced block."
                )
            else:
                rec.ptx = ext.ptx
                try:
                    t_check = time.monotonic()
                    check = await compile_check(ext.ptx, arch=opts.arch, ptxas_path=opts.ptxas_path)
                    rec.check_s = time.monotonic() - t_check
                except PtxasUnavailable as e:
                    raise _Stop(f"cannot check candidates: {e}") from None
                transcript.record(
                    "ptxas",
                    candidate=index,
                    round=round_no,
                    ok=check.ok,
                    tool=check.tool,
                    arch=check.arch,
                    feedback=check.feedback,
                    errors=[f"line {p.line + 1}: {p.message}" for p in check.errors],
                )
                kernel = src.name
                if check.ok and not kernel:
                    # a plain-language request may leave the name to the model: take its entry
                    from ptxls.diagnostics.ptx_parse import parse_ptx

                    entries = parse_ptx(ext.ptx)[0].entries
                    kernel = entries[0].name if entries else ""
                iface = interface_problems(ext.ptx, kernel, src.params) if check.ok else []
                if not check.ok:
                    rec.outcome, rec.summary, rec.feedback = (
                        "ptxas",
                        check.summary(),
                        check.feedback,
                    )
                    if ext.truncated:
                        rec.feedback = ext.problem + ".\n\n" + rec.feedback
                elif iface:
                    transcript.record("interface", candidate=index, round=round_no, problems=iface)
                    rec.outcome = "interface"
                    rec.summary = f"interface: {iface[0]}"
                    rec.feedback = (
                        "The PTX assembles, but cannot be tested as the source kernel:\n- "
                        + "\n- ".join(iface)
                    )
                else:
                    progress(f"{tag}, round {round_no}: ptxas ok; testing")
                    t_verify = time.monotonic()
                    v = await verifier(ext.ptx, kernel)
                    rec.verify_s = time.monotonic() - t_verify
                    transcript.record(
                        "verify",
                        candidate=index,
                        round=round_no,
                        ok=v.ok,
                        tested=v.tested,
                        summary=v.summary,
                        feedback=v.feedback,
                        gpu=v.gpu,
                        kernel_ms=v.kernel_ms,
                    )
                    if v.ok:
                        rec.outcome, rec.summary = "passed", f"{check.summary()}; {v.summary}"
                        prev = result.verify.kernel_ms if result.verify else None
                        better = not result.passed or (
                            v.kernel_ms is not None and prev is not None and v.kernel_ms < prev
                        )
                        if result.passed:  # a performance round: keep the faster one
                            rec.summary += (
                                "; faster, kept" if better else "; not faster, earlier PTX kept"
                            )
                        if better:
                            result.ptx, result.verify, result.best_round = ext.ptx, v, round_no
                        result.passed = True
                    else:
                        rec.outcome, rec.summary, rec.feedback = "gpu", v.summary, v.feedback
            rec.total_s = time.monotonic() - t0
            result.rounds.append(rec)
            progress(f"{tag}, round {round_no}: {rec.summary}")
            if result.passed:
                v = result.verify
                wants_perf = (
                    opts.optimize
                    and perf_done < opts.perf_rounds
                    and round_no < opts.rounds
                    and rec.outcome == "passed"
                    and v is not None
                    and v.tested
                    and v.kernel_ms is not None
                )
                if not wants_perf:
                    return result
                usage = await resource_usage(
                    result.ptx, kernel, arch=opts.arch, ptxas_path=opts.ptxas_path
                )
                ask_faster = perf_feedback(usage, v.kernel_ms, v.reference_ms, result.ptx)
                transcript.record(
                    "perf",
                    candidate=index,
                    round=round_no,
                    resources=usage.text(),
                    feedback=ask_faster,
                )
                progress(f"{tag}, round {round_no}: passed; asking for a faster version")
                messages.append({"role": "user", "content": ask_faster})
                perf_done += 1
                continue
            if round_no < opts.rounds:
                messages.append({"role": "user", "content": prompt.repair_request(rec.feedback)})
        result.error = f"no passing PTX after {opts.rounds} rounds"
        return result
    except LlmError as e:
        if e.kind in FATAL_LLM_ERRORS:
            raise _Stop(str(e)) from e
        result.error = f"LLM request failed: {e}"
        result.rounds.append(RoundRecord(index, len(result.rounds) + 1, "llm_error", str(e)))
        return result


def _pick(candidates: list[CandidateResult], optimize: bool) -> CandidateResult | None:
    passing = [c for c in candidates if c.passed]
    if not passing:
        return None
    if optimize:
        timed = [c for c in passing if c.verify and c.verify.kernel_ms is not None]
        if timed:
            return min(timed, key=lambda c: c.verify.kernel_ms)
    return min(passing, key=lambda c: (len(c.rounds), c.index))


async def run_loop(
    src: SourceKernel,
    *,
    client,
    examples: list[Example],
    opts: LoopOptions,
    transcript: Transcript,
    verifier: Verifier | None = None,
    progress: Progress | None = None,
    cancel: asyncio.Event | None = None,
) -> LoopResult:
    """Run the loop to a result. Cancellation (of this task or through ``cancel``) cancels every
    candidate and is recorded; task cancellation is re-raised, ``cancel`` returns a result."""
    verifier = verifier or compile_only_verifier("no GPU verifier configured")
    say = progress or (lambda _m: None)
    transcript.record(
        "start",
        kernel=src.name,
        source_kind=src.kind,
        source=src.text,
        options=vars(opts) | {"reference_ptx": bool(opts.reference_ptx)},
        examples=[e.name for e in examples],
    )
    tasks = {
        asyncio.create_task(
            _candidate(i, src, examples, client, verifier, opts, transcript, say),
            name=f"candidate-{i}",
        ): i
        for i in range(1, opts.candidates + 1)
    }
    done_results: list[CandidateResult] = []
    stop_message = ""
    cancel_wait = asyncio.create_task(cancel.wait()) if cancel else None
    cancelled = False
    try:
        pending = set(tasks)
        while pending:
            waiting = pending | ({cancel_wait} if cancel_wait else set())
            finished, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            if cancel_wait in finished:
                cancelled = True
                break
            for t in finished:
                pending.discard(t)
                exc = t.exception()
                if isinstance(exc, _Stop):
                    stop_message = exc.message
                elif exc is not None:
                    raise exc
                else:
                    done_results.append(t.result())
            if stop_message or (not opts.optimize and any(c.passed for c in done_results)):
                break
    except asyncio.CancelledError:
        transcript.record("cancelled", by="task")
        raise
    finally:
        for t in tasks:
            t.cancel()
        if cancel_wait:
            cancel_wait.cancel()
        for t in tasks:
            with contextlib.suppress(BaseException):
                await t
    best = _pick(done_results, opts.optimize)
    if cancelled:
        transcript.record("cancelled", by="request")
        result = LoopResult(False, None, done_results, "cancelled", cancelled=True, kernel=src.name)
    elif stop_message:
        result = LoopResult(False, None, done_results, stop_message, kernel=src.name)
    elif best:
        v = best.verify
        tested = v.summary if v else "not GPU-tested"
        result = LoopResult(
            True,
            best,
            done_results,
            f"candidate {best.index} passed in round {len(best.rounds)}: {tested}",
            kernel=src.name,
        )
    elif done_results and all(c.error.startswith("LLM request failed") for c in done_results):
        # the model never answered: say why, not "no candidate passed"
        result = LoopResult(False, None, done_results, done_results[0].error, kernel=src.name)
    else:
        result = LoopResult(
            False,
            None,
            done_results,
            f"no candidate passed ({opts.candidates} candidates x {opts.rounds} rounds)",
            kernel=src.name,
        )
    transcript.record("end", ok=result.ok, message=result.message, report=result.report())
    return result
