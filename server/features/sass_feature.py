""" "Show SASS for this kernel": what ptxas made of a kernel, in the editor.

- ``ptxls.showSass (uri, kernel)``: a code lens on every ``.entry`` of a .ptx document and a code
  action on the kernel under the cursor in .ptx, .cu and Triton .py documents. It assembles the buffer with
  ptxas -lineinfo, disassembles with nvdisasm (diagnostics.sass) and writes the listing — SASS
  under the PTX/CUDA line each instruction came from, registers and instruction counts — to
  ``.ptxls/show/<kernel>.sass.txt`` in the source's workspace folder (outside every folder: no
  file, the text only), opened like Show PTX's view (.txt: ``.sass`` is the Sass stylesheet's). Answers ``{ok, summary, uri?, sass, kernel}``.
- A hover on a PTX line lists the SASS instructions it became. It reads only the last SASS of
  that document, and only while the buffer holds the text it was made from (made by Show SASS,
  and again on each save once Show SASS has run; kept across closing and reopening the file):
  nothing is assembled on a keystroke or a hover.

The work is ptxas and nvdisasm as killable processes plus reading in worker threads; a new run
for the same document cancels (and kills) the previous one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from pathlib import Path

from lsprotocol import types

from ptxls.diagnostics.sass import SassOptions, SassReport, sass_for_cuda, sass_for_ptx
from ptxls.diagnostics.sass_view import entry_summary, hover_markdown, render_text
from ptxls.frontend.kernels import kernels_in
from ptxls.frontend.ptx import parse_ptx, ptx_target
from ptxls.frontend.triton import read_triton
from ptxls.lowering import safe_write
from ptxls.toolchain.arch import choose_arch
from ptxls.toolchain.discovery import ToolNotFound

from .. import convert
from ..app import PtxlsServer, short_name
from ..uris import to_path, workspace_root
from ..user_files import UnreadableFile, read_user_file
from .languages import CUDA, PTX, PYTHON, language_of

log = logging.getLogger("ptxls")

COMMAND = "ptxls.showSass"
MAX_REPORTS = 16  # documents whose last SASS is kept for the hover
MAX_NAME = 4096  # a C++ mangled kernel name is a few hundred characters
SUMMARY_ERRORS = 5  # ptxas lines quoted in a failed run's summary
_UNNAMED = {PTX: "kernel.ptx", CUDA: "kernel.cu", PYTHON: "kernel.py"}  # a URI with no file name


@dataclass
class CachedSass:
    version: int | None  # the document version the SASS was made from (None: the file on disk)
    report: SassReport  # report.ptx_text: the exact text it was made from


@dataclass
class SassState:
    # uri → last SASS (.ptx only), oldest first; kept when the document closes (reopening the
    # same text brings the hover back), at most MAX_REPORTS
    reports: dict[str, CachedSass] = field(default_factory=dict)
    running: dict[str, asyncio.Task] = field(default_factory=dict)  # uri → the run in flight


# -- the run -----------------------------------------------------------------------------------


def _options(ls: PtxlsServer, uri: str, text: str, language: str) -> SassOptions:
    path = to_path(uri)
    name = Path(path).name if path else uri.rsplit("/", 1)[-1]
    return SassOptions(
        arch=choose_arch(ls.settings.arch, ptx_target(text) if language == PTX else None),
        file_name=name or _UNNAMED[language],
        ptxas_path=ls.settings.ptxas_path,
        nvcc_path=ls.settings.nvcc_path,
        timeout=ls.settings.ptxas_timeout_seconds,
    )


async def _compute(
    ls: PtxlsServer, uri: str, text: str, language: str, kernel: str = ""
) -> SassReport:
    """One run per document at a time: a newer one cancels the older (its processes die)."""
    state = ls.state(SassState)
    if uri in state.running:
        state.running.pop(uri).cancel()
    # choose_arch may ask the local GPU (a process): not on the event loop
    options = await asyncio.to_thread(_options, ls, uri, text, language)
    if language == CUDA:
        work = sass_for_cuda(text, options, file_path=to_path(uri))
    elif language == PYTHON:
        from ptxls.lowering.triton_sass import sass_for_triton  # numpy: on first use

        work = sass_for_triton(text, kernel, options, file_path=to_path(uri))
    else:
        work = sass_for_ptx(text, options)
    task = asyncio.get_running_loop().create_task(work)
    state.running[uri] = task
    try:
        return await task
    finally:
        if state.running.get(uri) is task:
            del state.running[uri]


def _remember(ls: PtxlsServer, uri: str, version: int | None, report: SassReport) -> None:
    if report.ok and report.lines_map_to != "none":
        reports = ls.state(SassState).reports
        reports.pop(uri, None)
        reports[uri] = CachedSass(version, report)
        while len(reports) > MAX_REPORTS:
            del reports[next(iter(reports))]
        ls.refresh_code_lenses()


# -- the command -------------------------------------------------------------------------------


def _bad_arguments(uri: object, kernel: object) -> dict | None:
    if isinstance(uri, str) and isinstance(kernel, str) and len(kernel) <= MAX_NAME:
        return None
    what = f"{len(kernel)} characters" if isinstance(kernel, str) else type(kernel).__name__
    return {"ok": False, "summary": f"{COMMAND} takes (uri, kernel name): got a kernel of {what}"}


async def _document(ls: PtxlsServer, uri: str) -> tuple[str | None, int | None, str | None]:
    """(text, version, language) of the editor's buffer, else of the file on disk (off the
    loop, a regular file of a bounded size: server/user_files.py)."""
    doc = ls.open_document(uri)
    if doc is not None:
        return doc.source, doc.version, language_of(uri, doc.language_id)
    path = to_path(uri)
    if path:
        try:
            return await read_user_file(path), None, language_of(uri, None)
        except UnreadableFile:
            pass
    return None, None, None


async def show_sass(ls: PtxlsServer, uri: str = "", kernel: str = "", *_rest) -> dict:
    """Arguments: uri, kernel ("" for every function); a third ("open", from older lenses and
    code actions) is ignored: every command's view is opened the same way (app.command)."""
    bad = _bad_arguments(uri, kernel)
    if bad is not None:
        return bad
    text, version, language = await _document(ls, uri)
    if text is None:
        return {"ok": False, "summary": f"{COMMAND}: {short_name(uri)} is not open and not on disk"}
    if language not in (PTX, CUDA, PYTHON):
        return {"ok": False, "summary": "Show SASS works on .ptx, .cu and Triton .py files"}
    if language == PYTHON and not kernel:
        return {"ok": False, "summary": f"{COMMAND} needs the Triton kernel's name"}
    try:
        report = await _compute(ls, uri, text, language, kernel)
    except asyncio.CancelledError:
        return {"ok": False, "summary": "Show SASS was run again before this one finished"}
    except (ToolNotFound, OSError) as e:
        return {"ok": False, "summary": str(e)}
    if language == PTX:
        _remember(ls, uri, version, report)
    if not report.ok:
        said = "\n".join(report.errors[:SUMMARY_ERRORS])
        what = "compile" if language == PYTHON else "assemble"
        return {"ok": False, "summary": f"no SASS: the kernel does not {what}:\n{said}"}
    entry = report.find(kernel) if kernel else None
    if kernel and entry is None:
        names = ", ".join(e.name for e in report.entries) or "none"
        return {"ok": False, "summary": f"no function '{short_name(kernel)}' (has: {names})"}
    view = render_text(report, entry.name if entry else None)
    summary = entry_summary(entry, report.arch) if entry else f"{len(report.entries)} functions"
    result: dict = {
        "ok": True,
        "summary": summary,
        "sass": view,
        "kernel": entry.name if entry else "",
    }
    return _write_view(ls, uri, entry.name if entry else "all", view, result)


def _write_view(ls: PtxlsServer, uri: str, name: str, view: str, result: dict) -> dict:
    path = to_path(uri)
    root = workspace_root(ls.workspace, Path(path)) if path else None
    if root is None:
        result["untitled"] = True
        result["summary"] += " (the source is outside the workspace: not written to a file)"
        return result
    safe_name = "".join(c if c.isalnum() or c in "_$." else "_" for c in name)[:120]
    target = root / ".ptxls" / "show" / f"{safe_name}.sass.txt"
    try:
        written = safe_write.write_text(target, view, root=root, replace_symlink=True)
    except (safe_write.UnsafeWrite, OSError) as e:
        result["summary"] += f" (view not written: {e})"
        return result
    result["uri"] = written.as_uri()  # opened by the client, or on request (app.command)
    return result


# -- after a save: keep the hover's SASS current, once Show SASS has been asked for ---------------


def on_save(ls: PtxlsServer, params: types.DidSaveTextDocumentParams) -> None:
    uri = params.text_document.uri
    doc = ls.open_document(uri)
    if uri not in ls.state(SassState).reports or doc is None:
        return
    language = language_of(uri, doc.language_id)
    if language != PTX:
        return
    text, version = doc.source, doc.version

    async def refresh() -> None:
        with contextlib.suppress(asyncio.CancelledError):
            try:
                report = await _compute(ls, uri, text, language)
            except (ToolNotFound, OSError) as e:
                log.info("SASS after save not made: %s", e)
                return
            _remember(ls, uri, version, report)

    asyncio.get_running_loop().create_task(refresh())


def on_close(ls: PtxlsServer, params) -> None:  # DidCloseTextDocumentParams
    uri = params.text_document.uri
    state = ls.state(SassState)
    if uri in state.running:
        state.running.pop(uri).cancel()


# -- hover, code lens, code action -------------------------------------------------------------


def _current(ls: PtxlsServer, uri: str) -> SassReport | None:
    cached = ls.state(SassState).reports.get(uri)
    doc = ls.open_document(uri) if cached else None
    if cached is None or doc is None:
        return None
    # the same text (this version, or the file closed and opened again unchanged): its lines
    # are the SASS's; an edited buffer's are not, so say nothing (versions restart on reopen)
    if doc.source != cached.report.ptx_text:
        return None
    return cached.report


def hover(ls: PtxlsServer, params: types.HoverParams) -> types.Hover | None:
    uri, line = params.text_document.uri, params.position.line
    report = _current(ls, uri)
    text = hover_markdown(report, line + 1) if report else None
    if text is None:
        return None
    doc = ls.open_document(uri)
    width = len(doc.lines[line]) if doc and line < len(doc.lines) else 0
    return convert.markdown_hover(text, convert.line_range(line, 0, width))


def code_lenses(ls: PtxlsServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    uri = params.text_document.uri
    doc = ls.open_document(uri)
    if doc is None or language_of(uri, doc.language_id) != PTX:
        return []
    report = _current(ls, uri)
    lenses = []
    for name, line, col in kernels_in(doc.source, "ptx"):
        entry = report.entry(name) if report else None
        title = "Show SASS"
        if entry is not None and entry.registers is not None:
            title += f" ({entry.registers} registers, {entry.instruction_count} instructions)"
        where = convert.line_range(line, col, col + len(name))
        lenses.append(convert.code_lens(where, title, COMMAND, [uri, name]))
    return lenses


def _kernel_at(text: str, language: str, line: int) -> str | None:
    if language == PTX:
        module, _ = parse_ptx(text, bodies=False)
        for f in module.entries:
            if f.span.start.line <= line <= f.span.end.line:
                return f.name
        return None
    if language == PYTHON:
        starts = [(k.def_line, k.name) for k in read_triton(text).kernels]
    else:
        starts = [(kline, name) for name, kline, _ in kernels_in(text, "cuda")]
    before = [name for kline, name in sorted(starts) if kline <= line]
    return before[-1] if before else None


def code_actions(ls: PtxlsServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    doc = ls.open_document(uri)
    language = language_of(uri, doc.language_id) if doc else None
    if doc is None or language not in (PTX, CUDA, PYTHON):
        return []
    kernel = _kernel_at(doc.source, language, params.range.start.line)
    if kernel is None:
        return []
    title = f"Show SASS for this kernel ({short_name(kernel, 60)})"
    return [convert.code_action(title, COMMAND, [uri, kernel], kind="source")]


def register(server: PtxlsServer) -> None:
    server.command(COMMAND)(show_sass)
    server.hover_providers.append(hover)
    server.code_lens_providers.append(code_lenses)
    server.code_action_providers.append(code_actions)
    server.did_save_hooks.append(on_save)
    server.did_close_hooks.append(on_close)
