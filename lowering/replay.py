"""Replay a transcript: the recorded replies go through today's extraction and ptxas again.

No model is called. The result says, round by round, what was recorded and what happens now,
so an audit can confirm a transcript ("the PTX we shipped is what round 2 produced, and ptxas
still accepts it") or spot drift after a toolchain change (a newer ptxas rejecting it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .extract import extract_ptx
from .ptx_check import compile_check
from .transcript import read


@dataclass
class ReplayedRound:
    candidate: int
    round: int
    recorded_ok: bool | None  # ptxas verdict in the transcript; None when no PTX was found then
    now_ok: bool | None  # verdict today; None when no PTX is found now
    now_summary: str
    ptx: str | None = None

    @property
    def agrees(self) -> bool:
        return self.recorded_ok == self.now_ok


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
        return "\n".join(lines)


async def replay(
    path: Path | str, *, arch: str | None = None, ptxas_path: str | None = None
) -> Replay:
    records = read(path)
    start = next((r for r in records if r.get("kind") == "start"), {})
    kernel = start.get("kernel", "")
    options = start.get("options", {})
    arch = arch or options.get("arch") or "sm_90"
    out = Replay(Path(path), kernel)
    verdicts = {
        (r.get("candidate"), r.get("round")): bool(r.get("ok"))
        for r in records
        if r.get("kind") == "ptxas"
    }
    for r in records:
        if r.get("kind") == "end":
            out.recorded_end = r
        if r.get("kind") != "reply" or r.get("purpose") == "plan":
            continue
        key = (r.get("candidate"), r.get("round"))
        ext = extract_ptx(r.get("text", ""), kernel or None)
        if ext.ptx is None:
            out.rounds.append(
                ReplayedRound(key[0], key[1], verdicts.get(key), None, f"no PTX ({ext.problem})")
            )
            continue
        check = await compile_check(ext.ptx, arch=arch, ptxas_path=ptxas_path)
        out.rounds.append(
            ReplayedRound(key[0], key[1], verdicts.get(key), check.ok, check.summary(), ext.ptx)
        )
    return out
