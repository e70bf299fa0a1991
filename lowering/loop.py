"""The generate → ptxas → (interface) → GPU test → repair loop.

Candidates run in parallel, each for up to ``rounds`` rounds (one generation plus repairs);
the first candidate that passes wins and the others are cancelled. In "optimize" mode every
candidate runs to the end and the fastest passing one is kept.

How the loop talks to the model, and why:

- **Candidates differ.** Candidate 1 asks plainly at the configured temperature; each further
  candidate asks at a higher temperature and with another approach (``prompt.TACKS``), so two
  candidates are two tries, not two near-identical samples.
- **Requests stay the same size.** Each request is the task (system rules, examples, source)
  plus the latest attempt and its feedback — never the whole history — so round 5 costs what
  round 2 did (bench/lowering_request_size.py measures it).
- **A stuck model changes tack.** When a round fails for the same reason as the round before
  (same ptxas errors, no PTX again, cut off again), the conversation starts afresh with a summary
  of what failed, another approach and a higher temperature. If the same failure comes back
  after that, the candidate stops early and says why, instead of burning every round.
- **Nothing passes → the best attempt is kept.** Attempts are ranked (GPU-tested but wrong >
  ptxas-clean but wrong interface > fewest ptxas errors); the best one is handed to the caller,
  which writes it beside the source and names it with the reason the loop stopped.
- **A total time budget** (``budget_s``) bounds the whole lowering, hung endpoint included.
- **A candidate never sets its own test**: ``@gputest`` lines in a reply are dropped from its
  PTX before anything uses it, and the drop is recorded; the verifier's spec comes from the
  source and the person only (``service.py``).

Every request (only what changed), reply (text, reasoning, the client's adaptation notes) and
tool output goes to the transcript; ``on_progress`` gets one line per step. Cancelling the task
(or setting ``cancel``) stops everything promptly and kills running tools.

How it is read: the records the loop returns (``RoundRecord``, ``CandidateResult``,
``LoopResult``) and its options are in loop_records.py; one candidate's rounds (ask, extract,
compile once, check, feed back; ``CandidateRun``, with the watch that ends a candidate that
repeats itself) in candidate.py; the checks after ptxas (one function each, in order in
``CANDIDATE_CHECKS``) in loop_checks.py; here is ``run_loop``, which runs the candidates side by
side, stops the others when one passes and keeps the winner or the best attempt.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field

from ptxls.fewshot.library import Example

from .candidate import BUDGET_HINT, LENGTH_HINT, CandidateRun, LoopContext, StopLoop, answered
from .loop_records import Attempt, CandidateResult, LoopOptions, LoopResult, Progress
from .protocols import ChatClient, Verifier
from .sources import SourceKernel
from .transcript import Transcript
from .verify import compile_only_verifier


async def _candidate(index: int, ctx: LoopContext) -> CandidateResult:
    return await CandidateRun(ctx, index).run()


def _pick(candidates: list[CandidateResult], optimize: bool) -> CandidateResult | None:
    passing = [c for c in candidates if c.passed]
    if not passing:
        return None
    if optimize:
        timed = [
            (c.verify.kernel_ms, c)
            for c in passing
            if c.verify is not None and c.verify.kernel_ms is not None
        ]
        if timed:
            return min(timed, key=lambda t: t[0])[1]
    return min(passing, key=lambda c: (len(c.rounds), c.index))


def _best_attempt(candidates: list[CandidateResult]) -> Attempt | None:
    found = [c.best_attempt for c in candidates if c.best_attempt is not None]
    return max(found, key=lambda a: (a.rank[0], a.rank[1], -a.candidate)) if found else None


def _stop_reason(candidates: list[CandidateResult], budget_spent: bool) -> str:
    """Why nothing passed, in words a person acts on."""
    reasons = []
    for c in sorted(candidates, key=lambda c: c.index):
        reasons.append(f"candidate {c.index}: {c.error or 'did not pass'}")
    why = "; ".join(reasons)
    if any(c.truncated for c in candidates) and LENGTH_HINT not in why:
        why += f"; some replies were cut off at the token limit ({LENGTH_HINT})"
    if budget_spent and BUDGET_HINT not in why:
        why += f"; time budget spent ({BUDGET_HINT})"
    return why


@dataclass
class _Finished:
    """How the candidates ended: their results, and whether a fatal error or a cancel cut in."""

    results: list[CandidateResult] = field(default_factory=list)
    stop_message: str = ""
    stop_answered: bool = False
    cancelled: bool = False


async def run_loop(
    src: SourceKernel,
    *,
    client: ChatClient,
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
    deadline = time.monotonic() + opts.budget_s if opts.budget_s else None
    transcript.record(
        "start",
        kernel=src.name,
        source_kind=src.kind,
        source=src.text,
        options=vars(opts)
        | {
            "reference_ptx": bool(opts.reference_ptx),
            "facts": vars(opts.facts) if opts.facts else None,
        },
        examples=[e.name for e in examples],
    )
    ctx = LoopContext(src, examples, client, verifier, opts, transcript, say, deadline)
    finished = await _run_candidates(ctx, cancel)
    budget_spent = deadline is not None and time.monotonic() >= deadline
    result = _loop_result(ctx, finished, budget_spent)
    result.warnings = sorted({w for c in finished.results for w in c.warnings})
    result.spend = ctx.spend
    transcript.record(
        "end",
        ok=result.ok,
        message=result.message,
        stop_reason=result.stop_reason,
        best_attempt=result.attempt.describe() if result.attempt else None,
        warnings=result.warnings,
        spend=ctx.spend.as_dict(),
    )
    return result


async def _run_candidates(ctx: LoopContext, cancel: asyncio.Event | None) -> _Finished:
    """All candidates side by side, until the first passes (all of them when optimizing), a
    fatal error stops them, or ``cancel`` is set; the rest are cancelled and awaited."""
    tasks = [
        asyncio.create_task(_candidate(i, ctx), name=f"candidate-{i}")
        for i in range(1, ctx.opts.candidates + 1)
    ]
    out = _Finished()
    cancel_wait = asyncio.create_task(cancel.wait()) if cancel else None
    try:
        pending = set(tasks)
        while pending:
            waiting = pending | ({cancel_wait} if cancel_wait else set())
            done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            if cancel_wait in done:
                out.cancelled = True
                break
            for t in pending & done:  # the candidates that finished (cancel_wait is not one)
                pending.discard(t)
                exc = t.exception()
                if isinstance(exc, StopLoop):
                    out.stop_message, out.stop_answered = exc.message, exc.answered
                elif exc is not None:
                    raise exc
                else:
                    out.results.append(t.result())
            if out.stop_message or (not ctx.opts.optimize and any(c.passed for c in out.results)):
                break
    except asyncio.CancelledError:
        ctx.transcript.record("cancelled", by="task")
        raise
    finally:
        for t in tasks:
            t.cancel()
        if cancel_wait:
            cancel_wait.cancel()
        for t in tasks:
            with contextlib.suppress(BaseException):
                await t
    return out


def _loop_result(ctx: LoopContext, finished: _Finished, budget_spent: bool) -> LoopResult:
    """The loop's verdict in words: passed, cancelled, stopped (and why), or the best attempt."""
    done, kernel, opts = finished.results, ctx.src.name, ctx.opts
    best = _pick(done, opts.optimize)
    if finished.cancelled:
        ctx.transcript.record("cancelled", by="request")
        return LoopResult(False, None, done, "cancelled", cancelled=True, kernel=kernel)
    if finished.stop_message:
        result = LoopResult(False, None, done, finished.stop_message, kernel=kernel)
        result.attempt = _best_attempt(done)
        result.stop_reason = finished.stop_message
        # an endpoint that refused before any reply (key, model, a 400 naming nothing we can
        # change): the lowering could not run, which is not "the model failed"
        result.never_answered = not finished.stop_answered and not answered(done)
        return result
    if best:
        v = best.verify
        tested = v.summary if v else "not GPU-tested"
        verb = "passed" if v and v.tested else "is ptxas-clean"
        message = f"candidate {best.index} {verb} in round {len(best.rounds)}: {tested}"
        return LoopResult(True, best, done, message, kernel=kernel)
    if done and all(c.error.startswith("LLM request failed") for c in done):
        # the model never answered: say why, not "no candidate passed"
        result = LoopResult(False, None, done, done[0].error, kernel=kernel)
        result.stop_reason = "endpoint errors: " + done[0].error
        result.attempt = _best_attempt(done)
        result.never_answered = not answered(done)
        return result
    why = _stop_reason(done, budget_spent)
    message = f"no candidate passed ({opts.candidates} candidates x {opts.rounds} rounds): {why}"
    result = LoopResult(False, None, done, message, kernel=kernel)
    result.stop_reason = why
    result.attempt = _best_attempt(done)
    return result
