"""Apply the fixes a check found to the text it checked (``ptxls check --fix``).

A fix is applied only where the text still says what the check saw (``old_text`` at its line
and column); two fixes that would edit the same place differently are both left out (which one
is meant is for a person to choose), and so is any fix that overlaps another. Line endings are
kept as they are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .model import Fix

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")


@dataclass
class FixOutcome:
    text: str
    applied: list[Fix] = field(default_factory=list)
    left_out: list[tuple[Fix, str]] = field(default_factory=list)  # (fix, why)


def apply_fixes(text: str, fixes: list[Fix]) -> FixOutcome:
    lines = [m.group(0) for m in _LINE.finditer(text)]
    if lines and lines[-1] == "":
        lines.pop()
    outcome = FixOutcome(text)
    unique = list(dict.fromkeys(fixes))
    chosen: list[Fix] = []
    for fix in unique:
        why = _why_not(fix, lines, unique)
        if why:
            outcome.left_out.append((fix, why))
        else:
            chosen.append(fix)
    # right to left within a line, so earlier columns stay where the check saw them
    for fix in sorted(chosen, key=lambda f: (f.line, f.col), reverse=True):
        line = lines[fix.line]
        lines[fix.line] = line[: fix.col] + fix.new_text + line[fix.col + len(fix.old_text) :]
    outcome.applied = sorted(chosen, key=lambda f: (f.line, f.col))
    outcome.text = "".join(lines)
    return outcome


def _why_not(fix: Fix, lines: list[str], all_fixes: list[Fix]) -> str:
    if not (0 <= fix.line < len(lines)) or fix.col < 0:
        return "its line is not in the file"
    if lines[fix.line][fix.col : fix.col + len(fix.old_text)] != fix.old_text:
        return f"line {fix.line + 1} no longer says '{fix.old_text}' there"
    for other in all_fixes:
        if other is fix or other.line != fix.line:
            continue
        if other.col < fix.col + len(fix.old_text) and fix.col < other.col + len(other.old_text):
            return f"'{other.title}' edits the same place: choose one by hand"
    return ""
