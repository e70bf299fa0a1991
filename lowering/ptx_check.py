"""The ptxas step of the loop: the diagnostics engine's check, turned into feedback a model can act on.

The loop and the editor's diagnostics share ``ptxls.diagnostics.engine.check_ptx``, so a
candidate that passes here shows no squiggles when opened. Feedback quotes each error's line
with two lines either side: "Arguments mismatch for instruction 'ld'" alone does not tell the
model which of forty loads is wrong.

One check is one ptxas run: it gives the diagnostics, the resource usage (``-v``) and, when a GPU
test will follow, the cubin that test loads. The candidate is parsed once, here, and the parse
is shared by the lints, the interface check and the GPU test (``CompileCheck.module``).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ptxls.diagnostics.model import Problem, Severity
from ptxls.frontend.c_types import c_type_bits
from ptxls.frontend.ptx import PtxModule
from ptxls.frontend.ptxas_report import entry_named

from .perf import Resources

# The diagnostics engine (lints, ISA tables, ptxas) is imported when a candidate is first
# checked, not when the loop starts: ``ptxls lower`` sends its first request without it
# (bench/lowering_startup.py).


def __getattr__(name: str):
    if name == "PtxasUnavailable":
        from ptxls.diagnostics.engine import PtxasUnavailable

        return PtxasUnavailable
    raise AttributeError(name)


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
    module: PtxModule | None = None  # the one parse of the candidate
    usage: list = field(default_factory=list)  # diagnostics.resources.EntryUsage, from ptxas -v
    cubin: bytes | None = None  # when asked for and ptxas accepted the PTX
    fixes: list = field(default_factory=list)  # the lints' certain fixes (ptxls check --fix's)

    def summary(self) -> str:
        if self.ok:
            return "ptxas: ok" + (f" ({len(self.warnings)} warnings)" if self.warnings else "")
        n = len(self.errors)
        return f"ptxas: {n} error{'s' if n != 1 else ''}"

    def resources(self, kernel: str | None = None) -> Resources:
        """``kernel``'s usage (the first entry's when None) as the perf feedback reads it."""
        return Resources.from_usage(entry_named(self.usage, kernel), self.tool)


def quote_line(lines: list[str], line: int, context: int = CONTEXT_LINES) -> str:
    """The 0-based ``line`` with ``context`` lines either side, numbered 1-based, marked ``>>``."""
    lo, hi = max(0, line - context), min(len(lines) - 1, line + context)
    width = len(str(hi + 1))
    out = []
    for i in range(lo, hi + 1):
        mark = ">>" if i == line else "  "
        out.append(f"{mark} {i + 1:>{width}} | {lines[i]}")
    return "\n".join(out)


# ptxas reports one mistake several times on the same line: an unknown register first makes
# "Unknown symbol '%f9'" and then "Arguments mismatch for instruction 'add'" (the operand has no
# type). The model should get one item per cause, the cause first (the ranking is the
# diagnostics' own: diagnostics/cascade.py).


@dataclass
class FeedbackItem:
    line: int  # 0-based
    cause: str
    also: list[str] = field(default_factory=list)  # what ptxas said as a consequence
    hints: list[str] = field(default_factory=list)  # the project's clearer words


def fold_problems(problems: list[Problem], hints: Sequence[Problem] = ()) -> list[FeedbackItem]:
    """One item per line and cause: the root cause first, what follows from it listed under it,
    and the lints' hints for the same line (the ``.reg`` range that would declare a register)."""
    from ptxls.diagnostics.cascade import rank

    by_line: dict[int, list[Problem]] = {}
    for p in problems:
        by_line.setdefault(p.line, []).append(p)
    items = []
    for line in sorted(by_line):
        msgs: list[str] = []
        for p in sorted(by_line[line], key=lambda q: (rank(q.message), q.col)):
            if p.message not in msgs:
                msgs.append(p.message)
        causes = [m for m in msgs if rank(m) < 2] or msgs[:1]
        rest = [m for m in msgs if m not in causes]
        for i, cause in enumerate(causes):
            item = FeedbackItem(line, cause, rest if i == 0 else [])
            items.append(item)
        line_hints = [h.message for h in hints if h.line == line and h.message not in msgs]
        if line_hints and items:
            items[-1].hints.extend(line_hints)
    return items


def _reg_fix(hint: str) -> str:
    """'register '%f9' is not declared ('.reg .f32 %f<4>' on line 20 declares %f0 to %f3)' →
    the declaration that would cover it."""
    m = re.search(
        r"register '(%[A-Za-z_]+)(\d+)'.*'\.reg (\.\w+) %[A-Za-z_]+<(\d+)>' on line (\d+)", hint
    )
    if not m:
        return ""
    prefix, idx, typ, _count, line = m.groups()
    return (
        f" To keep {prefix}{idx}, declare '.reg {typ} {prefix}<{int(idx) + 1}>' on line {line} "
        "(or use a register that is declared)."
    )


def format_problems(
    text: str,
    problems: list[Problem],
    tool_name: str = "ptxas",
    hints: Sequence[Problem] = (),
    extra: dict[int, str] | None = None,
) -> str:
    from ptxls.diagnostics.engine import split_lines

    lines = split_lines(text)
    items = fold_problems(problems, hints)
    shown = items[:MAX_ERRORS_IN_FEEDBACK]
    parts = []
    for it in shown:
        where = f"line {it.line + 1}" if lines else "the file"
        head = f"{tool_name} error at {where}: {it.cause}"
        if it.also:
            head += (
                "\n  (ptxas also says, as a consequence on the same line: "
                + "; ".join(it.also)
                + ")"
            )
        for h in it.hints:
            head += f"\n  hint: {h}.{_reg_fix(h)}"
        if extra and it.line in extra:
            head += "\n  " + extra[it.line]
        body = quote_line(lines, it.line) if lines else ""
        parts.append(head + ("\n" + body if body else ""))
    if len(items) > len(shown):
        parts.append(f"... and {len(items) - len(shown)} more errors; fix the ones above first.")
    return "\n\n".join(parts)


_HELP_TARGETS: dict[str, list[str]] = {}


def accepted_targets(ptxas_path: str | None = None) -> list[str]:
    """The sm_XX values this ptxas takes for -arch, from its own ``--help`` (cached)."""
    try:
        from ptxls.toolchain.discovery import find_ptxas

        tool = find_ptxas(ptxas_path)
    except Exception:  # no ptxas: no list
        return []
    if tool.path in _HELP_TARGETS:
        return _HELP_TARGETS[tool.path]
    import subprocess

    try:
        out = subprocess.run(
            [tool.path, "--help"], capture_output=True, text=True, timeout=20
        ).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    m = re.search(r"--gpu-name.*?Allowed values for this option:(.*?)(?:\n\s*\n|\n--)", out, re.S)
    found = re.findall(r"'(sm_\d+[af]?)'", m.group(1)) if m else []
    names = sorted(set(found), key=lambda t: (int(re.sub(r"\D", "", t)), t))
    _HELP_TARGETS[tool.path] = names
    return names


def target_feedback(problems: list[Problem], ptxas_path: str | None) -> str:
    """When ptxas rejects the target itself, the targets it accepts (the model cannot guess)."""
    bad = [
        p
        for p in problems
        if "gpu-name" in p.message
        or "Unsupported .target" in p.message
        or ".target" in p.message
        and "not" in p.message.lower()
    ]
    if not bad:
        return ""
    names = accepted_targets(ptxas_path)
    if not names:
        return ""
    return "This ptxas accepts these targets: " + ", ".join(names) + "."


async def compile_check(
    ptx: str,
    *,
    arch: str = "sm_90",
    ptxas_path: str | None = None,
    timeout: float = 60.0,
    want_cubin: bool = False,
) -> CompileCheck:
    """Lints + one ``ptxas -v`` run on ``ptx`` (keeping the cubin with ``want_cubin``). A missing
    ptxas is not a candidate's fault: it raises PtxasUnavailable, and the loop stops with that
    message instead of blaming the model."""
    from ptxls.diagnostics.engine import (
        INLINE_LINT_BYTES,
        PtxCheckOptions,
        check_ptx,
        instant_check,
    )

    # the one parse: started here so its result stays ours after the engine has used it
    if len(ptx) < INLINE_LINT_BYTES:
        parsed = asyncio.get_running_loop().create_future()
        parsed.set_result(instant_check(ptx))
    else:
        parsed = asyncio.ensure_future(asyncio.to_thread(instant_check, ptx))
    opts = PtxCheckOptions(arch=arch, ptxas_path=ptxas_path, timeout=timeout,
                           file_name="candidate.ptx", verbose=True, want_cubin=want_cubin)  # fmt: skip
    try:
        result = await check_ptx(ptx, opts, lints=parsed)
    finally:
        parsed.cancel()  # no-op when done
    module, lints = parsed.result()
    errors = [p for p in result.problems if p.severity is Severity.ERROR]
    warnings = [p for p in result.problems if p.severity is Severity.WARNING]
    check = CompileCheck(not errors, errors, warnings, result.tool, result.arch, module=module,
                         usage=result.usage, cubin=result.cubin if not errors else None,
                         fixes=[q.fix for q in lints if q.fix is not None])  # fmt: skip
    if errors:
        # the lints' words for lines where ptxas spoke (merge() keeps ptxas's): the hints
        hints = [
            q for q in lints if q.severity is Severity.ERROR and q.code == "undeclared-register"
        ]
        check.feedback = format_problems(ptx, errors, hints=hints)
        targets = await asyncio.to_thread(target_feedback, errors, ptxas_path)
        if targets:
            check.feedback += "\n\n" + targets
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
        return c_type_bits(self.c_type)


def _expected_args(params: list[ExpectedParam]):
    from ptxls.gputest.pairing import ExpectedArg

    out = []
    for p in params:
        bits = p.ptx_bits()
        out.append(ExpectedArg(p.name, p.is_pointer, bits // 8 if bits else None, p.c_type))
    return out


def interface_problems(
    module: PtxModule, kernel: str, params: list[ExpectedParam] | None
) -> list[str]:
    """What makes this PTX untestable as ``kernel(params...)``: no such entry, a different
    parameter count, or a parameter of the wrong width. Empty when it matches. The widths are
    judged by the GPU test's own rule (``gputest.pairing.abi_mismatches``), worded for the
    model."""
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
    from ptxls.gputest.pairing import abi_mismatches

    # a byte array (a struct passed by value) has no width to judge
    types = [p.type + ("[]" if p.array else "") for p in entry.params]
    problems = []
    for m in abi_mismatches(types, _expected_args(params)):
        if m.index is None or m.want is None:  # the counts differ (no slot to name)
            want = ", ".join(f"{p.c_type} {p.name}" for p in params)
            return [
                f"entry '{kernel}' has {len(entry.params)} parameters, the source has "
                f"{len(params)} ({want}); keep the same parameters in the same order"
            ]
        assert m.want.size is not None  # abi_mismatches judges known sizes only
        bits = 8 * m.want.size
        pointer = " (.u64 for a pointer)" if m.want.is_pointer else ""
        problems.append(
            f"parameter {m.index + 1} ('{m.want.described} {m.want.name}') must be a {bits}-bit "
            f".param{pointer}, not {m.got}"
        )
    return problems


def _param_base(ptx_name: str, kernel: str) -> str:
    """``vec_add_param_a`` → ``a``; ``a`` → ``a``; ``vec_add_param_0`` → ``0`` (no name)."""
    for prefix in (f"{kernel}_param_", "param_", "p_"):
        if ptx_name.startswith(prefix):
            return ptx_name[len(prefix) :]
    return ptx_name


def param_order_warning(module: PtxModule, kernel: str, params: list[ExpectedParam] | None) -> str:
    """A warning when the PTX names its parameters after the source's but in another order
    (``vec_add(b, a, c, n)``): the widths may all match, yet the test would pass ``a`` where the
    kernel reads ``b``. Judged by names only, so PTX with numbered params is not judged."""
    if not params:
        return ""
    entry = next((e for e in module.entries if e.name == kernel), None)
    if entry is None or len(entry.params) != len(params):
        return ""
    got = [_param_base(p.name, kernel) for p in entry.params]
    want = [p.name for p in params]
    if sorted(got) != sorted(want) or got == want:
        return ""
    return (
        f"parameter order differs from the source: the PTX declares ({', '.join(got)}) but the "
        f"source is ({', '.join(want)}); the test passes arguments in the source's order"
    )


__all__ = [
    "CompileCheck",
    "ExpectedParam",
    "compile_check",
    "format_problems",
    "interface_problems",
    "param_order_warning",
    "fold_problems",
    "quote_line",
]
