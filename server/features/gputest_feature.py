""" "Run GPU test" in the editor: a code lens on every ``.entry`` (PTX) and ``__global__`` (CUDA),
the ``ptxls.runGpuTest`` command (uri, kernel) with cancellable ``$/progress``, results cached
per (uri, kernel) with the document version they were computed for, a hover on the kernel's line
that reads only that cache (stale after an edit), ``gpu-test`` error diagnostics on failure, and
the CPU emulator's findings on their PTX lines (source "ptxls emulator"; a warning as a Warning,
for a passed test too).

The GPU work itself is ``ptxls.gputest.api.run_gpu_test``: a killable worker process, so a kernel
that faults or hangs costs a worker, never this server.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from lsprotocol import types

from ptxls.diagnostics.model import Problem, Severity
from ptxls.gputest.debug_launch import hover_markdown, launch_config, record_failed_test
from ptxls.gputest.report import NO_GPU, TestReport, short_tokens
from ptxls.gputest.report import headline as report_headline

from .. import convert
from ..app import PtxlsServer, short_name
from ..progress import CommandProgress, Stopped, run_tracked
from ..uris import to_path
from .kernel_runs import Cached, KernelRuns, is_stale, kernel_language, kernels, lenses, refused

log = logging.getLogger("ptxls")

COMMAND = "ptxls.runGpuTest"
PRODUCER = "gpu-test"


class GpuTestState(KernelRuns[TestReport]):
    """The last report per (uri, kernel), with the version it ran on; the runs in flight."""


# -- code lens ---------------------------------------------------------------------------------


def _lens_title(ls: PtxlsServer, uri: str, name: str) -> str:
    state = ls.state(GpuTestState)
    cached = state.results.get((uri, name))
    if (uri, name) in state.running:
        return "GPU test running…"
    if cached is None:
        return "Run GPU test"
    word = {"pass": "passed", NO_GPU: "no GPU"}.get(cached.value.status, "FAILED")
    if cached.value.emulated:
        word += " on the CPU emulator"  # never "GPU-verified"
    stale = ", stale" if is_stale(ls, uri, cached) else ""
    return f"Run GPU test (last: {word}{stale})"


def code_lenses(ls: PtxlsServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    uri = params.text_document.uri
    return lenses(ls, uri, COMMAND, lambda name: _lens_title(ls, uri, name))


# -- hover -------------------------------------------------------------------------------------


def hover(ls: PtxlsServer, params: types.HoverParams) -> types.Hover | None:
    """The cached result for the kernel declared on this line; never starts GPU work."""
    state = ls.state(GpuTestState)
    uri, line = params.text_document.uri, params.position.line
    if not state.has_results(uri):
        return None  # nothing tested in this file: no need to scan it for kernels (megabytes)
    for name, kline, col in kernels(ls, uri):
        if kline != line:
            continue
        cached = state.results.get((uri, name))
        if cached is None:
            return None  # other providers (opcode docs, …) may answer
        from ptxls.gputest import api  # numpy and the harness: on first use

        text = short_tokens(api.format_table(cached.value))
        path = to_path(uri)
        config = launch_config(cached.value, path, name) if path else None
        if config is not None:  # "Debug first wrong element": a command link in VS Code
            text += "\n\n" + hover_markdown(config, ls.client_debug_links)
        if is_stale(ls, uri, cached):
            doc = ls.open_document(uri)
            now = doc.version if doc else "closed"
            text = (
                f"_stale: this result is for version {cached.version} of the buffer; it is now "
                f"version {now}. Run the GPU test again._\n\n" + text
            )
        return convert.markdown_hover(text, convert.line_range(line, col, col + len(name)))
    return None


# -- diagnostics -------------------------------------------------------------------------------


EMULATOR = "ptxls emulator"  # the source of the emulator's findings: never "GPU"


def _problems(ls: PtxlsServer, uri: str) -> list[Problem]:
    """A failed test's problems where they point (an annotation), else on the kernel's name; and
    the emulator's findings on their PTX lines, for a passed test as for a failed one: an error
    (it failed its case) as an Error, a warning (emulator/errors.WARNING_KINDS: it changes no
    verdict) as a Warning."""
    where = {name: (line, col) for name, line, col in kernels(ls, uri)}
    out = []
    for (u, name), cached in ls.state(GpuTestState).results.items():
        r = cached.value
        if u != uri or r.status == NO_GPU or name not in where:
            continue
        stale = is_stale(ls, uri, cached)
        prefix = "[stale: the buffer changed since this test] " if stale else ""
        if not r.passed:
            out += [
                Problem(
                    sline, scol, ecol, Severity.ERROR, prefix + message, PRODUCER, code=r.status
                )  # fmt: skip
                for sline, scol, ecol, message in _failure_spots(ls, uri, r, *where[name], name)
            ]
        if r.findings and kernel_language(ls, uri) == "ptx":
            out += _emulator_problems(ls, uri, r.findings, prefix)
    return out


def _failure_spots(
    ls: PtxlsServer, uri: str, r: TestReport, line: int, col: int, name: str
) -> list[tuple[int, int, int, str]]:
    """Where a failed test says it failed: its annotation problems, else the kernel's name."""
    spots = [
        (p.line, p.col, p.end_col if p.end_col > p.col else p.col + 1, short_tokens(p.message))
        for p in r.problems
        if p.line >= 0 and (not p.file or p.file == to_path(uri))
    ]  # annotation problems point at the annotation itself
    if not spots:
        from ptxls.gputest import api  # numpy and the harness: on first use

        spots = [(line, col, col + len(name), api.failure_feedback(r))]
    return spots


def _emulator_problems(
    ls: PtxlsServer, uri: str, findings: list[dict], prefix: str
) -> list[Problem]:
    """The emulator's findings (gputest/report.py's dicts: kind, severity, line, text) on their
    PTX lines, the line's text without its indent; each (kind, line, severity) once."""
    doc = ls.open_document(uri)
    text = doc.source.splitlines() if doc else []
    out, seen = [], set()
    for f in findings:
        line = f.get("line")
        if not isinstance(line, int) or not 0 < line <= len(text):
            continue
        warning = f.get("severity", "error") == "warning"
        key = (f.get("kind"), line, warning)
        if key in seen:  # the same read in several cases: said once
            continue
        seen.add(key)
        src = text[line - 1]
        col = len(src) - len(src.lstrip())
        out.append(
            Problem(
                line - 1,
                col,
                max(col + 1, len(src.rstrip())),
                Severity.WARNING if warning else Severity.ERROR,
                prefix + short_tokens(str(f.get("text", ""))),
                EMULATOR,
                code=str(f.get("kind") or "finding"),
            )  # fmt: skip
        )
    return out


def _refresh(ls: PtxlsServer, uri: str) -> None:
    ls.store.set(uri, PRODUCER, convert.to_diagnostics(_problems(ls, uri)))
    doc = ls.open_document(uri)
    ls.publish(uri, doc.version if doc else None)
    ls.refresh_code_lenses()


def on_change(ls: PtxlsServer, params) -> None:
    """Results are now stale: keep them (hover says so) and move the diagnostics with their
    kernels; the next publish of the document carries them."""
    uri = params.text_document.uri
    if ls.state(GpuTestState).has_results(uri):
        ls.store.set(uri, PRODUCER, convert.to_diagnostics(_problems(ls, uri)))


def on_close(ls: PtxlsServer, params) -> None:
    ls.state(GpuTestState).forget(params.text_document.uri)


# -- the command -------------------------------------------------------------------------------


async def run_gpu_test(ls: PtxlsServer, *args) -> dict:
    """Arguments: uri, kernel. Returns {ok, status, summary} (also for no GPU: never raises)."""
    if len(args) < 2 or not all(isinstance(a, str) for a in args[:2]):
        got = short_name(repr(list(args)))
        return refused("bad-arguments", f"{COMMAND} takes (uri, kernel), got {got}")
    uri, kernel = args[0], args[1]
    doc = ls.open_document(uri)
    lang = kernel_language(ls, uri)
    if doc is None or lang is None:
        return refused("not-open", f"{short_name(uri)} is not an open .ptx/.cu document")
    state = ls.state(GpuTestState)
    key = (uri, kernel)
    if key in state.running:
        state.running.pop(key).cancel()  # a second click restarts with the current text
    version = doc.version
    progress = CommandProgress(ls, f"ptxls: GPU test of {short_name(kernel)}")
    await progress.begin()
    work = _test(ls, lang, doc.source, kernel, to_path(uri), progress)
    try:
        report = await run_tracked(ls, progress, work, state.running, key, run_gpu_test)
    except Stopped as stop:
        return refused(stop.status, short_tokens(stop.summary))
    state.results[key] = Cached(version, report)
    if path := to_path(uri):  # the debugger's default start (.ptxls/debug/, data only)
        await asyncio.to_thread(record_failed_test, report, path, kernel)
    return _finish(ls, uri, report, progress)


async def _test(ls: PtxlsServer, lang: str, text: str, kernel: str, path, progress) -> TestReport:
    from ptxls.gputest import api  # numpy and the harness: on first use

    s = ls.settings
    # trusted: the person trusts this workspace (the client said so at initialize), so a ref:
    # outside the restricted numpy language may run as Python; otherwise it is refused.
    kw: dict[str, Any] = dict(arch=s.arch, ptxas=s.ptxas_path, nvcc=s.nvcc_path, trusted=ls.workspace_trusted,
              device=s.test_device)  # fmt: skip
    if lang == "ptx":
        return await api.run_gpu_test(
            text, kernel, ptx_path=path, on_progress=progress.report, **kw
        )
    return await api.run_gpu_test_cuda(
        text, kernel, path=path or "", on_progress=progress.report, **kw
    )


def _finish(ls: PtxlsServer, uri: str, report: TestReport, progress: CommandProgress) -> dict:
    headline = short_tokens(report.summary.splitlines()[0] if report.summary else report.status)
    progress.end(f"{report.status}: {headline}"[:200])
    # the summary (no GPU: why, and what runs without one) is shown like every command's
    _refresh(ls, uri)
    # never an empty summary: a pass has none of its own, its headline says what happened
    said = report.summary or report_headline(report).split("\n")[0].replace("**", "")
    from ptxls.gputest import api  # numpy and the harness: on first use

    return {"ok": report.passed, "status": report.status, "summary": short_tokens(said),
            "table": short_tokens(api.format_table(report))}  # fmt: skip


def register(server: PtxlsServer) -> None:
    server.code_lens_providers.append(code_lenses)
    server.hover_providers.append(hover)
    server.did_change_hooks.append(on_change)
    server.did_close_hooks.append(on_close)
    server.command(COMMAND)(run_gpu_test)
