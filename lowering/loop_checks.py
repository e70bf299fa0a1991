"""What a lowering candidate meets once ptxas has accepted it (lowering/loop.py runs them):
the interface against the source kernel, calls the source does not make, the dataflow check,
the GPU test (or its compile-only stand-in) and compute-sanitizer's racecheck. One function
each, in order in ``CANDIDATE_CHECKS``; each gets the round's Candidate (the one parse, the
cubin of the one ptxas run) and returns a ``_Failure`` (what the model is told) or None."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .loop_records import RoundRecord
from .ptx_check import interface_problems
from .verify import Candidate

if TYPE_CHECKING:
    from .candidate import CandidateRun


@dataclass
class _Failure:
    """A check the candidate failed: the round's outcome and summary, what the model is told,
    the messages that make two failures "the same", and how the attempt ranks (higher is
    better: GPU-tested but wrong > ptxas-clean but untestable > fewest ptxas errors)."""

    outcome: str
    summary: str
    feedback: str
    messages: list[str]
    rank: tuple[int, int]


CandidateCheck = Callable[["CandidateRun", RoundRecord, Candidate], Awaitable[_Failure | None]]


async def _interface_check(run: CandidateRun, rec: RoundRecord, cand: Candidate) -> _Failure | None:
    """The entry the GPU test will call, against the source kernel's parameters."""
    assert cand.module is not None  # the round's one parse, made before any check runs
    iface = interface_problems(cand.module, cand.kernel, run.ctx.src.params)
    if not iface:
        return None
    run.record("interface", rec, problems=iface)
    feedback = "The PTX assembles, but cannot be tested as the source kernel:\n- " + "\n- ".join(
        iface
    )
    return _Failure("interface", f"interface: {iface[0]}", feedback, iface, (1, 0))


async def _verify_check(run: CandidateRun, rec: RoundRecord, cand: Candidate) -> _Failure | None:
    """The verifier: the GPU test on the cubin of the round's ptxas run, or the compile-only
    stand-in that says why nothing was tested."""
    run.progress(f"{run.tag}, round {rec.round}: ptxas ok; testing")
    t_verify = time.monotonic()
    verifier = run.ctx.verifier
    v = await verifier(cand.ptx, cand.kernel, candidate=cand)
    rec.verify_s = time.monotonic() - t_verify
    run.record("verify", rec, ok=v.ok, tested=v.tested, summary=v.summary, feedback=v.feedback,
               gpu=v.gpu, kernel_ms=v.kernel_ms)  # fmt: skip
    run.round_verify = v
    if v.ok:
        return None
    messages = [v.summary.split(":")[0] + ":" + (v.feedback[:80])]
    return _Failure("gpu", v.summary, v.feedback, messages, (2, 0))


async def _race_check(run: CandidateRun, rec: RoundRecord, cand: Candidate) -> _Failure | None:
    """compute-sanitizer racecheck on a candidate that passed its GPU test and uses .shared
    memory or barriers (lowering/race_check.py); a race is fed back like a wrong result."""
    from .race_check import check_candidate

    v = run.round_verify
    rc = await check_candidate(run.ctx.verifier, cand.ptx, cand.kernel,
                               gpu_tested=bool(v and v.ok and v.tested))  # fmt: skip
    run.record("racecheck", rec, ran=rc.ran, ok=rc.ok, summary=rc.summary, seconds=rc.seconds)
    if rc.ok:
        if v is not None and (rc.ran or "not GPU-tested" in rc.skipped):
            v.summary += f"; {rc.summary}"  # the round's and the result's summary say it
        return None
    return _Failure("race", rc.summary, rc.feedback, [f.text[:120] for f in rc.findings], (2, 1))


async def _calls_check(run: CandidateRun, rec: RoundRecord, cand: Candidate) -> _Failure | None:
    """Calls to functions the module does not define (vprintf, malloc, __assertfail …) that the
    source does not ask for."""
    from .completeness import calls_feedback, foreign_calls

    calls = foreign_calls(cand.ptx, cand.module, run.ctx.src.text)
    if not calls:
        return None
    run.record("calls", rec, calls=[f"line {no + 1}: {name}" for no, name in calls])
    names = ", ".join(name for _, name in calls)
    return _Failure("calls", f"calls {names}", calls_feedback(calls), [names], (1, -1))


async def _dataflow_scan(run: CandidateRun, rec: RoundRecord, cand: Candidate) -> _Failure | None:
    """The dataflow findings of the candidate's entry, kept for _dataflow_settle (a test that
    runs settles them) and for the feedback of a failed test."""
    from .completeness import dataflow_findings

    found = dataflow_findings(cand.ptx, cand.module, cand.kernel, run.ctx.opts.output_params)
    run.round_findings = found
    if found:
        run.record("dataflow", rec, findings=[f"{f.kind}: {f.shown()}" for f in found])
    return None


async def _dataflow_settle(run: CandidateRun, rec: RoundRecord, cand: Candidate) -> _Failure | None:
    """A candidate with findings that no test ran on is incomplete (never the result); one that
    passed a test that ran keeps a warning."""
    found = run.round_findings
    if not found:
        return None
    v = run.round_verify
    # a test that ran settles it: on the GPU, or on the CPU emulator (emulated, not "tested")
    if v is not None and v.ok and (v.tested or getattr(v, "emulated", False)):
        warning = f"passed its test although the dataflow check says: {found[0].shown()}"
        if warning not in run.result.warnings:
            run.result.warnings.append(warning)
        return None
    from .completeness import dataflow_feedback, dataflow_summary

    feedback = dataflow_feedback(found, run.elision_hint)
    return _Failure("incomplete", dataflow_summary(found), feedback,
                    [f"{f.kind}:{f.name}" for f in found], (0, 0))  # fmt: skip


# What a candidate meets once ptxas has accepted it, in order; the first failure ends the round,
# and a round whose checks all return None passes. Each check gets the round's Candidate (the
# one parse, the cubin of the one ptxas run) and returns a _Failure or None.
CANDIDATE_CHECKS: tuple[CandidateCheck, ...] = (
    _interface_check,
    _calls_check,
    _dataflow_scan,
    _verify_check,
    _dataflow_settle,
    _race_check,
)
