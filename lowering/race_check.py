"""The lowering loop's race check: a candidate that passed its GPU test and uses ``.shared``
memory or barriers runs once more under compute-sanitizer racecheck; a race goes back to the
model like a numeric mismatch, with the two PTX lines (and their text) and the shared address.

A race the numbers did not show is still a wrong kernel: on another GPU, another size or another
day the read comes before the write. The check runs only where it can mean something (a GPU, a
compute-sanitizer, a spec from the source, shared memory or a barrier in the candidate) and says
why when it is skipped, so a loop result never reads "race-free" when nothing looked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# .shared state space or a CTA barrier (bar.sync/bar.red/bar.arrive/barrier.*): what racecheck
# can say something about. Comments are removed first.
_SHARED_OR_BARRIER = re.compile(r"(?<![\w$])(?:\.shared\b|bar\.|barrier\.)")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


@dataclass
class RaceCheck:
    ran: bool  # racecheck ran on the candidate
    ok: bool  # no race found (True also when skipped: the skip says why)
    summary: str  # one line for the progress and the loop's report
    feedback: str = ""  # for the model when not ok
    skipped: str = ""  # why it did not run
    findings: list = field(default_factory=list)  # gputest.sanitize.Finding
    seconds: float = 0.0


def uses_shared_or_barriers(ptx: str) -> bool:
    return bool(_SHARED_OR_BARRIER.search(_COMMENT.sub(" ", ptx)))


async def race_check(ptx: str, kernel: str, spec, options: dict | None = None) -> RaceCheck:
    """Racecheck ``kernel`` of ``ptx`` with the loop's test ``spec`` (from the source, never the
    candidate). ``options``: the GPU verifier's (``reference_cuda``, ``reference_path``,
    ``ptxas``, ``arch``, ``seed``, ``sanitizer``). Never raises."""
    if not uses_shared_or_barriers(ptx):
        return _skipped("the candidate uses no .shared memory and no barrier")
    if spec is None:
        return _skipped("no test spec from the source")
    try:
        from ptxls.gputest.sanitize import SanitizeOptions, sanitize_ptx
    except Exception as e:  # a harness that cannot import means no check
        return _skipped(f"the GPU harness is unavailable: {type(e).__name__}: {e}")
    opts = dict(options or {})
    sanitize_opts = SanitizeOptions(
        tools=("racecheck",), sanitizer=opts.get("sanitizer"), ptxas=opts.get("ptxas"),
        arch=opts.get("arch"), seed=opts.get("seed"), trusted=bool(opts.get("trusted")),
    )  # fmt: skip
    try:
        result = await sanitize_ptx(
            ptx, kernel, spec=spec, reference_cuda=opts.get("reference_cuda"),
            reference_path=opts.get("reference_path"), options=sanitize_opts,
        )  # fmt: skip
    except Exception as e:  # the check is extra: its failure is a note
        return _skipped(f"racecheck could not run: {type(e).__name__}: {e}")
    if result.status in ("no-gpu", "no-sanitizer"):
        return _skipped(result.summary)
    races = [f for f in result.findings if f.tool == "racecheck"]
    if races:
        return RaceCheck(True, False, races[0].text[:300],
                         race_feedback(kernel, races), findings=races, seconds=result.seconds)  # fmt: skip
    if result.status != "clean":
        # The sanitized run itself went wrong (timeout, a fault only under the tool): say so,
        # do not fail a candidate whose GPU test passed on it.
        return RaceCheck(True, True, f"racecheck inconclusive: {result.summary}"[:300],
                         seconds=result.seconds)  # fmt: skip
    return RaceCheck(True, True, f"racecheck: no race at n={result.sizes}", seconds=result.seconds)


async def check_candidate(verifier, ptx: str, kernel: str, *, gpu_tested: bool) -> RaceCheck:
    """The loop's hook: racecheck a candidate that just passed ``verifier``'s GPU test, with that
    verifier's spec and options (the spec from the source, never from the candidate)."""
    if not uses_shared_or_barriers(ptx):
        return _skipped("the candidate uses no .shared memory and no barrier")
    if not gpu_tested:
        return _skipped("the candidate was not GPU-tested (no GPU or no spec)")
    from .verify import GpuVerifier, spec_from_sources

    if not isinstance(verifier, GpuVerifier):
        return _skipped("no GPU verifier")
    spec, why = (
        (verifier.spec, "")
        if verifier.spec is not None
        else spec_from_sources(kernel, verifier.options)
    )
    if spec is None:
        return _skipped(why)
    return await race_check(ptx, kernel, spec, verifier.options)


def _skipped(why: str) -> RaceCheck:
    return RaceCheck(False, True, f"racecheck skipped ({why})", skipped=why)


def race_feedback(kernel: str, races: list) -> str:
    """The repair prompt's text: each race's two lines with their PTX, the shared bytes, the
    threads; then what orders them."""
    lines = [
        f"compute-sanitizer racecheck found {len(races)} shared-memory race(s) in kernel "
        f"{kernel}. The GPU test's numbers passed, but the result depends on timing: one "
        "thread's access can come before or after another's.",
    ]
    for f in races:
        first, second = (f.line_texts + ["", ""])[:2]
        lines.append(f"- {f.text}")
        if f.line is not None:
            lines.append(f"    line {f.line}: {first}")
        if f.other_line is not None and f.other_line != f.line:
            lines.append(f"    line {f.other_line}: {second}")
    lines.append(
        "Order the conflicting accesses with a barrier that every thread of the block reaches "
        "(bar.sync 0; not inside a branch only some threads take), or give each thread its own "
        "shared slot. Send the complete corrected PTX module."
    )
    return "\n".join(lines)
