"""Availability lint: an instruction that needs a newer ``.version`` or ``.target`` than the file
declares (``redux.sync`` under ``.target sm_75``, ``wgmma.mma_async`` under ``sm_90`` instead of
``sm_90a``, ``stmatrix`` under ``.version 7.0``).

It fires only where it is certain: a requirement counts only if the instruction table carries an
example for it, and tests/test_isa.py proves with real ptxas that each such example is accepted at
that minimum and rejected just below it. Everything else (unknown opcodes, variants without a
checked example, targets without a number) is left to ptxas.
"""

from __future__ import annotations

import bisect
import functools
import re

from ptxls.frontend.ptx import PtxModule, blank_comments, line_starts, parse_ptx

from . import isa
from .model import Fix, Problem, Severity

SOURCE = "ptxls"

# An instruction starts a statement: after '{', '}' or ';', past any labels and a guard
# (@%p / @!%p). Its opcode token is lower-case letters, digits and dotted modifiers (with ::).
# The statement's end before it is matched, not looked behind for: a pattern that starts with a
# lookbehind is tried at every offset of a 24k-line kernel, one that starts with a character
# class jumps between candidates (search from one character early to keep the same matches).
_INSTRUCTION = re.compile(
    r"[;{}][ \t\r\n]*(?:[A-Za-z_$][\w$]*[ \t]*:(?!:)[ \t\r\n]*)*"
    r"(?:@!?%?[\w$]+[ \t\r\n]+)?([a-z][a-z0-9_]*(?:\.[\w:]+)*)"
)


@functools.lru_cache(maxsize=4096)  # a kernel repeats a few hundred distinct tokens
def _checked_requirement(token: str) -> isa.Requirement | None:
    """The requirement of ``token`` counting only parts that carry a ptxas-checked example."""
    found = isa.split_opcode(token)
    if found is None:
        return None
    op, mods = found
    present = set(mods)
    isa_req: isa.Version | None = None
    target: str | None = None
    why: list[str] = []
    if op.example:
        isa_req = min(op.isa, op.ptxas_isa) if op.ptxas_isa else op.isa
        target = op.target
        why.append(op.name)
    for v in op.variants:
        if v.example and all(w in present for w in v.when):
            if isa_req is None or v.isa > isa_req:
                isa_req = v.isa
            if v.target and (isa.sm_number(v.target) or 0) > (isa.sm_number(target) or 0):
                target = v.target
            why.append(op.name + "".join(v.when))
    if isa_req is None:
        return None
    return isa.Requirement(
        isa_req, target, op.arch_specific if op.example else (), because=why[-1] if why else ""
    )


def _offset_of(starts: list[int], line: int, col: int) -> int:
    return starts[line] + col if line < len(starts) else starts[-1]


def lint_availability(text: str, module: PtxModule | None = None) -> list[Problem]:
    """Instructions the file's own ``.version``/``.target`` cannot have. Never raises."""
    if module is None:
        module, _ = parse_ptx(text)
    version = module.version
    target = module.arch
    target_n = isa.sm_number(target)
    if version is None and target_n is None:
        return []
    clean = blank_comments(text)
    starts = line_starts(clean)
    problems: list[Problem] = []
    header = _HeaderEdits(module, clean, starts)
    for func in module.functions:
        if func.body is None:
            continue
        begin = _offset_of(starts, func.body.start.line, func.body.start.col)
        end = _offset_of(starts, func.body.end.line, func.body.end.col)
        # The distinct opcodes first (a C-speed pass; a kernel repeats a few hundred): where none
        # is unavailable, there is nothing to place.
        tokens = set(_INSTRUCTION.findall(clean, max(begin - 1, 0), end))
        if not any(
            (req := _checked_requirement(token)) is not None
            and _unavailable(token, req, version, target, target_n)
            for token in tokens
        ):
            continue
        for m in _INSTRUCTION.finditer(clean, max(begin - 1, 0), end):
            token = m.group(1)
            req = _checked_requirement(token)
            if req is None:
                continue
            message = _unavailable(token, req, version, target, target_n)
            if message:
                line = bisect.bisect_right(starts, m.start(1)) - 1
                col = m.start(1) - starts[line]
                problems.append(
                    Problem(
                        line,
                        col,
                        col + len(token),
                        Severity.ERROR,
                        message[1],
                        SOURCE,
                        code=message[0],
                        fix=header.fix_for(message[0], req),
                    )
                )
    return problems


class _HeaderEdits:
    """The one-token edits of the header that make an instruction available: the ``.version``
    number or the ``.target`` architecture, raised to what the message names."""

    def __init__(self, module: PtxModule, clean: str, starts: list[int]) -> None:
        self.module, self.clean, self.starts = module, clean, starts

    def fix_for(self, code: str, req: isa.Requirement) -> Fix | None:
        if code == "needs-newer-ptx-isa":
            span = self.module.version_span
            if span is None or span.start.line != span.end.line:
                return None
            old = self.clean[self._offset(span.start) : self._offset(span.end)]
            new = _v(req.isa)
            return Fix(f"Raise .version to {new}", span.start.line, span.start.col, old, new)
        if code == "needs-arch-specific-target" and req.arch_specific:
            return self._target(req.arch_specific[0])
        if code == "needs-newer-target" and req.target:
            return self._target(req.target)
        return None

    def _target(self, wanted: str) -> Fix | None:
        span, arch = self.module.target_span, self.module.arch
        if span is None or arch is None:
            return None
        at = self.clean.find(arch, self._offset(span.start))
        if at < 0:
            return None
        line = bisect.bisect_right(self.starts, at) - 1
        return Fix(f"Change .target {arch} to {wanted}", line, at - self.starts[line], arch, wanted)

    def _offset(self, pos) -> int:
        return _offset_of(self.starts, pos.line, pos.col)


def _v(v: isa.Version) -> str:
    return f"{v[0]}.{v[1]}"


@functools.lru_cache(maxsize=4096)
def _unavailable(
    token: str,
    req: isa.Requirement,
    version: isa.Version | None,
    target: str | None,
    target_n: int | None,
) -> tuple[str, str] | None:
    """(code, message) when the declared header cannot have ``token``; None when it can or we
    cannot be sure."""
    name = req.because
    if version is not None and version < req.isa:
        return (
            "needs-newer-ptx-isa",
            f"'{name}' needs PTX ISA {_v(req.isa)} (.version {_v(req.isa)} or later); "
            f"this file declares .version {_v(version)}",
        )
    if target is None or target_n is None:
        return None
    if req.arch_specific:
        # Architecture-specific features exist only on the suffixed targets listed; a plain
        # target (no a/f suffix) never has them.
        if target[-1] not in "af" or target_n < min(
            isa.sm_number(t) or 0 for t in req.arch_specific
        ):
            wanted = req.arch_specific[0]
            return (
                "needs-arch-specific-target",
                f"'{name}' is architecture-specific (only on {', '.join(req.arch_specific)}); "
                f".target {target} does not have it: use .target {wanted}",
            )
        return None
    need = isa.sm_number(req.target)
    if need is not None and target_n < need:
        return (
            "needs-newer-target",
            f"'{name}' needs .target {req.target} or later; this file declares .target {target}",
        )
    return None
