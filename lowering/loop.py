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
``LoopResult``) and its options are in loop_records.py, the checks after ptxas (one function
each, in order in ``CANDIDATE_CHECKS``) in loop_checks.py; here are ``_CandidateRun``, one
candidate's rounds (ask, extract, compile once, check, feed back); ``_StuckWatch``, which ends a
candidate that repeats itself; and ``run_loop``, which runs the candidates and keeps the winner.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from dataclasses import dataclass, field

from ptxls.fewshot.library import Example

from . import prompt
from .accounting import Spend, usage_of
from .llm_client import LlmError

# the records and options, and the checks after ptxas, live beside this module; their names are
# importable from here as before
from .loop_checks import CANDIDATE_CHECKS, CandidateCheck, _Failure  # noqa: F401
from .loop_records import (
    Attempt,
    CandidateResult,
    LoopOptions,
    LoopResult,
    Progress,
    RoundRecord,
)
from .perf import Resources, perf_feedback
from .protocols import ChatClient, Verifier, wants_cubin
from .ptx_check import compile_check, param_order_warning
from .sources import SourceKernel
from .transcript import Transcript
from .verify import Candidate, VerifyResult, compile_only_verifier

# completeness.py and extract.py (their regular expressions, the dataflow check, the fixes) are
# imported when the first reply arrives, not before the first request (bench/lowering_startup.py)

# errors that no other candidate or round can fix
FATAL_LLM_ERRORS = ("config", "auth", "model", "unreachable", "rate_limit", "bad_request")
LENGTH_HINT = "raise ptxls.llm.maxTokens (PTXLS_LLM_MAX_TOKENS)"
BUDGET_HINT = "ptxls.llm.budgetSeconds (PTXLS_LLM_BUDGET_SECONDS)"
_GPUTEST_LINE = re.compile(r"^[ \t]*(?://|#|;)[^\n]*@gputest\b[^\n]*\n?", re.MULTILINE)
_DIGITS = re.compile(r"\d+")


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


def _signature(rec: RoundRecord, messages: list[str]) -> str:
    """What makes two failures "the same": the outcome and its messages, register and line
    numbers ignored (``%f9`` and ``%f12`` undeclared is one mistake repeated)."""
    return rec.outcome + "|" + "|".join(sorted({_DIGITS.sub("#", m) for m in messages}))


_STUCK_WORDS = {
    "no_ptx": "no PTX in the reply every time (a refusal, or an answer in prose)",
    "incomplete": "an incomplete kernel every time (code left out: registers read that nothing writes)",
    "calls": "the same forbidden calls every round",
    "truncated": f"the reply cut off every time ({LENGTH_HINT} where it stops at the token limit)",
    "ptxas": "the same ptxas error every round",
    "interface": "the same interface problem every round",
    "gpu": "the same GPU-test failure every round",
}


@dataclass
class _LoopContext:
    """What every candidate of one loop shares."""

    src: SourceKernel
    examples: list[Example]
    client: ChatClient
    verifier: Verifier
    opts: LoopOptions
    transcript: Transcript
    progress: Progress
    deadline: float | None
    spend: Spend = field(default_factory=Spend)


class _CandidateRun:
    """One candidate: its conversation with the model and its rounds."""

    def __init__(self, ctx: _LoopContext, index: int):
        self.ctx = ctx
        self.index = index
        self.result = CandidateResult(index)
        self.seed = None if ctx.opts.seed is None else ctx.opts.seed + index - 1
        self.temperature = candidate_temperature(ctx.opts.temperature, index)
        self.result.temperature = self.temperature
        self.tag = f"candidate {index}"
        self.conversation = 0
        self.chat_kw: dict = {}
        self.chat_kw["temperature"] = self.temperature
        self.pass_deadline = ctx.deadline is not None
        self.kernel = ctx.src.name
        self.round_verify: VerifyResult | None = None
        self.round_findings: list = []  # dataflow findings of the round's candidate
        self.elision_hint = ""  # the reply's own words about code left out (a hint only)

    # ---- talking to the model

    def progress(self, message: str) -> None:
        self.ctx.progress(message)

    def record(self, kind: str, rec: RoundRecord | None = None, **data) -> None:
        where = {"round": rec.round} if rec is not None else {}
        self.ctx.transcript.record(kind, candidate=self.index, **where, **data)

    def start_conversation(self, extra: str, plan: bool = False) -> list[dict]:
        self.conversation += 1
        opts = self.ctx.opts
        base = prompt.first_messages(
            self.ctx.src,
            self.ctx.examples,
            prompt.Target(opts.arch, opts.isa),
            file_name=opts.file_name,
            reference_ptx=opts.reference_ptx,
            plan=plan,
            facts=opts.facts,
            extra=extra,
        )
        # the long, fixed part once per conversation; requests then record only what changed
        self.record("prompt", conversation=self.conversation, messages=base, seed=self.seed)
        return base

    async def ask(self, messages: list[dict], base_len: int, round_no: int, purpose: str):
        self.ctx.transcript.record(
            "request", candidate=self.index, round=round_no, conversation=self.conversation,
            purpose=purpose, temperature=self.chat_kw.get("temperature"),
            new_messages=messages[base_len:], chars=sum(len(m["content"]) for m in messages),
        )  # fmt: skip
        self.progress(f"{self.tag}, round {round_no}: asking the model")
        try:
            reply = await self._chat(messages, round_no)
        except LlmError as e:
            self.ctx.transcript.record("llm_error", candidate=self.index, round=round_no,
                                       error_kind=e.kind, message=str(e))  # fmt: skip
            raise
        self.ctx.transcript.record(
            "reply", candidate=self.index, round=round_no, purpose=purpose, model=reply.model,
            text=reply.text, reasoning=reply.reasoning,
            notes=list(reply.notes), finish_reason=reply.finish_reason,
            attempts=reply.attempts, seconds=round(reply.seconds, 4), usage=reply.usage,
        )  # fmt: skip
        self.result.model = reply.model
        over = self.ctx.spend.add(reply, self.ctx.opts)
        if over:
            self.record("cap", round=round_no, reason=over)
            raise _Stop(over)
        return reply

    async def _chat(self, messages: list[dict], round_no: int):
        """One request, streamed, within the loop's time budget."""
        shown = [False]

        def on_text(chars: int) -> None:
            if not shown[0]:  # one line per phase, never one per chunk
                shown[0] = True
                self.progress(f"{self.tag}, round {round_no}: receiving the reply")

        def on_retry(reason: str, wait: float) -> None:
            self.ctx.transcript.record("retry", candidate=self.index, round=round_no,
                                       reason=reason, wait_s=wait)  # fmt: skip
            self.progress(f"{self.tag}, round {round_no}: {reason}; retrying in {wait:.1f} s")

        deadline = self.ctx.deadline
        kw = dict(self.chat_kw)
        if self.pass_deadline:
            kw["deadline"] = deadline
        call = self.ctx.client.chat(
            messages, seed=self.seed, on_text=on_text, on_retry=on_retry, **kw
        )
        try:
            if deadline is None:
                return await call
            left = deadline - time.monotonic()
            if left <= 0:
                call.close()
                raise _BudgetSpent()
            return await asyncio.wait_for(call, left)
        except TimeoutError:
            raise _BudgetSpent() from None

    def keep_attempt(self, rec: RoundRecord, ptx: str, rank: tuple) -> None:
        best = self.result.best_attempt
        if best is None or rank > best.rank:
            self.result.best_attempt = Attempt(self.index, rec.round, ptx, rec.summary, rank)

    # ---- one round

    async def play_round(self, round_no: int, messages: list[dict], base_len: int, fresh: bool):
        """Ask, read the reply, check what it holds. Returns the round's record and the reply."""
        t0 = time.monotonic()
        rec = RoundRecord(self.index, round_no, "", "", fresh_start=fresh)
        rec.request_chars = sum(len(m["content"]) for m in messages)
        purpose = "ptx" if len(messages) == base_len else "repair"
        reply = await self.ask(messages, base_len, round_no, purpose)
        rec.llm_s = reply.seconds
        rec.prompt_tokens, rec.completion_tokens, rec.reasoning_tokens = usage_of(reply)
        length_cut = reply.finish_reason == "length"
        self.result.truncated |= length_cut
        from .extract import extract_ptx

        ext = extract_ptx(reply.text, self.ctx.src.name or None, finish_reason=reply.finish_reason,
                          reasoning=reply.reasoning)  # fmt: skip
        self.elision_hint = ext.elision
        ptx = self._candidate_ptx(rec, ext, reply)
        if ptx is None:
            messages_of_failure = self._not_a_candidate(rec, ext, reply, ptx)
        else:
            messages_of_failure = await self._check(rec, ptx, ext, length_cut)
        rec.total_s = time.monotonic() - t0
        if rec.outcome != "passed":
            rec.signature = _signature(rec, messages_of_failure)
        self.result.rounds.append(rec)
        self.progress(f"{self.tag}, round {round_no}: {rec.summary}")
        return rec, reply

    def _candidate_ptx(self, rec: RoundRecord, ext, reply) -> str | None:
        """The reply's PTX with any ``@gputest`` lines dropped (recorded), or None."""
        notes, reasoning = list(ext.notes), ext.reasoning
        if notes or reasoning:
            # <think> sections and the like: kept for the audit, never taken for the answer
            self.record("extract_notes", rec, notes=notes, reasoning=reasoning)
        ptx = ext.ptx
        if ptx is None:
            return None
        ptx, dropped = strip_gputest_lines(ptx)
        # the extractor may have dropped them already: what the reply carried counts
        dropped = dropped or strip_gputest_lines(reply.text or "")[1]
        if dropped:
            self.record("ignored_gputest", rec, lines=dropped,
                        why="a candidate never sets its own test: the spec comes from the source "
                        "and the person only")  # fmt: skip
        return ptx

    def _not_a_candidate(self, rec: RoundRecord, ext, reply, ptx: str | None) -> list[str]:
        length_cut = reply.finish_reason == "length"
        if ext.incomplete:  # a diff: not a module at all
            rec.outcome = "incomplete"
            rec.summary = f"not a candidate: {ext.problem or 'the reply is not a whole module'}"
        elif length_cut or ext.truncated:
            rec.outcome = "truncated"
            # only a finish_reason of "length" is the token limit; a reply cut by a content
            # filter or a dropped stream says so in ext.problem
            rec.summary = (
                f"no usable PTX: the reply was cut at the token limit ({LENGTH_HINT})"
                if length_cut
                else f"no usable PTX: {ext.problem or 'the reply was cut off'}"
            )
        else:
            rec.outcome = "no_ptx"
            rec.summary = f"no PTX in the reply ({ext.problem})"
        shorter = (
            ". Your reply was cut off at the token limit: write a shorter reply "
            "(no explanation, just the module)"
        )
        rec.feedback = (
            "I could not find PTX I can use in your reply: "
            + (ext.problem or "no PTX module")
            + (shorter if length_cut else "")
            + ". Reply with the complete PTX module inside one ```ptx fenced block."
        )
        self.record("not_a_candidate", rec, outcome=rec.outcome, reason=ext.problem,
                    finish_reason=reply.finish_reason, ptx=ptx)  # fmt: skip
        return [rec.outcome]

    async def _compile(self, rec: RoundRecord, ptx: str):
        """The round's one ptxas run: diagnostics, -v usage and (for a GPU test) the cubin."""
        from ptxls.diagnostics.engine import PtxasUnavailable

        opts = self.ctx.opts
        want_cubin = wants_cubin(self.ctx.verifier)
        try:
            t_check = time.monotonic()
            check = await compile_check(
                ptx, arch=opts.arch, ptxas_path=opts.ptxas_path, want_cubin=want_cubin
            )
            rec.check_s = time.monotonic() - t_check
        except PtxasUnavailable as e:
            raise _Stop(f"cannot check candidates: {e}") from None
        self.record("ptxas", rec, ok=check.ok, tool=check.tool, arch=check.arch, ptx=ptx,
                    feedback=check.feedback,
                    errors=[f"line {p.line + 1}: {p.message}" for p in check.errors])  # fmt: skip
        return check

    async def _check(self, rec: RoundRecord, ptx: str, ext, length_cut: bool) -> list[str]:
        """ptxas, then CANDIDATE_CHECKS in order. Returns the failure's messages."""
        rec.ptx = ptx
        check = await self._compile(rec, ptx)
        if not check.ok and check.fixes:
            ptx, check = await self._certain_fixes(rec, ptx, check)
        if not check.ok:
            rec.outcome, rec.summary, rec.feedback = "ptxas", check.summary(), check.feedback
            rec.errors = len(check.errors)
            if ext.truncated or length_cut:
                cut = ext.problem or "Your reply was cut off at the token limit"
                rec.feedback = f"{cut}.\n\n" + rec.feedback
            if rec.fixes:
                rec.feedback = (
                    "These certain fixes were applied to your PTX before ptxas ran again (the "
                    "PTX below has them):\n- " + "\n- ".join(rec.fixes) + "\n\n" + rec.feedback
                )
            self.keep_attempt(rec, ptx, (0, -rec.errors, rec.round))
            return [p.message for p in check.errors]
        kernel = self.ctx.src.name
        if not kernel:
            # a plain-language request may leave the name to the model: take its entry
            kernel = check.module.entries[0].name if check.module.entries else ""
        self.kernel = kernel
        order = param_order_warning(check.module, kernel, self.ctx.src.params)
        if order and order not in self.result.warnings:
            self.result.warnings.append(order)
            self.record("warning", rec, warning=order)
        cand = Candidate(ptx, kernel, check.module, check.cubin, check.arch, check.tool)
        self.round_verify = None
        for step in CANDIDATE_CHECKS:
            failure = await step(self, rec, cand)
            if failure is not None:
                rec.outcome, rec.summary = failure.outcome, failure.summary
                rec.feedback = failure.feedback
                if self.round_findings and failure.outcome not in (
                    "incomplete",
                    "interface",
                    "calls",
                ):
                    # a test that failed, and the dataflow check says why it may have
                    from .completeness import dataflow_feedback

                    rec.feedback += "\n\n" + dataflow_feedback(self.round_findings)
                if failure.outcome != "incomplete":
                    # an incomplete candidate is never kept: not as the result, not as an attempt
                    self.keep_attempt(rec, ptx, (*failure.rank, rec.round))
                if order:
                    rec.feedback += f"\n\nWarning: {order}."
                return failure.messages
        self._passed(rec, ptx, check)
        return []

    async def _certain_fixes(self, rec: RoundRecord, ptx: str, check):
        """``ptxls check --fix``'s certain fixes applied before feedback is built; the fixed PTX
        and its check (said in the transcript)."""

        async def recheck(text: str):
            return await self._compile(rec, text)

        from .completeness import certain_fixes

        fixed = await certain_fixes(ptx, check, recheck)
        if not fixed.notes:
            return ptx, check
        assert fixed.check is not None  # a fix was applied, so the fixed PTX was checked again
        rec.fixes = fixed.notes
        rec.ptx = fixed.ptx
        self.record("certain_fixes", rec, fixes=fixed.notes, ok=fixed.check.ok)
        self.progress(f"{self.tag}, round {rec.round}: applied {len(fixed.notes)} certain fix"
                      f"{'es' if len(fixed.notes) != 1 else ''} before asking again")  # fmt: skip
        return fixed.ptx, fixed.check

    def _passed(self, rec: RoundRecord, ptx: str, check) -> None:
        v = self.round_verify
        assert v is not None  # every check passed, _verify_check among them: it set round_verify
        result = self.result
        rec.outcome, rec.summary = "passed", f"{check.summary()}; {v.summary}"
        prev = result.verify.kernel_ms if result.verify else None
        better = not result.passed or (
            v.kernel_ms is not None and prev is not None and v.kernel_ms < prev
        )
        if result.passed:  # a performance round: keep the faster one
            rec.summary += "; faster, kept" if better else "; not faster, earlier PTX kept"
        if better:
            result.ptx, result.verify, result.best_round = ptx, v, rec.round
            result.kernel = self.kernel
            # the resource usage of the kept PTX, from the same ptxas run (ptxas -v)
            result.usage = check.resources(self.kernel or None)
        result.passed = True

    # ---- the rounds

    async def run(self) -> CandidateResult:
        result = self.result
        opts = self.ctx.opts
        first_tack = "" if self.index == 1 else prompt.TACKS[(self.index - 2) % len(prompt.TACKS)]
        try:
            plan_extra = prompt.with_plan(opts.plan_text) if opts.plan_text else ""
            if opts.strategy == "plan" and not opts.plan_text:
                base = self.start_conversation(first_tack, plan=True)
                plan = await self.ask(base, len(base), 0, "plan")
                result.plan = plan.text
                plan_extra = prompt.with_plan(plan.text)
            extra = "\n\n".join(x for x in (plan_extra, first_tack) if x)
            await self._rounds(self.start_conversation(extra), plan_extra)
            return result
        except _BudgetSpent:
            result.error = f"time budget spent ({BUDGET_HINT})"
            self.record("budget_spent", round=len(result.rounds) + 1)
            return result
        except LlmError as e:
            if e.kind in FATAL_LLM_ERRORS:
                raise _Stop(str(e), answered=_answered([result])) from e
            result.error = f"LLM request failed: {e}"
            result.rounds.append(
                RoundRecord(self.index, len(result.rounds) + 1, "llm_error", str(e))
            )
            return result

    async def _rounds(self, base: list[dict], plan_extra: str) -> None:
        opts, result = self.ctx.opts, self.result
        messages = base
        stuck = _StuckWatch()
        perf_done, fresh = 0, False
        for round_no in range(1, opts.rounds + 1):
            rec, reply = await self.play_round(round_no, messages, len(base), fresh)
            fresh = False
            if result.passed:
                if not self._wants_faster(rec, round_no, perf_done):
                    return
                messages = base + self._ask_faster(round_no)
                perf_done += 1
                continue
            stuck.history.append(f"- round {round_no}: {rec.summary}")
            if stuck.again(rec) and (stuck.tacks >= 1 or round_no < opts.rounds):
                if stuck.tacks >= 1:
                    self._give_up(rec)
                    return
                base = self._change_tack(rec, stuck, plan_extra)
                messages, fresh = base, True
                continue
            if round_no < opts.rounds:
                messages = prompt.repair_messages(base, rec.ptx, reply.text, rec.feedback)
        result.error = f"no passing PTX after {opts.rounds} rounds"

    def _wants_faster(self, rec: RoundRecord, round_no: int, perf_done: int) -> bool:
        opts, v = self.ctx.opts, self.result.verify
        return (
            opts.optimize
            and perf_done < opts.perf_rounds
            and round_no < opts.rounds
            and rec.outcome == "passed"
            and v is not None
            and v.tested
            and v.kernel_ms is not None
        )

    def _ask_faster(self, round_no: int) -> list[dict]:
        """The passing PTX back to the model with a concrete ask, from the usage its own ptxas
        run reported (no second ptxas run) and its time against the reference."""
        result, v = self.result, self.result.verify
        # _wants_faster said yes: a passing round, so a verify result and its PTX are kept
        assert v is not None and result.ptx is not None
        usage = result.usage or Resources()
        ask_faster = perf_feedback(usage, v.kernel_ms, v.reference_ms, result.ptx)
        self.record("perf", round=round_no, resources=usage.text(), feedback=ask_faster)
        self.progress(f"{self.tag}, round {round_no}: passed; asking for a faster version")
        return [
            {"role": "assistant", "content": f"```ptx\n{result.ptx.strip()}\n```"},
            {"role": "user", "content": ask_faster},
        ]

    def _give_up(self, rec: RoundRecord) -> None:
        words = _STUCK_WORDS.get(rec.outcome, "the same failure every round")
        self.result.error = (
            f"stopped after round {rec.round}: {words}, even after a fresh start ({rec.summary})"
        )
        self.record("stuck", rec, reason=self.result.error)

    def _change_tack(self, rec: RoundRecord, stuck: _StuckWatch, plan_extra: str) -> list[dict]:
        """The same failure as the round before: a fresh conversation with a summary of what
        failed, another approach and a higher temperature."""
        stuck.tacks += 1
        tack = prompt.TACKS[(self.index - 1 + stuck.tacks) % len(prompt.TACKS)]
        self.temperature = round(min(1.0, (self.temperature or 0.1) + 0.3), 2)
        if "temperature" in self.chat_kw:
            self.chat_kw["temperature"] = self.temperature
        summary = "\n".join(stuck.history[-3:]) + "\n\nLast feedback:\n" + rec.feedback[:1500]
        extra = "\n\n".join(x for x in (plan_extra, prompt.fresh_start(summary, tack)) if x)
        self.record("change_tack", rec, temperature=self.temperature, tack=tack,
                    why=f"round {rec.round} failed like round {rec.round - 1}: {rec.summary}")  # fmt: skip
        self.progress(f"{self.tag}: same failure twice; starting afresh with another approach")
        base = self.start_conversation(extra)
        stuck.repeats = 0
        return base


@dataclass
class _StuckWatch:
    """Whether the candidate fails the same way round after round."""

    last_signature: str = ""
    repeats: int = 0
    tacks: int = 0  # fresh starts so far
    history: list[str] = field(default_factory=list)

    def again(self, rec: RoundRecord) -> bool:
        self.repeats = self.repeats + 1 if rec.signature == self.last_signature else 0
        self.last_signature = rec.signature
        return self.repeats >= 1


async def _candidate(index: int, ctx: _LoopContext) -> CandidateResult:
    return await _CandidateRun(ctx, index).run()


def _answered(candidates: list[CandidateResult]) -> bool:
    """Whether the model replied at all (a round that is not an endpoint error)."""
    return any(r.outcome != "llm_error" for c in candidates for r in c.rounds)


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
    ctx = _LoopContext(src, examples, client, verifier, opts, transcript, say, deadline)
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


async def _run_candidates(ctx: _LoopContext, cancel: asyncio.Event | None) -> _Finished:
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
                if isinstance(exc, _Stop):
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


def _loop_result(ctx: _LoopContext, finished: _Finished, budget_spent: bool) -> LoopResult:
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
        result.never_answered = not finished.stop_answered and not _answered(done)
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
        result.never_answered = not _answered(done)
        return result
    why = _stop_reason(done, budget_spent)
    message = f"no candidate passed ({opts.candidates} candidates x {opts.rounds} rounds): {why}"
    result = LoopResult(False, None, done, message, kernel=kernel)
    result.stop_reason = why
    result.attempt = _best_attempt(done)
    return result
