"""The ptxas step of the loop: the diagnostics engine's check, turned into feedback a model can act on.

The loop and the editor's diagnostics share ``ptxls.diagnostics.engine.check_ptx``, so a
candidate that passes here shows no squiggles when opened. Feedback quotes each error's line
with two lines either side: "Arguments mismatch for instruction 'ld'" alone does not tell the
model which of forty loads is wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ptxls.diagnostics.engine import PtxasUnavailable, PtxCheckOptions, check_ptx, split_lines
from ptxls.diagnostics.model import Problem, Severity
from ptxls.diagnostics.ptx_parse import parse_ptx

MAX_ERRORS_IN_FEEDBACK = 12
CONTEXT_LINES = 2


@dataclass
class CompileCheck:
    ok: bool
    errors: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    tool: str = ""
    arch: str = ""
    feedback: str = ""  # for the model; empty when ok

    def summary(self) -> str:
        if self.ok:
            return "ptxas: ok" + (f" ({len(self.warnings)} warnings)" if self.warnings else "")
        n = len(self.errors)
        return f"ptxas: {n} error{'s' if n != 1 else ''}"


def quote_line(lines: list[str], line: int, context: int = CONTEXT_LINES) -> str:
    """The 0-based ``line`` with ``context`` lines either side, numbered 1-based, marked ``>>``."""
    lo, hi = max(0, line - context), min(len(lines) - 1, line + context)
    width = len(str(hi + 1))
    out = []
    for i in range(lo, hi + 1):
        mark = ">>" if i == line else "  "
        out.append(f"{mark} {i + 1:>{width}} | {lines[i]}")
    return "\n".join(out)


def format_problems(text: str, problems: list[Problem], tool_name: str = "ptxas") -> str:
    lines = split_lines(text)
    shown = problems[:MAX_ERRORS_IN_FEEDBACK]
    parts = []
    for p in shown:
        where = f"line {p.line + 1}" if lines else "the file"
        parts.append(f"{tool_name} error at {where}: {p.message}\n{quote_line(lines, p.line)}")
    if len(problems) > len(shown):
        parts.append(f"... and {len(problems) - len(shown)} more errors; fix the ones above first.")
    return "\n\n".join(parts)


async def compile_check(
    ptx: str, *, arch: str = "sm_90", ptxas_path: str | None = None, timeout: float = 60.0
) -> CompileCheck:
    """Lints + ptxas on ``ptx``. A missing ptxas is not a candidate's fault: it raises
    PtxasUnavailable, and the loop stops with that message instead of blaming the model."""
    result = await check_ptx(
        ptx,
        PtxCheckOptions(
            arch=arch, ptxas_path=ptxas_path, timeout=timeout, file_name="candidate.ptx"
        ),
    )
    errors = [p for p in result.problems if p.severity is Severity.ERROR]
    warnings = [p for p in result.problems if p.severity is Severity.WARNING]
    check = CompileCheck(not errors, errors, warnings, result.tool, result.arch)
    if errors:
        check.feedback = format_problems(ptx, errors)
    return check


# ---- the entry's interface: the GPU test calls it like the source kernel, so it must match


@dataclass(frozen=True)
class ExpectedParam:
    name: str
    c_type: str  # "const float*", "int"

    @property
    def is_pointer(self) -> bool:
        return "*" in self.c_type

    def ptx_bits(self) -> int | None:
        """Width in bits the PTX .param must have; None when unknown (structs, templates)."""
        if self.is_pointer:
            return 64
        t = re.sub(r"\b(const|volatile|unsigned|signed)\b", " ", self.c_type).split()
        base = t[-1] if t else ""
        return {
            "int": 32,
            "float": 32,
            "uint32_t": 32,
            "int32_t": 32,
            "double": 64,
            "long": 64,
            "int64_t": 64,
            "uint64_t": 64,
            "size_t": 64,
            "short": 16,
            "half": 16,
            "__half": 16,
            "char": 8,
            "bool": 8,
            "int8_t": 8,
            "uint8_t": 8,
        }.get(base)


_TYPE_BITS = re.compile(r"\.[busf](\d+)$")


def interface_problems(ptx: str, kernel: str, params: list[ExpectedParam] | None) -> list[str]:
    """What makes this PTX untestable as ``kernel(params...)``: no such entry, a different
    parameter count, or a parameter of the wrong width. Empty when it matches."""
    module, _ = parse_ptx(ptx)
    entries = module.entries
    if not entries:
        return ["the PTX declares no '.entry' (a '.visible .entry' kernel is required)"]
    entry = next((e for e in entries if e.name == kernel), None)
    if entry is None:
        names = ", ".join(e.name for e in entries)
        return [
            f"the entry must be named '{kernel}' (found: {names}); keep the source kernel's name, unmangled"
        ]
    if params is None:
        return []
    problems = []
    if len(entry.params) != len(params):
        want = ", ".join(f"{p.c_type} {p.name}" for p in params)
        problems.append(
            f"entry '{kernel}' has {len(entry.params)} parameters, the source has {len(params)} "
            f"({want}); keep the same parameters in the same order"
        )
        return problems
    for i, (got, want) in enumerate(zip(entry.params, params, strict=True)):
        bits = want.ptx_bits()
        m = _TYPE_BITS.search(got.type)
        if bits and m and int(m.group(1)) != bits and not got.array:
            problems.append(
                f"parameter {i + 1} ('{want.c_type} {want.name}') must be a {bits}-bit .param "
                f"({'.u64 for a pointer' if want.is_pointer else ''}), not {got.type}".replace(
                    " ()", ""
                )
            )
    return problems


__all__ = [
    "CompileCheck",
    "ExpectedParam",
    "PtxasUnavailable",
    "compile_check",
    "format_problems",
    "interface_problems",
    "quote_line",
]
