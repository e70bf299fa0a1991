"""One diagnostic per cause: ptxas's cascade folded into its cause, the lints' words kept.

ptxas reports one mistake several times on one line: an undeclared register first makes
"Unknown symbol '%r6'" and then "Arguments mismatch for instruction 'mad.lo'" (the operand has
no type). A person should see one squiggle that names the cause, with what follows from it
said beside it, and the project's clearer words (which ``.reg`` line declares what) and its fix
on that squiggle, not dropped because ptxas spoke first.

The same ranking orders the lowering loop's feedback to a model (``lowering/ptx_check``).
"""

from __future__ import annotations

from dataclasses import replace

from .model import Problem, Severity

# Words of a message that names a cause, and of one that follows from a cause on the same line.
CAUSE_WORDS = (
    "unknown symbol",
    "is not declared",
    "undefined",
    "not defined",
    "unsupported .version",
    "unsupported .target",
    "not supported on .target",
    "requires",
)
CONSEQUENCE_WORDS = ("arguments mismatch", "illegal operand type", "operand ", "syntax error")


def rank(message: str) -> int:
    """0 for a cause, 2 for a consequence, 1 for anything else."""
    low = message.lower()
    if any(c in low for c in CAUSE_WORDS):
        return 0
    if any(c in low for c in CONSEQUENCE_WORDS):
        return 2
    return 1


def fold_cascade(problems: list[Problem], lints: list[Problem]) -> list[Problem]:
    """``problems`` (merged: ptxas's word wins over a lint at the same token) with, per line,
    ptxas's consequences folded into the first cause on that line, and each ptxas error that
    replaced a lint given that lint's fix (and its words, where they say more)."""
    causes_by_line: dict[int, Problem] = {}
    for p in problems:
        if _is_ptxas_error(p) and rank(p.message) == 0 and p.line not in causes_by_line:
            causes_by_line[p.line] = p
    followers: dict[int, list[str]] = {}
    kept: list[Problem] = []
    for p in problems:
        if _is_ptxas_error(p) and rank(p.message) == 2 and p.line in causes_by_line:
            said = followers.setdefault(p.line, [])
            if p.message not in said:
                said.append(p.message)
            continue
        kept.append(p)
    out = []
    for p in kept:
        lint = _lint_at(p, lints)
        message = p.message
        if lint is not None and lint.code in _WORDS_KEPT:
            message += f" — {lint.message}"
        if causes_by_line.get(p.line) is p and followers.get(p.line):
            message += f"; then, because of it: {'; '.join(followers[p.line])}"
        fix = p.fix or (lint.fix if lint else None)
        if message != p.message or fix != p.fix:
            p = replace(p, message=message, fix=fix)
        out.append(p)
    return out


# Lints whose words say more than ptxas's at the same token ("Unknown symbol '%r6'" says
# nothing of the .reg range; "Unknown symbol 'Done'" nothing of the label 'DONE'). The ISA
# lints say what ptxas says ("requires PTX ISA 8.0"): only their fix is kept.
_WORDS_KEPT = ("undeclared-register", "unknown-label")


def _is_ptxas_error(p: Problem) -> bool:
    return p.source == "ptxas" and p.severity is Severity.ERROR


def _lint_at(p: Problem, lints: list[Problem]) -> Problem | None:
    """The lint at the token where ptxas spoke (merge() dropped it for ptxas's word): one whose
    words say more, or one that carries a fix."""
    if not _is_ptxas_error(p):
        return None
    for q in lints:
        if (
            (q.code in _WORDS_KEPT or q.fix is not None)
            and q.line == p.line
            and q.col < max(p.end_col, p.col + 1)
            and p.col < q.end_col
        ):
            return q
    return None
