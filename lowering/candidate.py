"""One candidate of the lowering loop (lowering/loop.py runs them side by side): its
conversation with the model and its rounds — ask, extract the PTX, compile it once, run the
checks after ptxas (loop_checks.py), feed the failure back — with the watch that makes a stuck
model change tack, then stop.

- **Candidates differ.** Candidate 1 asks plainly at the configured temperature; each further
  candidate asks at a higher temperature and with another approach (``prompt.TACKS``).
- **Requests stay the same size.** Each request is the task (system rules, examples, source)
  plus the latest attempt and its feedback — never the whole history.
- **A stuck model changes tack.** When a round fails for the same reason as the round before,
  the conversation starts afresh with a summary of what failed, another approach and a higher
  temperature; the same failure after that ends the candidate, saying why.
- **A candidate never sets its own test**: ``@gputest`` lines in a reply are dropped from its
  PTX before anything uses it, and the drop is recorded.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass, field

from ptxls.fewshot.library import Example

from . import prompt
from .accounting import Spend, usage_of
from .llm_client import LlmError
from .loop_checks import CANDIDATE_CHECKS
from .loop_records import Attempt, CandidateResult, LoopOptions, Progress, RoundRecord
from .perf import Resources, perf_feedback
from .protocols import ChatClient, Verifier, wants_cubin
from .ptx_check import compile_check, param_order_warning
from .sources import SourceKernel
from .transcript import Transcript
from .verify import Candidate, VerifyResult

# completeness.py and extract.py (their regular expressions, the dataflow check, the fixes) are
# imported when the first reply arrives, not before the first request (bench/lowering_startup.py)

# errors that no other candidate or round can fix
FATAL_LLM_ERRORS = ("config", "auth", "model", "unreachable", "rate_limit", "bad_request")
LENGTH_HINT = "raise ptxls.llm.maxTokens (PTXLS_LLM_MAX_TOKENS)"
BUDGET_HINT = "ptxls.llm.budgetSeconds (PTXLS_LLM_BUDGET_SECONDS)"
_GPUTEST_LINE = re.compile(r"^[ \t]*(?://|#|;)[^\n]*@gputest\b[^\n]*\n?", re.MULTILINE)
_DIGITS = re.compile(r"\d+")


class StopLoop(Exception):
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
class LoopContext:
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


class CandidateRun:
    """One candidate: its conversation with the model and its rounds."""

    def __init__(self, ctx: LoopContext, index: int):
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
            raise StopLoop(over)
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
            raise StopLoop(f"cannot check candidates: {e}") from None
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
                raise StopLoop(str(e), answered=answered([result])) from e
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


def answered(candidates: list[CandidateResult]) -> bool:
    """Whether the model replied at all (a round that is not an endpoint error)."""
    return any(r.outcome != "llm_error" for c in candidates for r in c.rounds)
