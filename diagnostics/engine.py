"""The diagnostics engine: instant lints plus ptxas (nvcc for CUDA), merged, placed and capped.

One engine serves the language server, ``ptxls check`` and the lowering loop, so the three
always agree on what is wrong with a piece of PTX. ``check_document`` is the entry point for a
whole document: it refuses binary content before any tool runs and delivers the instant lints
before ptxas's answer when ptxas is slow.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncGenerator, Awaitable
from dataclasses import dataclass, field

from ptxls.frontend.ptx import PtxModule, parse_ptx, scan_header
from ptxls.toolchain.arch import choose_arch
from ptxls.toolchain.discovery import Tool, ToolNotFound, find_ptxas
from ptxls.toolchain.ptxas import run_ptxas

from .cascade import fold_cascade
from .cuda_check import check_cuda
from .isa_lints import lint_availability
from .lints import lint_ptx
from .model import CheckResult, Problem, Severity
from .ptxas_output import parse_ptxas_output, place_messages
from .resources import block_size_hints_of, parse_ptxas_verbose
from .text_guard import binary_problem

MAX_PROBLEMS = 500


@dataclass
class PtxCheckOptions:
    arch: str | None = None  # the setting; None = the file's .target, the local GPU, sm_90
    ptxas_path: str | None = None
    timeout: float = 60.0
    max_problems: int = MAX_PROBLEMS
    file_name: str = "input.ptx"
    # ptxas -v: registers, spills, shared memory per entry (CheckResult.usage); costs ptxas
    # nothing measurable, and the editor shows it on the .entry line
    verbose: bool = False
    # keep what ptxas assembled (CheckResult.cubin): the lowering loop's GPU test loads it, so a
    # candidate is assembled once
    want_cubin: bool = False


class PtxasUnavailable(Exception):
    """ptxas cannot be found or started; the message says how to fix it."""


def split_lines(text: str) -> list[str]:
    """Lines as an editor counts them: \\n, \\r\\n and lone \\r all end a line."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def resolve_ptxas(version: tuple[int, int] | None, opts: PtxCheckOptions) -> Tool:
    try:
        return find_ptxas(opts.ptxas_path, needs_isa=version)
    except ToolNotFound as e:
        raise PtxasUnavailable(str(e)) from None


# Lints whose cause ptxas reports in its own words, at a position of its own: one message per
# cause, so the lint goes when ptxas said it.
_SAME_CAUSE_AS_PTXAS = {"missing-version": re.compile(r"Missing \.version directive")}


def merge(lints: list[Problem], tool_problems: list[Problem], cap: int) -> list[Problem]:
    """ptxas's word wins: a lint on a line where ptxas reported the same token is dropped.
    Exact duplicates (ptxas repeats itself across passes) are merged; the list is capped."""
    seen: set[tuple] = set()
    merged: list[Problem] = []
    tool_errors = [p for p in tool_problems if p.severity is Severity.ERROR]

    def said_by_ptxas(q: Problem) -> bool:
        same_cause = _SAME_CAUSE_AS_PTXAS.get(q.code or "")
        if same_cause and any(same_cause.search(t.message) for t in tool_errors):
            return True
        for t in tool_errors:
            if t.line != q.line:
                continue
            if (t.col, t.end_col) == (q.col, q.end_col):
                return True
            # ptxas marks 'redux' where the availability lint marks 'redux.sync.add.u32'
            if (q.code or "").startswith("needs-") and t.col < q.end_col and q.col < t.end_col:
                return True
        return False

    for p in tool_problems + [q for q in lints if not said_by_ptxas(q)]:
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


def _tool_problems(output: str, text: str, cap: int) -> list[Problem]:
    """ptxas's messages placed on the text, at most ``cap`` of them (placing is the slow part;
    the count of the rest is said in one more problem)."""
    messages = parse_ptxas_output(output)
    problems = place_messages(messages[:cap], split_lines(text))
    if len(messages) > cap:
        problems.append(Problem(problems[-1].line, 0, 0, Severity.INFO,
                                f"{len(messages) - cap} more ptxas messages not shown (limit {cap})",
                                "ptxls"))  # fmt: skip
    return problems


def instant_check(text: str) -> tuple[PtxModule, list[Problem]]:
    """The in-process part alone: fast enough to publish before ptxas answers."""
    module, _ = parse_ptx(text)
    return module, lint_ptx(text, module) + lint_availability(text, module)


# Below this size the in-process checks take well under a millisecond: run them in the loop
# rather than pay for a thread hop.
INLINE_LINT_BYTES = 50_000


async def check_ptx(
    text: str,
    opts: PtxCheckOptions | None = None,
    *,
    lints: Awaitable[tuple[PtxModule, list[Problem]]] | None = None,
) -> CheckResult:
    """Lints + ptxas, run side by side (ptxas starts first; the parse runs while it works).

    ``lints`` lets a caller that already started the in-process checks share them. Raises
    PtxasUnavailable when ptxas is missing or cannot start; a crash or timeout of ptxas is
    reported as a problem, not raised."""
    opts = opts or PtxCheckOptions()
    version, target = scan_header(text)
    # The first call probes ptxas (--version, its PTX ISA) and may probe the GPU for the arch:
    # a worker thread, never the event loop (a tool that hangs must not freeze the server).
    tool, arch = await asyncio.to_thread(
        lambda: (resolve_ptxas(version, opts), choose_arch(opts.arch, target))
    )
    result = CheckResult(tool=tool.describe(), arch=arch)
    ptxas_job = asyncio.ensure_future(
        run_ptxas(
            text,
            tool=tool,
            arch=arch,
            timeout=opts.timeout,
            file_name=opts.file_name,
            extra_args=("-v",) if opts.verbose else (),
            want_cubin=opts.want_cubin,
        )
    )
    try:
        module, lint_problems = await (lints or _in_process(text))
        run = await ptxas_job
    except OSError as e:
        raise PtxasUnavailable(f"could not start {tool.path}: {e}") from None
    finally:
        ptxas_job.cancel()  # no-op when done; kills ptxas when we are cancelled or failed
    output = run.stderr + "\n" + run.stdout
    if len(output) > INLINE_LINT_BYTES:  # thousands of messages: parse and place off the loop
        tool_problems = await asyncio.to_thread(_tool_problems, output, text, opts.max_problems)
    else:
        tool_problems = _tool_problems(output, text, opts.max_problems)
    failure = _run_failure(run, tool, opts.timeout, said_why=bool(tool_problems))
    if failure is not None:
        tool_problems.append(failure)
    result.problems = merge(lint_problems, tool_problems, opts.max_problems)
    result.cubin = run.cubin
    if opts.verbose and run.returncode == 0:
        result.usage = parse_ptxas_verbose(run.stderr + "\n" + run.stdout, arch)
        hints = block_size_hints_of(module)
        for u in result.usage:
            u.block_size_hint = hints.get(u.name)
    return result


async def _in_process(text: str) -> tuple[PtxModule, list[Problem]]:
    if len(text) < INLINE_LINT_BYTES:
        return instant_check(text)
    return await asyncio.to_thread(instant_check, text)


def _run_failure(run, tool: Tool, timeout: float, *, said_why: bool) -> Problem | None:
    """The one problem a ptxas run that did not end normally gets: stopped at the timeout,
    crashed, or failed without a message of its own (``said_why``: it printed some). The
    timeout's code "tool-timeout" makes the CLI exit 2 ("cannot run")."""
    if run.timed_out:
        return Problem(0, 0, 0, Severity.ERROR,
                       f"ptxas did not finish within {timeout:g} s and was stopped", "ptxas",
                       code="tool-timeout")  # fmt: skip
    if run.crashed:
        return Problem(0, 0, 0, Severity.ERROR,
                       f"ptxas crashed (signal {-run.returncode}); {tool.describe()}", "ptxas")  # fmt: skip
    if run.returncode != 0 and not said_why:
        detail = (run.stderr or run.stdout).strip().splitlines()
        last = detail[-1] if detail else "no message"
        return Problem(0, 0, 0, Severity.ERROR, f"ptxas failed (exit {run.returncode}): {last}",
                       "ptxas")  # fmt: skip
    return None


# -- a whole document: the binary guard, lint-first delivery, PTX or CUDA -----------------------


@dataclass
class CudaCheckOptions:
    arch: str | None = None  # the setting; None = the local GPU, else sm_90
    nvcc_path: str | None = None
    file_path: str | None = None  # where the file lives, for its #include "..."
    timeout: float = 60.0


@dataclass
class DocumentCheckOptions:
    language: str = "ptx"  # "ptx" or "cuda"
    ptx: PtxCheckOptions = field(default_factory=PtxCheckOptions)
    cuda: CudaCheckOptions = field(default_factory=CudaCheckOptions)
    # False: the in-process lints only (the editor's large file between saves)
    run_tool: bool = True
    # Deliver the lints on their own when ptxas has not answered after this many seconds; 0:
    # as soon as the lints are known, unless ptxas has answered by then (then one delivery,
    # lints + ptxas); None: never (one delivery, when ptxas answers).
    lints_alone_after_s: float | None = None
    guard_source: str = "ptxls"  # the source named on the binary-content problem


@dataclass
class CheckStep:
    """One delivery of check_document: the lints ahead of ptxas (``final`` False), or the
    last word (the binary guard's problem, the lints alone, or lints + the tool's)."""

    result: CheckResult
    final: bool
    binary: bool = False  # the guard refused the text: nothing else ran


def _lints_only(problems: list[Problem]) -> CheckResult:
    return CheckResult(problems=problems, ran_tool=False)


def _start_lints(text: str) -> asyncio.Future:
    if len(text) < INLINE_LINT_BYTES:
        done = asyncio.get_running_loop().create_future()
        done.set_result(instant_check(text))
        return done
    return asyncio.ensure_future(asyncio.to_thread(instant_check, text))


async def check_document(
    text: str,
    opts: DocumentCheckOptions | None = None,
    *,
    lints: asyncio.Future[tuple[PtxModule, list[Problem]]] | None = None,
) -> AsyncGenerator[CheckStep, None]:
    """The checks of one document, as they become known; the last step is ``final``.

    Binary or mis-decoded content gets one problem and no tool run. For PTX, when ptxas is
    missing the lints are delivered first and PtxasUnavailable is raised after them.
    Cancelling the consumer kills a running ptxas. ``lints``: ``instant_check(text)`` already
    started by the caller, for this very text (the editor starts it as the edit arrives)."""
    opts = opts or DocumentCheckOptions()
    bad = binary_problem(text, opts.guard_source)
    if bad is not None:
        yield CheckStep(_lints_only([bad]), final=True, binary=True)
        return
    if opts.language == "cuda":
        yield CheckStep(await _check_cuda(text, opts.cuda), final=True)
        return
    lint_job = lints if lints is not None else _start_lints(text)
    if not opts.run_tool:
        _, lint_problems = await lint_job
        yield CheckStep(_lints_only(lint_problems), final=True)
        return
    ptxas_job = asyncio.ensure_future(check_ptx(text, opts.ptx, lints=asyncio.shield(lint_job)))
    try:
        wait = opts.lints_alone_after_s
        if wait is not None:
            if wait > 0:
                await asyncio.wait({ptxas_job}, timeout=wait)
            if not ptxas_job.done():  # what is certain now, ptxas's word when it comes
                _, lint_problems = await lint_job
                if not ptxas_job.done():
                    yield CheckStep(_lints_only(lint_problems), final=False)
        result = await ptxas_job
        _, lint_problems = await lint_job
        # for people: one squiggle per cause (the lowering loop folds its own way, for a model)
        result.problems = fold_cascade(result.problems, lint_problems)
    except PtxasUnavailable:
        _, lint_problems = await lint_job
        yield CheckStep(_lints_only(lint_problems), final=False)
        raise
    finally:
        ptxas_job.cancel()  # no-op when done; kills ptxas when the consumer is cancelled
    yield CheckStep(result, final=True)


async def _check_cuda(text: str, opts: CudaCheckOptions) -> CheckResult:
    # choose_arch may probe the GPU (a child process, the first time): a worker thread, never
    # the event loop (as check_ptx does)
    arch = await asyncio.to_thread(choose_arch, opts.arch, None)
    return await check_cuda(
        text,
        file_path=opts.file_path,
        arch=arch,
        nvcc_path=opts.nvcc_path,
        timeout=opts.timeout,
    )


async def check_text(text: str, opts: DocumentCheckOptions | None = None) -> CheckResult:
    """check_document's last word alone (``ptxls check``). Raises PtxasUnavailable."""
    last = CheckResult()
    async for step in check_document(text, opts):
        last = step.result
    return last
