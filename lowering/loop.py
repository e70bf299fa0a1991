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
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ptxls.fewshot.library import Example

from . import prompt
from .extract import extract_ptx
from .llm_client import LlmError
from .perf import perf_feedback, resource_usage
from .ptx_check import (
    PtxasUnavailable,
    compile_check,
    interface_problems,
    param_order_warning,
)
from .sources import SourceKernel
from .transcript import Transcript
from .verify import Verifier, VerifyResult, compile_only_verifier

# errors that no other candidate or round can fix
FATAL_LLM_ERRORS = ("config", "auth", "model", "unreachable", "rate_limit", "bad_request")
LENGTH_HINT = "raise ptxls.llm.maxTokens (PTXLS_LLM_MAX_TOKENS)"
BUDGET_HINT = "ptxls.llm.budgetSeconds (PTXLS_LLM_BUDGET_SECONDS)"
_GPUTEST_LINE = re.compile(r"^[ \t]*(?://|#|;)[^\n]*@gputest\b[^\n]*\n?", re.MULTILINE)
_DIGITS = re.compile(r"\d+")


@dataclass
class RoundRecord:
    candidate: int
    round: int
    outcome: str  # "passed", "no_ptx", "incomplete", "truncated", "ptxas", "interface", "gpu", "llm_error"
    summary: str  # "ptxas: 2 errors"
    feedback: str = ""  # what the model was told next (empty when passed)
    ptx: str | None = None
    errors: int = 0  # ptxas errors (for ranking attempts)
    signature: str = ""  # the failure, for "the same error again"
    llm_s: float = 0.0  # the model's time (request to last token)
    check_s: float = 0.0  # lints + ptxas
    verify_s: float = 0.0  # the GPU test (or the compile-only stand-in)
    total_s: float = 0.0  # the whole round
    request_chars: int = 0  # size of the request sent this round
    fresh_start: bool = False  # this round began a new conversation (a change of tack)

    @property
    def overhead_s(self) -> float:
        return max(self.total_s - self.llm_s, 0.0)


@dataclass
class Attempt:
    """A candidate's PTX that did not pass, kept when nothing passes."""

    candidate: int
    round: int
    ptx: str
    summary: str
    rank: tuple  # higher is better

    def describe(self) -> str:
        return f"candidate {self.candidate}, round {self.round}: {self.summary}"


@dataclass
class CandidateResult:
    index: int
    rounds: list[RoundRecord] = field(default_factory=list)
    passed: bool = False
    ptx: str | None = None
    verify: VerifyResult | None = None
    model: str = ""
    error: str = ""  # why it stopped without passing
    plan: str = ""  # the model's plan (strategy "plan")
    best_round: int = 0  # the round whose PTX is kept
    best_attempt: Attempt | None = None
    warnings: list[str] = field(default_factory=list)
    temperature: float | None = None
    truncated: bool = False  # a reply was cut at the token limit


@dataclass
class LoopResult:
    ok: bool
    best: CandidateResult | None
    candidates: list[CandidateResult]
    message: str
    cancelled: bool = False
    kernel: str = ""
    attempt: Attempt | None = None  # the best failing attempt, when nothing passed
    stop_reason: str = ""  # why nothing passed, in words
    never_answered: bool = False  # the endpoint failed every request: no reply was ever read
    warnings: list[str] = field(default_factory=list)

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
            tested = bool(c.verify and c.verify.tested)
            state = (
                ("passed the GPU test" if tested else "ptxas-clean, not GPU-tested")
                if c.passed
                else (c.error or "did not pass")
            )
            temp = f" (temperature {c.temperature:g})" if c.temperature is not None else ""
            lines.append(f"candidate {c.index}{temp}: {state}")
            for r in c.rounds:
                fresh = " [fresh start]" if r.fresh_start else ""
                lines.append(f"  round {r.round}{fresh}: {r.summary}")
                if r.outcome not in ("passed",) and r.feedback:
                    # the error, its hints and the marked line; not the context lines around it
                    kept = [
                        ln
                        for ln in r.feedback.splitlines()
                        if ln.strip() and not re.match(r"\s+\d+ \|", ln)
                    ][:4]
                    lines.extend(f"      {ln}" for ln in kept)
        for w in self.warnings:
            lines.append(f"warning: {w}")
        return "\n".join(lines)


@dataclass
class LoopOptions:
    candidates: int = 2
    rounds: int = 5
    strategy: str = "direct"  # or "plan"
    optimize: bool = False  # run all candidates, keep the fastest
    seed: int | None = 1234
    arch: str = "sm_90"
    isa: str = "9.0"
    ptxas_path: str | None = None
    file_name: str = ""
    reference_ptx: str = ""
    perf_rounds: int = 1  # optimize: after a pass, ask this many times for a faster version
    temperature: float | None = None  # candidate 1's; None: the client's setting
    budget_s: float | None = None  # the whole loop; None: no limit
    plan_text: str = ""  # a plan the person accepted: no plan is asked, this one is followed
    facts: prompt.TestFacts | None = None  # what the test does, told to the model


Progress = Callable[[str], None]


class _Stop(Exception):
    """A fatal error in one candidate that ends the whole loop. ``answered``: the model had
    sent at least one reply to this candidate before it."""

    def __init__(self, message: str, answered: bool = True):
        super().__init__(message)
        self.message = message
        self.answered = answered


class _BudgetSpent(Exception):
    pass


def candidate_temperature(base: float | None, index: int) -> float | None:
    """Candidate 1 at the configured temperature, each further one warmer (capped at 1.0)."""
    if base is None:
        base = 0.1
    return round(min(1.0, base + 0.35 * (index - 1)), 2)


def strip_gputest_lines(ptx: str) -> tuple[str, list[str]]:
    """A reply's ``@gputest`` comment lines removed: the test comes from the source and the
    person, never from the candidate (a model could otherwise loosen its own tolerance)."""
    found = [m.group(0).strip() for m in _GPUTEST_LINE.finditer(ptx)]
    return (_GPUTEST_LINE.sub("", ptx), found) if found else (ptx, [])


def _extract(text: str, kernel: str | None, finish_reason: str | None):
    try:
        return extract_ptx(text, kernel, finish_reason=finish_reason)
    except TypeError:  # an extractor without finish_reason
        return extract_ptx(text, kernel)


def _signature(rec: RoundRecord, messages: list[str]) -> str:
    """What makes two failures "the same": the outcome and its messages, register and line
    numbers ignored (``%f9`` and ``%f12`` undeclared is one mistake repeated)."""
    return rec.outcome + "|" + "|".join(sorted({_DIGITS.sub("#", m) for m in messages}))


_STUCK_WORDS = {
    "no_ptx": "no PTX in the reply every time (a refusal, or an answer in prose)",
    "incomplete": "an elided repair every time ('...', 'unchanged')",
    "truncated": f"the reply cut off every time ({LENGTH_HINT} where it stops at the token limit)",
    "ptxas": "the same ptxas error every round",
    "interface": "the same interface problem every round",
    "gpu": "the same GPU-test failure every round",
}


def _accepts(fn, name: str) -> bool:
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


async def _candidate(
    index: int,
    src: SourceKernel,
    examples: list[Example],
    client,
    verifier: Verifier,
    opts: LoopOptions,
    transcript: Transcript,
    progress: Progress,
    deadline: float | None,
) -> CandidateResult:
    result = CandidateResult(index)
    target = prompt.Target(opts.arch, opts.isa)
    seed = None if opts.seed is None else opts.seed + index - 1
    temperature = candidate_temperature(opts.temperature, index)
    result.temperature = temperature
    tag = f"candidate {index}"
    first_tack = "" if index == 1 else prompt.TACKS[(index - 2) % len(prompt.TACKS)]
    conversation = 0
    chat_kw = {}
    if _accepts(client.chat, "temperature"):
        chat_kw["temperature"] = temperature
    pass_deadline = deadline is not None and _accepts(client.chat, "deadline")

    def start_conversation(extra: str, plan: bool = False) -> list[dict]:
        nonlocal conversation
        conversation += 1
        base = prompt.first_messages(
            src,
            examples,
            target,
            file_name=opts.file_name,
            reference_ptx=opts.reference_ptx,
            plan=plan,
            facts=opts.facts,
            extra=extra,
        )
        # the long, fixed part once per conversation; requests then record only what changed
        transcript.record(
            "prompt", candidate=index, conversation=conversation, messages=base, seed=seed
        )
        return base

    async def ask(messages: list[dict], base_len: int, round_no: int, purpose: str):
        transcript.record(
            "request",
            candidate=index,
            round=round_no,
            conversation=conversation,
            purpose=purpose,
            temperature=chat_kw.get("temperature"),
            new_messages=messages[base_len:],
            chars=sum(len(m["content"]) for m in messages),
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

        kw = dict(chat_kw)
        if pass_deadline:
            kw["deadline"] = deadline
        call = client.chat(messages, seed=seed, on_text=on_text, on_retry=on_retry, **kw)
        try:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    call.close()
                    raise _BudgetSpent()
                reply = await asyncio.wait_for(call, left)
            else:
                reply = await call
        except TimeoutError:
            raise _BudgetSpent() from None
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
            reasoning=getattr(reply, "reasoning", "") or "",
            notes=list(getattr(reply, "notes", []) or []),
            finish_reason=reply.finish_reason,
            attempts=reply.attempts,
            seconds=round(reply.seconds, 4),
            usage=reply.usage,
        )
        result.model = reply.model
        return reply

    def keep_attempt(rec: RoundRecord, ptx: str, rank: tuple) -> None:
        if result.best_attempt is None or rank > result.best_attempt.rank:
            result.best_attempt = Attempt(index, rec.round, ptx, rec.summary, rank)

    try:
        plan_extra = prompt.with_plan(opts.plan_text) if opts.plan_text else ""
        if opts.strategy == "plan" and not opts.plan_text:
            base = start_conversation(first_tack, plan=True)
            plan = await ask(base, len(base), 0, "plan")
            result.plan = plan.text
            plan_extra = prompt.with_plan(plan.text)
        extra = "\n\n".join(x for x in (plan_extra, first_tack) if x)
        base = start_conversation(extra)
        messages = base
        perf_done = 0
        kernel = src.name
        last_sig, repeats, tacks, fresh = "", 0, 0, False
        history: list[str] = []
        for round_no in range(1, opts.rounds + 1):
            t0 = time.monotonic()
            rec = RoundRecord(index, round_no, "", "", fresh_start=fresh)
            rec.request_chars = sum(len(m["content"]) for m in messages)
            fresh = False
            reply = await ask(
                messages, len(base), round_no, "ptx" if len(messages) == len(base) else "repair"
            )
            rec.llm_s = reply.seconds
            length_cut = reply.finish_reason == "length"
            result.truncated |= length_cut
            ext = _extract(reply.text, src.name or None, reply.finish_reason)
            problem_messages: list[str] = []
            ext_notes = list(getattr(ext, "notes", []) or [])
            ext_reasoning = getattr(ext, "reasoning", "") or ""
            if ext_notes or ext_reasoning:
                # <think> sections and the like: kept for the audit, never taken for the answer
                transcript.record(
                    "extract_notes",
                    candidate=index,
                    round=round_no,
                    notes=ext_notes,
                    reasoning=ext_reasoning,
                )
            ptx = ext.ptx
            if ptx is not None:
                ptx, dropped = strip_gputest_lines(ptx)
                # the extractor may have dropped them already: what the reply carried counts
                dropped = dropped or strip_gputest_lines(reply.text or "")[1]
                if dropped:
                    transcript.record(
                        "ignored_gputest",
                        candidate=index,
                        round=round_no,
                        lines=dropped,
                        why="a candidate never sets its own test: the spec comes from the source "
                        "and the person only",
                    )
            if ptx is None or getattr(ext, "incomplete", False):
                if getattr(ext, "incomplete", False):
                    rec.outcome = "incomplete"
                    rec.summary = f"not a candidate: {ext.problem or 'the reply elides code'}"
                elif length_cut or ext.truncated:
                    rec.outcome = "truncated"
                    # only a finish_reason of "length" is the token limit; a reply cut by a
                    # content filter or a dropped stream says so in ext.problem
                    rec.summary = (
                        f"no usable PTX: the reply was cut at the token limit ({LENGTH_HINT})"
                        if length_cut
                        else f"no usable PTX: {ext.problem or 'the reply was cut off'}"
                    )
                else:
                    rec.outcome = "no_ptx"
                    rec.summary = f"no PTX in the reply ({ext.problem})"
                rec.feedback = (
                    "I could not find PTX I can use in your reply: "
                    + (ext.problem or "no PTX module")
                    + (
                        ". Your reply was cut off at the token limit: write a shorter reply "
                        "(no explanation, just the module)"
                        if length_cut
                        else ""
                    )
                )
                rec.feedback += (
                    ". Reply with the complete PTX module inside one ```ptx fenced block."
                )
                transcript.record(
                    "not_a_candidate",
                    candidate=index,
                    round=round_no,
                    outcome=rec.outcome,
                    reason=ext.problem,
                    finish_reason=reply.finish_reason,
                    ptx=ptx,
                )
                problem_messages = [rec.outcome]
            else:
                rec.ptx = ptx
                try:
                    t_check = time.monotonic()
                    check = await compile_check(ptx, arch=opts.arch, ptxas_path=opts.ptxas_path)
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
                    ptx=ptx,
                    feedback=check.feedback,
                    errors=[f"line {p.line + 1}: {p.message}" for p in check.errors],
                )
                kernel = src.name
                if check.ok and not kernel:
                    # a plain-language request may leave the name to the model: take its entry
                    from ptxls.frontend.ptx import parse_ptx

                    entries = parse_ptx(ptx)[0].entries
                    kernel = entries[0].name if entries else ""
                iface = interface_problems(ptx, kernel, src.params) if check.ok else []
                order = param_order_warning(ptx, kernel, src.params) if check.ok else ""
                if order and order not in result.warnings:
                    result.warnings.append(order)
                    transcript.record("warning", candidate=index, round=round_no, warning=order)
                if not check.ok:
                    rec.outcome, rec.summary, rec.feedback = (
                        "ptxas",
                        check.summary(),
                        check.feedback,
                    )
                    rec.errors = len(check.errors)
                    if ext.truncated or length_cut:
                        rec.feedback = (
                            f"{ext.problem or 'Your reply was cut off at the token limit'}.\n\n"
                            + rec.feedback
                        )
                    problem_messages = [p.message for p in check.errors]
                    keep_attempt(rec, ptx, (0, -rec.errors, round_no))
                elif iface:
                    transcript.record("interface", candidate=index, round=round_no, problems=iface)
                    rec.outcome = "interface"
                    rec.summary = f"interface: {iface[0]}"
                    rec.feedback = (
                        "The PTX assembles, but cannot be tested as the source kernel:\n- "
                        + "\n- ".join(iface)
                    )
                    problem_messages = iface
                    keep_attempt(rec, ptx, (1, 0, round_no))
                else:
                    progress(f"{tag}, round {round_no}: ptxas ok; testing")
                    t_verify = time.monotonic()
                    v = await verifier(ptx, kernel)
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
                            result.ptx, result.verify, result.best_round = ptx, v, round_no
                        result.passed = True
                    else:
                        rec.outcome, rec.summary, rec.feedback = "gpu", v.summary, v.feedback
                        problem_messages = [v.summary.split(":")[0] + ":" + (v.feedback[:80])]
                        keep_attempt(rec, ptx, (2, 0, round_no))
                if order and rec.outcome != "passed":
                    rec.feedback += f"\n\nWarning: {order}."
            rec.total_s = time.monotonic() - t0
            if rec.outcome != "passed":
                rec.signature = _signature(rec, problem_messages)
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
                messages = base + [
                    {"role": "assistant", "content": f"```ptx\n{result.ptx.strip()}\n```"},
                    {"role": "user", "content": ask_faster},
                ]
                perf_done += 1
                continue
            # the same failure as the round before: change tack once, then stop
            history.append(f"- round {round_no}: {rec.summary}")
            repeats = repeats + 1 if rec.signature == last_sig else 0
            last_sig = rec.signature
            if repeats >= 1 and (tacks >= 1 or round_no < opts.rounds):
                if tacks >= 1:
                    words = _STUCK_WORDS.get(rec.outcome, "the same failure every round")
                    result.error = (
                        f"stopped after round {round_no}: {words}, even after a fresh start "
                        f"({rec.summary})"
                    )
                    transcript.record("stuck", candidate=index, round=round_no, reason=result.error)
                    return result
                tacks += 1
                tack = prompt.TACKS[(index - 1 + tacks) % len(prompt.TACKS)]
                temperature = round(min(1.0, (temperature or 0.1) + 0.3), 2)
                if "temperature" in chat_kw:
                    chat_kw["temperature"] = temperature
                summary = "\n".join(history[-3:]) + "\n\nLast feedback:\n" + rec.feedback[:1500]
                extra = "\n\n".join(x for x in (plan_extra, prompt.fresh_start(summary, tack)) if x)
                transcript.record(
                    "change_tack",
                    candidate=index,
                    round=round_no,
                    temperature=temperature,
                    tack=tack,
                    why=f"round {round_no} failed like round {round_no - 1}: {rec.summary}",
                )
                progress(f"{tag}: same failure twice; starting afresh with another approach")
                base = start_conversation(extra)
                messages, fresh, repeats, last_sig = base, True, 0, rec.signature
                continue
            if round_no < opts.rounds:
                messages = prompt.repair_messages(base, rec.ptx, reply.text, rec.feedback)
        result.error = f"no passing PTX after {opts.rounds} rounds"
        return result
    except _BudgetSpent:
        result.error = f"time budget spent ({BUDGET_HINT})"
        transcript.record("budget_spent", candidate=index, round=len(result.rounds) + 1)
        return result
    except LlmError as e:
        if e.kind in FATAL_LLM_ERRORS:
            raise _Stop(str(e), answered=_answered([result])) from e
        result.error = f"LLM request failed: {e}"
        result.rounds.append(RoundRecord(index, len(result.rounds) + 1, "llm_error", str(e)))
        return result


def _answered(candidates: list[CandidateResult]) -> bool:
    """Whether the model replied at all (a round that is not an endpoint error)."""
    return any(r.outcome != "llm_error" for c in candidates for r in c.rounds)


def _pick(candidates: list[CandidateResult], optimize: bool) -> CandidateResult | None:
    passing = [c for c in candidates if c.passed]
    if not passing:
        return None
    if optimize:
        timed = [c for c in passing if c.verify and c.verify.kernel_ms is not None]
        if timed:
            return min(timed, key=lambda c: c.verify.kernel_ms)
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
    started = time.monotonic()
    deadline = started + opts.budget_s if opts.budget_s else None
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
    tasks = {
        asyncio.create_task(
            _candidate(i, src, examples, client, verifier, opts, transcript, say, deadline),
            name=f"candidate-{i}",
        ): i
        for i in range(1, opts.candidates + 1)
    }
    done_results: list[CandidateResult] = []
    stop_message = ""
    stop_answered = False
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
                    stop_answered = exc.answered
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
    warnings = sorted({w for c in done_results for w in c.warnings})
    budget_spent = deadline is not None and time.monotonic() >= deadline
    if cancelled:
        transcript.record("cancelled", by="request")
        result = LoopResult(False, None, done_results, "cancelled", cancelled=True, kernel=src.name)
    elif stop_message:
        result = LoopResult(False, None, done_results, stop_message, kernel=src.name)
        result.attempt = _best_attempt(done_results)
        result.stop_reason = stop_message
        # an endpoint that refused before any reply (key, model, a 400 naming nothing we can
        # change): the lowering could not run, which is not "the model failed"
        result.never_answered = not stop_answered and not _answered(done_results)
    elif best:
        v = best.verify
        tested = v.summary if v else "not GPU-tested"
        verb = "passed" if v and v.tested else "is ptxas-clean"
        result = LoopResult(
            True,
            best,
            done_results,
            f"candidate {best.index} {verb} in round {len(best.rounds)}: {tested}",
            kernel=src.name,
        )
    elif done_results and all(c.error.startswith("LLM request failed") for c in done_results):
        # the model never answered: say why, not "no candidate passed"
        result = LoopResult(False, None, done_results, done_results[0].error, kernel=src.name)
        result.stop_reason = "endpoint errors: " + done_results[0].error
        result.attempt = _best_attempt(done_results)
        result.never_answered = not _answered(done_results)
    else:
        why = _stop_reason(done_results, budget_spent)
        result = LoopResult(
            False,
            None,
            done_results,
            f"no candidate passed ({opts.candidates} candidates x {opts.rounds} rounds): {why}",
            kernel=src.name,
        )
        result.stop_reason = why
        result.attempt = _best_attempt(done_results)
    result.warnings = warnings
    transcript.record(
        "end",
        ok=result.ok,
        message=result.message,
        stop_reason=result.stop_reason,
        best_attempt=result.attempt.describe() if result.attempt else None,
        warnings=warnings,
    )
    return result
