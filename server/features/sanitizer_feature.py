""" "Run with sanitizer" in the editor: a code lens beside "Run GPU test" on every ``.entry`` of a
PTX buffer and every ``__global__`` kernel of a CUDA one, the ``ptxls.runSanitizer`` command (uri,
kernel[, tools]) with cancellable ``$/progress``, each compute-sanitizer report as a
``compute-sanitizer`` diagnostic on the line it points at (a race: on both lines), and the result
in a hover on the kernel's line.

The work is ``ptxls.gputest.sanitize.sanitize_ptx`` (PTX) or ``gputest.sanitize_cuda.sanitize_cuda``
(CUDA: nvcc -lineinfo's PTX, whose line info names the .cu lines): the GPU test in a fresh worker
under compute-sanitizer, one process group per tool, killed whole on cancel or timeout. Without
tools in the command, ``ptxls.sanitizer.tools`` says which; ``ptxls.sanitizer.path`` which
compute-sanitizer. Results are kept per (uri, kernel) with the document version; an edit clears
the diagnostics (their lines may have moved) and the lens and hover say the result is stale.
"""

from __future__ import annotations

from lsprotocol import types

from ptxls.diagnostics.model import Problem, Severity
from ptxls.gputest.report import short_tokens
from ptxls.gputest.sanitize import SanitizeOptions, SanitizeResult, format_result, parse_tools

from .. import convert
from ..app import PtxlsServer, short_name
from ..progress import CommandProgress, Stopped, run_tracked
from ..uris import to_path
from .kernel_runs import Cached, KernelRuns, is_stale, kernel_language, kernels, lenses, refused

COMMAND = "ptxls.runSanitizer"
PRODUCER = "compute-sanitizer"
_SEVERITY = {"error": Severity.ERROR, "warning": Severity.WARNING, "info": Severity.INFO}


class SanitizerState(KernelRuns[SanitizeResult]):
    """The last result per (uri, kernel), with the version it ran on; the runs in flight."""


def _lens_title(ls: PtxlsServer, uri: str, name: str) -> str:
    state = ls.state(SanitizerState)
    if (uri, name) in state.running:
        return "Sanitizer running…"
    cached = state.results.get((uri, name))
    if cached is None:
        return "Run with sanitizer"
    r = cached.value
    n = len([f for f in r.findings if f.severity != "info"])
    word = {"clean": "clean", "findings": f"{n} problem{'s' if n != 1 else ''}",
            "no-gpu": "no GPU", "no-sanitizer": "no compute-sanitizer"}.get(r.status, r.status)  # fmt: skip
    return f"Run with sanitizer (last: {word}{', stale' if is_stale(ls, uri, cached) else ''})"


def code_lenses(ls: PtxlsServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    uri = params.text_document.uri
    return lenses(ls, uri, COMMAND, lambda name: _lens_title(ls, uri, name))


def hover(ls: PtxlsServer, params: types.HoverParams) -> types.Hover | None:
    """The last result for the kernel declared on this line; never starts GPU work."""
    state = ls.state(SanitizerState)
    uri, line = params.text_document.uri, params.position.line
    if not state.has_results(uri):
        return None
    for name, kline, col in kernels(ls, uri):
        cached = state.results.get((uri, name)) if kline == line else None
        if cached is None:
            continue
        text = short_tokens(format_result(cached.value))
        if is_stale(ls, uri, cached):
            text = "_stale: the buffer changed since this run; run it again._\n\n" + text
        return convert.markdown_hover(text, convert.line_range(line, col, col + len(name)))
    return None


def _span(lines: list[str], line: int) -> tuple[int, int]:
    """The instruction on a 0-based line: from its first character to the comment or the end."""
    text = lines[line] if 0 <= line < len(lines) else ""
    code = text.split("//", 1)[0].rstrip()
    start = len(code) - len(code.lstrip())
    return start, max(len(code), start + 1)


def problems(result: SanitizeResult, source: str) -> list[Problem]:
    """Each finding on its line of ``source`` (the PTX, or the .cu whose nvcc PTX ran); a race
    also on its other line, naming the first. A finding on lines of another text (nvcc's PTX
    without line info) is in the hover only."""
    lines = source.splitlines()
    out = []
    for f in result.findings:
        if f.file:
            continue
        sev = _SEVERITY.get(f.severity, Severity.WARNING)
        spots = [(f.line, f.text)]
        if f.other_line is not None and f.other_line != f.line:
            spots.append((f.other_line, f"{f.text} (the other side: line {f.line})"))
        for line, message in spots:
            if line is None:
                continue  # no line info (the PTX's own .loc names another file): hover only
            start, end = _span(lines, line - 1)
            out.append(Problem(line - 1, start, end, sev, short_tokens(message), PRODUCER,
                               code=f.kind))  # fmt: skip
    return out


def _publish(ls: PtxlsServer, uri: str) -> None:
    doc = ls.open_document(uri)
    found: list[Problem] = []
    for (u, _), cached in ls.state(SanitizerState).results.items():
        if u == uri and doc is not None and not is_stale(ls, uri, cached):
            found += problems(cached.value, doc.source)
    ls.store.set(uri, PRODUCER, convert.to_diagnostics(found))
    ls.publish(uri, doc.version if doc else None)
    ls.refresh_code_lenses()


def on_change(ls: PtxlsServer, params) -> None:
    """The lines may have moved: the diagnostics go (the next publish carries the empty set);
    the results stay for the hover, marked stale."""
    uri = params.text_document.uri
    if ls.state(SanitizerState).has_results(uri):
        ls.store.set(uri, PRODUCER, [])


def on_close(ls: PtxlsServer, params) -> None:
    ls.state(SanitizerState).forget(params.text_document.uri)


def _tools(arg, configured: list[str]) -> tuple[str, ...]:
    """The optional third argument: a list of tool names or one comma-separated string; without
    it, the ``ptxls.sanitizer.tools`` setting (``configured``)."""
    if arg is None:
        return parse_tools(configured)
    if isinstance(arg, str):
        return parse_tools([arg])
    if isinstance(arg, list) and all(isinstance(t, str) for t in arg):
        return parse_tools(arg)
    raise ValueError(f"tools must be a list of names, got {short_name(repr(arg))}")


async def run_sanitizer(ls: PtxlsServer, *args) -> dict:
    """Arguments: uri, kernel[, tools]. Returns {ok, status, summary, tools, findings}; never
    raises."""
    if len(args) < 2 or not all(isinstance(a, str) for a in args[:2]):
        got = short_name(repr(list(args)))
        return refused("bad-arguments", f"{COMMAND} takes (uri, kernel[, tools]), got {got}")
    uri, kernel = args[0], args[1]
    s = ls.settings
    try:
        tools = _tools(args[2] if len(args) > 2 else None, s.sanitizer_tools)
    except ValueError as e:
        return refused("bad-arguments", short_tokens(str(e)))
    lang = kernel_language(ls, uri)
    if lang is None:
        return refused("not-open", f"{short_name(uri)} is not an open .ptx or .cu document")
    doc, state, key = ls.open_document(uri), ls.state(SanitizerState), (uri, kernel)
    if key in state.running:
        state.running.pop(key).cancel()  # a second click restarts with the current text
    progress = CommandProgress(ls, f"ptxls: compute-sanitizer on {short_name(kernel)}")
    await progress.begin()
    opts = SanitizeOptions(tools=tools, sanitizer=s.sanitizer_path, ptxas=s.ptxas_path,
                           nvcc=s.nvcc_path, arch=s.arch, trusted=ls.workspace_trusted,
                           on_progress=progress.report)  # fmt: skip
    version = doc.version
    work = _sanitize(lang, doc.source, kernel, to_path(uri), opts)
    try:
        result = await run_tracked(ls, progress, work, state.running, key, run_sanitizer)
    except Stopped as stop:
        return refused(stop.status, short_tokens(stop.summary))
    state.results[key] = Cached(version, result)
    progress.end(short_tokens(result.summary)[:200])
    # the summary (why it cannot run here) is shown like every command's result (app.command)
    _publish(ls, uri)
    return {"ok": result.clean, "status": result.status, "summary": short_tokens(result.summary),
            "tools": list(tools), "findings": [f.to_dict() for f in result.findings]}  # fmt: skip


async def _sanitize(lang: str, text: str, kernel: str, path, opts: SanitizeOptions):
    if lang == "cuda":
        from ptxls.gputest.sanitize_cuda import sanitize_cuda

        return await sanitize_cuda(text, kernel, cuda_path=path, options=opts)
    from ptxls.gputest.sanitize import sanitize_ptx

    return await sanitize_ptx(text, kernel, ptx_path=path, options=opts)


def register(server: PtxlsServer) -> None:
    server.code_lens_providers.append(code_lenses)
    server.hover_providers.append(hover)
    server.did_change_hooks.append(on_change)
    server.did_close_hooks.append(on_close)
    server.command(COMMAND)(run_sanitizer)
