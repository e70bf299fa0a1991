"""Instant in-process checks: only what is certain, so they never contradict ptxas.

Each error is something ptxas would also reject: a module without ``.version``/``.target``,
unbalanced braces, a register that no ``.reg`` (or other declaration) in scope names, a ``bra``
to a label that does not exist in the function. Special registers (``%tid.x``, ``%clock64`` …) and
anything we cannot judge are left alone. The warnings come from ``frontend/ptx_dataflow.py``:
legal PTX that cannot be complete (a register read that no write reaches, and the like).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import replace

from ptxls.frontend.ptx import PtxFunction, PtxModule, is_special_register, parse_ptx
from ptxls.frontend.ptx_dataflow import check_dataflow

from .model import Fix, Problem, Severity

SOURCE = "ptxls"
DATAFLOW_MAX_LINES = 5000  # ~0.5 s of dataflow on this 2-core machine when busy


def _problem(span, message: str, severity: Severity = Severity.ERROR, code: str = "") -> Problem:
    return Problem(
        span.start.line,
        span.start.col,
        span.end.col if span.end.line == span.start.line else span.start.col + 1,
        severity,
        message,
        SOURCE,
        code=code or None,
    )


def lint_ptx(text: str, module: PtxModule | None = None) -> list[Problem]:
    """All instant problems of a PTX buffer, in line order. Never raises."""
    if module is None:
        module, _ = parse_ptx(text)
    problems: list[Problem] = []
    if module.version is None:
        problems.append(
            Problem(
                0,
                0,
                0,
                Severity.ERROR,
                "missing '.version' directive (e.g. .version 8.0)",
                SOURCE,
                code="missing-version",
            )
        )
    if not module.targets:
        line = module.version_span.start.line + 1 if module.version_span else 0
        problems.append(
            Problem(
                line,
                0,
                0,
                Severity.ERROR,
                "missing '.target' directive (e.g. .target sm_90)",
                SOURCE,
                code="missing-target",
            )
        )
    problems.extend(_non_ascii(text))
    for sp in module.structure_problems:
        problems.append(_problem(sp.span, sp.message, code="braces"))
    module_names = {d.name for d in module.globals if d.count is None}
    module_ranges = [d for d in module.globals if d.count is not None]
    lines = _Lines(text)
    for func in module.functions:
        problems.extend(_undeclared_registers(func, module_names, module_ranges, lines))
        problems.extend(_unknown_labels(func))
    problems.extend(_incomplete_kernels(text, module))
    problems.sort(key=lambda p: (p.line, p.col))
    return problems


def _incomplete_kernels(text: str, module: PtxModule) -> list[Problem]:
    """The dataflow check's findings as warnings: legal PTX (ptxas accepts a read of a register
    nothing wrote) that cannot be what its author meant — a register read before any write
    reaches it, pointers never stored through, a kernel with no effect, a pointer parameter
    never loaded. An entry over DATAFLOW_MAX_LINES lines is left out: this runs on every edit."""
    if not any(
        f.span.end.line - f.span.start.line <= DATAFLOW_MAX_LINES for f in module.entries
    ):  # none that the check would look at: not even its preparation of the text
        return []
    return [
        Problem(
            f.line,
            f.col,
            max(f.end_col, f.col + 1),
            Severity.WARNING,
            f.message,
            SOURCE,
            code=f.kind,
        )  # fmt: skip
        for f in check_dataflow(text, module, max_lines=DATAFLOW_MAX_LINES)
    ]


class _Lines:
    """The buffer's lines, split only when a fix needs one (most buffers have no problem)."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._lines: list[str] | None = None

    def __getitem__(self, i: int) -> str:
        if self._lines is None:
            self._lines = self._text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        return self._lines[i] if 0 <= i < len(self._lines) else ""


def _undeclared_registers(
    func: PtxFunction, module_names: set[str], module_ranges, lines: _Lines
) -> list[Problem]:
    names = {d.name for d in func.decls if d.count is None} | module_names
    names |= {p.name for p in func.params} | {p.name for p in func.return_params}
    ranges = [d for d in func.decls if d.count is not None] + list(module_ranges)
    # %r<5> declares %r0..%r4: keep, per prefix, the largest count (several .reg lines may
    # declare the same prefix). Lookups are then one dict access per use.
    limit: dict[str, int] = {}
    for d in ranges:
        limit[d.name] = max(limit.get(d.name, 0), d.count or 0)
    out = []
    reported: set[tuple[str, int]] = set()
    fixes: dict[str, Fix | None] = {}
    # A kernel uses each name many times (30,000 uses of a few thousand names in a 24k-line
    # one): each distinct name is judged once.
    declared = _Declared(names, limit)
    for use in func.register_uses:
        reg = use.name
        if declared[reg]:
            continue
        prefix = reg.rstrip("0123456789")
        key = (reg, use.span.start.line)
        if key in reported:
            continue
        reported.add(key)
        hint = _range_hint(reg, ranges)
        problem = _problem(
            use.span, f"register '{reg}' is not declared{hint}", code="undeclared-register"
        )
        if prefix not in fixes:  # one fix per prefix: it covers every use of that prefix
            fixes[prefix] = _widen_range_fix(reg, func, ranges, limit, lines)
        fix = fixes[prefix]
        out.append(replace(problem, fix=fix) if fix else problem)
    return out


class _Declared(dict[str, bool]):
    """name → whether the function may use it: declared by name, within a range (%r<5> covers
    %r0..%r4), or a special register (%tid …). Computed on first ask."""

    def __init__(self, names: set[str], limit: dict[str, int]) -> None:
        super().__init__()
        self.names, self.limit = names, limit

    def __missing__(self, reg: str) -> bool:
        ok = reg in self.names
        if not ok:
            prefix = reg.rstrip("0123456789")
            ok = prefix != reg and int(reg[len(prefix) :]) < self.limit.get(prefix, 0)
            ok = ok or is_special_register(reg)
        self[reg] = ok
        return ok


_COUNT_AFTER_NAME = re.compile(r"\s*<\s*(\d+)\s*>")


def _widen_range_fix(reg: str, func: PtxFunction, ranges, limit: dict[str, int], lines: _Lines):
    """``%r<6>`` → ``%r<N+1>`` where %rN is the highest register of that prefix the function
    uses: one edit declares every use at once (a fix per use would widen it one at a time).
    None when no range of that prefix exists, or its text is not where the parse put it."""
    prefix = reg.rstrip("0123456789")
    if prefix == reg:
        return None
    widest = max((d for d in ranges if d.name == prefix), key=lambda d: d.count or 0, default=None)
    if widest is None or widest.span.start.line != widest.span.end.line:
        return None
    line = widest.span.end.line
    m = _COUNT_AFTER_NAME.match(lines[line], widest.span.end.col)
    if not m or int(m.group(1)) != limit.get(prefix):
        return None
    used = [
        int(u.name[len(prefix) :])
        for u in func.register_uses
        if u.name.startswith(prefix) and u.name[len(prefix) :].isdigit()
    ]
    new_count = max(used) + 1
    if new_count <= limit[prefix]:
        return None
    covers = f"{prefix}{limit[prefix]}" + (
        f" to {prefix}{new_count - 1}" if new_count - 1 > limit[prefix] else ""
    )
    return Fix(
        title=f"Declare {prefix}<{new_count}> on line {line + 1} (covers {covers})",
        line=line,
        col=m.start(1),
        old_text=m.group(1),
        new_text=str(new_count),
    )


def _range_hint(reg: str, ranges) -> str:
    for d in ranges:
        suffix = reg[len(d.name) :]
        if reg.startswith(d.name) and suffix.isdigit():
            return (
                f" ('.reg {d.type} {d.name}<{d.count}>' on line {d.span.start.line + 1} declares "
                f"{d.name}0 to {d.name}{d.count - 1})"
            )
    return ""


def _unknown_labels(func: PtxFunction) -> list[Problem]:
    out = []
    for target in func.branch_targets:
        if target.name not in func.labels:
            problem = _problem(
                target.span,
                f"branch to unknown label '{target.name}' in '{func.name}'",
                code="unknown-label",
            )
            out.append(_with_closest_label(problem, target, func))
    return out


def _with_closest_label(problem: Problem, target, func: PtxFunction) -> Problem:
    """A typo'd label ('DONE' for 'Done', 'LOOP_1' for 'LOOP1'): the fix is the function's one
    label that is close to it. None when no label, or more than one, is about as close."""
    close = difflib.get_close_matches(target.name, list(func.labels), n=2, cutoff=0.75)
    folded = [lab for lab in func.labels if lab.lower() == target.name.lower()]
    best = folded[:1] or close[:1]
    if not best or (not folded and len(close) > 1):
        return problem
    span = target.span
    if span.start.line != span.end.line:
        return problem
    fix = Fix(f"Change to '{best[0]}' (a label of '{func.name}')", span.start.line,
              span.start.col, target.name, best[0])  # fmt: skip
    return replace(problem, message=f"{problem.message}; did you mean '{best[0]}'?", fix=fix)


_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def _non_ascii(text: str) -> list[Problem]:
    """ptxas stops at the first non-ASCII character, even inside a comment."""
    m = _NON_ASCII.search(text)
    if not m:
        return []
    line = text.count("\n", 0, m.start())
    col = m.start() - (text.rfind("\n", 0, m.start()) + 1)
    ch = m.group(0)
    return [
        Problem(
            line,
            col,
            col + 1,
            Severity.ERROR,
            f"non-ASCII character '{ch}' (U+{ord(ch):04X}): ptxas accepts only ASCII, even in comments",
            SOURCE,
            code="non-ascii",
        )
    ]
