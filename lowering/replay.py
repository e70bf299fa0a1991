"""Replay a transcript: the recorded replies go through today's checks again — extraction,
ptxas, the dataflow completeness check and the forbidden-calls check (``ptxls replay``).

No model is called. The result says, round by round, what was recorded and what happens now,
so an audit can confirm a transcript ("the PTX we shipped is what round 2 produced, and ptxas
still accepts it") or spot drift after a toolchain change (a newer ptxas rejecting it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .candidate import strip_gputest_lines
from .completeness import certain_fixes, dataflow_findings, foreign_calls
from .extract import extract_ptx
from .ptx_check import compile_check
from .transcript import read


@dataclass
class ReplayedRound:
    candidate: int | None  # as the transcript's record says (None: it did not say)
    round: int | None
    recorded_ok: bool | None  # ptxas verdict in the transcript; None when no PTX was found then
    now_ok: bool | None  # verdict today; None when no PTX is found now
    now_summary: str
    ptx: str | None = None
    recorded_incomplete: bool = False  # the run's dataflow check flagged this round
    now_findings: list[str] = field(default_factory=list)  # the dataflow check's, today
    now_calls: list[str] = field(default_factory=list)  # calls the source did not ask for

    @property
    def agrees(self) -> bool:
        return self.recorded_ok == self.now_ok and (
            self.recorded_ok is not True or self.recorded_incomplete == bool(self.now_findings)
        )

    def as_dict(self) -> dict:
        return {"candidate": self.candidate, "round": self.round, "recorded_ptxas_ok":
                self.recorded_ok, "now_ptxas_ok": self.now_ok, "now": self.now_summary,
                "recorded_incomplete": self.recorded_incomplete,
                "now_findings": self.now_findings, "now_calls": self.now_calls,
                "agrees": self.agrees}  # fmt: skip


@dataclass
class Replay:
    path: Path
    kernel: str
    rounds: list[ReplayedRound] = field(default_factory=list)
    recorded_end: dict | None = None

    @property
    def agrees(self) -> bool:
        return all(r.agrees for r in self.rounds)

    def summary(self) -> str:
        lines = [
            f"replay of {self.path.name}: kernel {self.kernel or '?'}, {len(self.rounds)} rounds"
        ]
        for r in self.rounds:
            rec = {True: "ok", False: "errors", None: "no PTX"}[r.recorded_ok]
            mark = "" if r.agrees else "   <-- differs"
            lines.append(
                f"  candidate {r.candidate} round {r.round}: recorded ptxas {rec}; now {r.now_summary}{mark}"
            )
        if self.recorded_end:
            lines.append(f"  recorded end: {self.recorded_end.get('message', '')}")
        lines.append(
            "  every round agrees with the record" if self.agrees else
            "  some rounds differ from the record (a newer ptxas or check?)"
        )  # fmt: skip
        return "\n".join(lines)

    def as_dict(self) -> dict:
        return {"transcript": str(self.path), "kernel": self.kernel, "agrees": self.agrees,
                "rounds": [r.as_dict() for r in self.rounds],
                "recorded_end": (self.recorded_end or {}).get("message")}  # fmt: skip


async def replay(
    path: Path | str, *, arch: str | None = None, ptxas_path: str | None = None
) -> Replay:
    records = read(path)
    start = next((r for r in records if r.get("kind") == "start"), {})
    kernel = start.get("kernel", "")
    options = start.get("options", {})
    arch = arch or options.get("arch") or "sm_90"
    out = Replay(Path(path), kernel)
    verdicts: dict = {}
    for r in records:
        if r.get("kind") == "ptxas":  # the last ptxas run of a round (after certain fixes)
            verdicts[(r.get("candidate"), r.get("round"))] = bool(r.get("ok"))
    flagged = {(r.get("candidate"), r.get("round")) for r in records if r.get("kind") == "dataflow"}
    source = start.get("source", "") or ""
    for r in records:
        if r.get("kind") == "end":
            out.recorded_end = r
        if r.get("kind") != "reply" or r.get("purpose") == "plan":
            continue
        key = (r.get("candidate"), r.get("round"))
        ext = extract_ptx(r.get("text", ""), kernel or None, reasoning=r.get("reasoning", "") or "")
        if ext.ptx is None:
            out.rounds.append(
                ReplayedRound(key[0], key[1], verdicts.get(key), None, f"no PTX ({ext.problem})")
            )
            continue
        ptx, _ = strip_gputest_lines(ext.ptx)
        check = await compile_check(ptx, arch=arch, ptxas_path=ptxas_path)
        if not check.ok and check.fixes:  # as the loop does: the certain fixes first
            ptx, check = await _fixed(ptx, check, arch, ptxas_path)
        played = ReplayedRound(key[0], key[1], verdicts.get(key), check.ok, check.summary(), ptx,
                               recorded_incomplete=key in flagged)  # fmt: skip
        if check.ok:
            assert check.module is not None  # compile_check parses every candidate
            entry = kernel or (check.module.entries[0].name if check.module.entries else "")
            played.now_findings = [
                f"{f.kind}: {f.shown()}" for f in dataflow_findings(ptx, check.module, entry)
            ]
            played.now_calls = [f"line {n + 1}: {name}" for n, name in
                                foreign_calls(ptx, check.module, source)]  # fmt: skip
            if played.now_findings:
                played.now_summary += f"; incomplete ({len(played.now_findings)} dataflow findings)"
            if played.now_calls:
                played.now_summary += f"; calls {', '.join(played.now_calls)}"
        out.rounds.append(played)
    return out


async def _fixed(ptx: str, check, arch: str, ptxas_path: str | None):
    async def recheck(text: str):
        return await compile_check(text, arch=arch, ptxas_path=ptxas_path)

    fixed = await certain_fixes(ptx, check, recheck)
    return (fixed.ptx, fixed.check) if fixed.notes else (ptx, check)
