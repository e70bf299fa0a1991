"""The lowering loop's records and options (lowering/loop.py runs the loop): what each round
did (``RoundRecord``), an attempt kept when nothing passes (``Attempt``), a candidate's result
(``CandidateResult``), the loop's (``LoopResult``, with its report in words) and the loop's
options (``LoopOptions``). Plain dataclasses; ``lowering.loop`` re-exports every one."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from . import prompt
from .accounting import Spend
from .perf import Resources
from .verify import VerifyResult


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
    prompt_tokens: int = 0  # the endpoint's usage for this round's reply (0: not reported)
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    fixes: list[str] = field(default_factory=list)  # certain fixes applied before feedback


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
    usage: Resources | None = None  # ptxas -v of the kept PTX, from the check that passed it
    kernel: str = ""  # the kept PTX's entry (a request leaves the name to the model)


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
    spend: Spend | None = None  # tokens (and cost, with prices) of every reply

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
    max_total_tokens: int = 0  # all replies together; 0: no cap (ptxls.llm.maxTotalTokens)
    max_cost: float = 0.0  # with prices set; 0: no cap (ptxls.llm.maxCost)
    price_prompt: float = 0.0  # per million prompt tokens (ptxls.llm.pricePromptPerMTok)
    price_completion: float = 0.0  # per million completion tokens
    # positions of the source kernel's output parameters (the test spec's "out" ones): the
    # dataflow check says which of them the candidate never stores through
    output_params: tuple[int, ...] = ()


Progress = Callable[[str], None]
