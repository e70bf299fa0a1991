"""What the loop checks about a candidate once ptxas has accepted it, beyond the interface:

- **Is it complete?** ``frontend/ptx_dataflow.py`` on the candidate's entry: a register read that
  no write reaches, pointers never stored through, no effect at all, a pointer parameter never
  loaded. The model is told the exact lines. Where a test really runs (a GPU, or the CPU
  emulator) the test settles it: a candidate that passes its test is kept and the findings
  are a warning. Where nothing is tested, a candidate with a finding is never the result.
- **Does it call what it should not?** A call to a function the module does not define
  (``vprintf``, ``malloc``, ``free``, ``__assertfail`` …: the CUDA runtime's device functions)
  is fed back, unless the source asks for it (``printf``, ``malloc``/``new``, ``free``/
  ``delete``, ``assert`` in the source's text).
- **Certain fixes first.** The fixes ``ptxls check --fix`` applies (a ``.reg`` range widened to
  the highest register used, a typo'd label, the ``.version``/``.target`` an instruction needs)
  are applied to a candidate that ptxas rejects before any feedback is built
  (``certain_fixes``), so no round is spent on them; what remains goes to the model with the
  notes of what was fixed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ptxls.diagnostics.fixes import apply_fixes
from ptxls.frontend.ptx import PtxModule
from ptxls.frontend.ptx_dataflow import Finding, check_dataflow

if TYPE_CHECKING:
    from .ptx_check import CompileCheck

FIX_ROUNDS = 4  # as ptxls check --fix: a fix can uncover the next (.version, then .target)


def dataflow_findings(
    ptx: str, module: PtxModule | None, kernel: str, outputs: tuple[int, ...] = ()
) -> list[Finding]:
    """``outputs``: positions of the entry's output parameters (the test's ``out`` ones)."""
    return check_dataflow(ptx, module, entry=kernel or None, outputs=outputs)


def finding_lines(findings: list[Finding], limit: int = 8) -> str:
    """The findings as the lines the model is shown: '- line N: ...', at most ``limit``."""
    shown = [f"- {f.shown()}" for f in findings[:limit]]
    if len(findings) > limit:
        shown.append(f"- … and {len(findings) - limit} more")
    return "\n".join(shown)


def dataflow_feedback(findings: list[Finding], elision_hint: str = "") -> str:
    """What the model is told about an incomplete candidate: the exact lines."""
    text = (
        "The PTX assembles, but it cannot be complete — what its instructions do shows code "
        "missing:\n" + finding_lines(findings) + "\nSend the whole kernel: every instruction that "
        "computes these values, with nothing left out or marked as unchanged."
    )
    if elision_hint:
        text += f"\n(Your reply also says so: {elision_hint}.)"
    return text


def dataflow_summary(findings: list[Finding]) -> str:
    f = findings[0]
    more = f" (+{len(findings) - 1} more)" if len(findings) > 1 else ""
    return f"incomplete: line {f.line + 1}: {f.message.split(':')[0]}{more}"


# ---- calls the candidate should not make

_CALL = re.compile(r"\bcall(?:\.uni)?\s*(?:\([^)]*\)\s*,\s*)?([A-Za-z_$][\w$]*)")
# what in the source asks for each runtime function
_ASKED_BY = {
    "vprintf": r"\bprintf\b",
    "malloc": r"\bmalloc\b|\bnew\b",
    "free": r"\bfree\b|\bdelete\b",
    "__assertfail": r"\bassert\b",
    "__assert_fail": r"\bassert\b",
}


def foreign_calls(ptx: str, module: PtxModule | None, source_text: str) -> list[tuple[int, str]]:
    """(0-based line, name) of each call to a function the module does not define and the
    source does not ask for."""
    defined = {f.name for f in module.functions if f.body is not None} if module else set()
    found: dict[str, int] = {}
    for no, line in enumerate(ptx.split("\n")):
        code = line.split("//", 1)[0]
        if "call" not in code:
            continue
        for m in _CALL.finditer(code):
            name = m.group(1)
            if name in defined or name in found:
                continue
            asked = _ASKED_BY.get(name)
            if asked and re.search(asked, source_text):
                continue
            found[name] = no
    return [(no, name) for name, no in found.items()]


def calls_feedback(calls: list[tuple[int, str]]) -> str:
    listed = "\n".join(f"- line {no + 1}: calls {name}" for no, name in calls[:8])
    return (
        "The PTX calls functions the kernel must not need (the CUDA runtime's printf, malloc, "
        "free, assert …; nothing in the task asks for them):\n" + listed + "\nRemove the calls "
        "and their .extern declarations; compute everything in the kernel itself."
    )


# ---- certain fixes


@dataclass
class Fixed:
    ptx: str
    notes: list[str] = field(default_factory=list)  # "line 16: Declare %r<7> (covers %r6)"
    check: CompileCheck | None = None  # the CompileCheck of the fixed PTX (None: nothing was fixed)


async def certain_fixes(ptx: str, check, recheck) -> Fixed:
    """Apply the fixes of a failed check (only where the text still matches, conflicts left
    out) and check again, up to FIX_ROUNDS times. ``recheck(ptx)`` is the loop's ptxas run."""
    out = Fixed(ptx)
    for _ in range(FIX_ROUNDS):
        fixes = list(check.fixes)
        if not fixes:
            break
        applied = apply_fixes(out.ptx, fixes)
        if not applied.applied or applied.text == out.ptx:
            break
        out.ptx = applied.text
        out.notes += [f"line {f.line + 1}: {f.title}" for f in applied.applied]
        check = await recheck(out.ptx)
        out.check = check
        if check.ok:
            break
    return out
