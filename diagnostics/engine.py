"""The diagnostics engine for PTX: instant lints plus ptxas, merged, placed and capped.

One engine serves the language server, ``ptxls check`` and the lowering loop, so the three
always agree on what is wrong with a piece of PTX.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from .arch import choose_arch
from .lints import lint_ptx
from .model import CheckResult, Problem, Severity
from .ptx_parse import PtxModule, parse_ptx
from .ptxas_output import parse_ptxas_output, place_messages
from .ptxas_run import run_ptxas
from .toolchain import Tool, ToolNotFound, find_ptxas

MAX_PROBLEMS = 500


@dataclass
class PtxCheckOptions:
    arch: str | None = None  # the setting; None = the file's .target, the local GPU, sm_90
    ptxas_path: str | None = None
    timeout: float = 60.0
    max_problems: int = MAX_PROBLEMS
    file_name: str = "input.ptx"


class PtxasUnavailable(Exception):
    """ptxas cannot be found or started; the message says how to fix it."""


def split_lines(text: str) -> list[str]:
    """Lines as an editor counts them: \\n, \\r\\n and lone \\r all end a line."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def resolve_ptxas(module: PtxModule, opts: PtxCheckOptions) -> Tool:
    try:
        return find_ptxas(opts.ptxas_path, needs_isa=module.version)
    except ToolNotFound as e:
        raise PtxasUnavailable(str(e)) from None


def merge(lints: list[Problem], tool_problems: list[Problem], cap: int) -> list[Problem]:
    """ptxas's word wins: a lint on a line where ptxas reported the same token is dropped.
    Exact duplicates (ptxas repeats itself across passes) are merged; the list is capped."""
    seen: set[tuple] = set()
    merged: list[Problem] = []
    tool_spans = {(p.line, p.col, p.end_col) for p in tool_problems if p.severity is Severity.ERROR}
    for p in tool_problems + [q for q in lints if (q.line, q.col, q.end_col) not in tool_spans]:
        key = (p.line, p.col, p.end_col, p.severity, p.message)
        if key in seen:
            continue
        seen.add(key)
        merged.append(p)
    merged.sort(key=lambda p: (p.line, p.col, p.source != "ptxas"))
    if len(merged) > cap:
        left_out = len(merged) - cap
        merged = merged[:cap]
        last = merged[-1]
        merged.append(
            Problem(
                last.line,
                0,
                0,
                Severity.INFO,
                f"{left_out} more problems not shown (limit {cap}); fix the ones above first",
                "ptxls",
            )
        )
    return merged


def instant_check(text: str) -> tuple[PtxModule, list[Problem]]:
    """The in-process part alone: fast enough to publish before ptxas answers."""
    module, _ = parse_ptx(text)
    return module, lint_ptx(text, module)


async def check_ptx(
    text: str, opts: PtxCheckOptions | None = None, *, module: PtxModule | None = None
) -> CheckResult:
    """Lints + ptxas. Raises PtxasUnavailable when ptxas is missing or cannot start; a
    crash or timeout of ptxas is reported as a problem, not raised."""
    opts = opts or PtxCheckOptions()
    if module is None:
        module, lints = await asyncio.to_thread(instant_check, text)
    else:
        lints = lint_ptx(text, module)
    tool = resolve_ptxas(module, opts)
    arch = choose_arch(opts.arch, module.arch)
    result = CheckResult(tool=tool.describe(), arch=arch)
    try:
        run = await run_ptxas(
            text, tool=tool, arch=arch, timeout=opts.timeout, file_name=opts.file_name
        )
    except OSError as e:
        raise PtxasUnavailable(f"could not start {tool.path}: {e}") from None
    lines = split_lines(text)
    tool_problems = place_messages(parse_ptxas_output(run.stderr + "\n" + run.stdout), lines)
    if run.timed_out:
        tool_problems.append(
            Problem(
                0,
                0,
                0,
                Severity.ERROR,
                f"ptxas did not finish within {opts.timeout:g} s and was stopped",
                "ptxas",
            )
        )
    elif run.crashed:
        tool_problems.append(
            Problem(
                0,
                0,
                0,
                Severity.ERROR,
                f"ptxas crashed (signal {-run.returncode}); {tool.describe()}",
                "ptxas",
            )
        )
    elif run.returncode != 0 and not tool_problems:
        detail = (run.stderr or run.stdout).strip().splitlines()
        tool_problems.append(
            Problem(
                0,
                0,
                0,
                Severity.ERROR,
                f"ptxas failed (exit {run.returncode}): {detail[-1] if detail else 'no message'}",
                "ptxas",
            )
        )
    result.problems = merge(lints, tool_problems, opts.max_problems)
    return result
