"""Live diagnostics for .ptx buffers: instant lints, then ptxas after a short debounce.

The instant lints are shown as soon as they are known; ptxas's word, folded with them, replaces
them when it comes (one publish when ptxas answers first). Until it comes, the lints are shown
with the last ptxas run's problems, moved through the edits since (those on a line an edit
touched are dropped): ptxas's squiggles do not vanish for the time ptxas takes. For a large text
the lints start as the edit arrives, in a worker thread, so that they are ready when the
debounce ends; their result is used only for that very text.

Per document there is at most one job. Each edit cancels the running job, which kills its
ptxas, and starts a new one for the new version. Nothing is published for a version the editor
has already moved past, and every publish carries the version it was computed for.

Above ``saveOnlyAboveBytes`` ptxas runs on save only (it takes ~10 s on 670 KB): edits get the
instant lints, and the person is told once why ptxas waits for the save.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field, replace

from lsprotocol import types

from ptxls.diagnostics.engine import (
    INLINE_LINT_BYTES,
    CheckStep,
    DocumentCheckOptions,
    PtxasUnavailable,
    PtxCheckOptions,
    check_document,
    instant_check,
    merge,
    split_lines,
)
from ptxls.diagnostics.model import CheckResult, Fix, Problem
from ptxls.diagnostics.resources import EntryUsage
from ptxls.frontend.ptx import PtxModule

from ..app import PtxlsServer
from ..convert import quick_fix, to_diagnostics
from ..large_documents import PRODUCER as LARGE_PRODUCER
from ..large_documents import notice, size_if_too_large
from .jobs import DocumentJobs
from .languages import PTX, language_of

PRODUCER = "ptx-check"
# After the debounce, how long to wait for ptxas before showing the instant lints on their own:
# none (issue 22: the lints within the debounce + 30 ms). The lints are published as soon as
# they are known unless ptxas has answered by then; ptxas's publish replaces them.
LINTS_ALONE_AFTER_S = 0.0


# Checks started by didOpen run this many at a time: 3,000 didOpens at once (a client
# restoring a session, a script) used to start 3,000 checks whose threads and tools kept
# every hover waiting 27 s. An edit's or a save's check does not wait for these.
OPEN_CHECKS_AT_ONCE = 2


@dataclass(eq=False)
class _EarlyLints:
    """``instant_check`` of one version's text, started as its edit arrived (in the debounce)."""

    version: int | None
    text: str
    job: asyncio.Future[tuple[PtxModule, list[Problem]]] | None = None  # None: not started


@dataclass
class PtxCheckState:
    jobs: DocumentJobs = field(default_factory=lambda: DocumentJobs("ptxas"))
    # uri → (version, usage per function) from the last clean ptxas -v run (hover on .entry)
    usage: dict[str, tuple[int | None, list[EntryUsage]]] = field(default_factory=dict)
    # didOpens not yet handled, oldest first: a burst is handled by one task, a few at a time
    opening: dict[str, types.DidOpenTextDocumentParams] = field(default_factory=dict)
    opener: asyncio.Task | None = None
    # uri → the lints of its latest edit, started early; and the one such run per document
    # going on (a thread cannot be stopped: a newer edit's run waits for it, older ones' are
    # never started)
    early: dict[str, _EarlyLints] = field(default_factory=dict)
    early_running: dict[str, asyncio.Future] = field(default_factory=dict)
    # uri → ptxas's problems of its last ptxas run, moved through every edit since (_carry):
    # published with a newer version's lints until ptxas answers for that version
    carried: dict[str, list[Problem]] = field(default_factory=dict)
    open_slots: asyncio.Semaphore = field(
        default_factory=lambda: asyncio.Semaphore(OPEN_CHECKS_AT_ONCE)
    )


def _schedule(ls: PtxlsServer, uri: str, *, on_save: bool, opened: bool = False) -> None:
    doc = ls.open_document(uri)
    if doc is not None and language_of(uri, doc.language_id) == PTX:
        check = _check(ls, uri, doc.version, on_save=on_save, opened=opened)
        ls.state(PtxCheckState).jobs.start(uri, check)


def _too_large(ls: PtxlsServer, uri: str) -> bool:
    """Above the size limit: the notice instead of any analysis (large_documents.py)."""
    size = size_if_too_large(ls, uri)
    if size is None:
        return False
    ls.state(PtxCheckState).jobs.cancel(uri)
    notice(ls, uri, size)
    return True


def did_open(ls: PtxlsServer, params: types.DidOpenTextDocumentParams) -> None:
    uri = params.text_document.uri
    if _too_large(ls, uri):
        return
    state = ls.state(PtxCheckState)
    state.opening[uri] = params
    if state.opener is None or state.opener.done():
        state.opener = asyncio.get_running_loop().create_task(_handle_opens(ls))


async def _handle_opens(ls: PtxlsServer) -> None:
    """The didOpens of a burst, one per turn of the loop (requests are answered in between)."""
    state = ls.state(PtxCheckState)
    while state.opening:
        await _until_read_up(ls)
        if not state.opening:
            break
        uri = next(iter(state.opening))
        params = state.opening.pop(uri)
        if ls.open_document(uri) is not None:  # not closed meanwhile
            for hook in ls.did_open_hooks:
                try:
                    hook(ls, params)
                except Exception as e:  # one feature's bug must not stop the others' opens
                    ls.report_server_error(e, hook)
            _schedule(ls, uri, on_save=True, opened=True)
        await asyncio.sleep(0)


# How long an open's hooks and check may wait for the messages read before them to be
# dispatched (a client that never stops sending must not starve its opens).
OPEN_WAITS_FOR_MESSAGES_S = 0.5


async def _until_read_up(ls: PtxlsServer) -> None:
    """Wait while messages that arrived are still waiting to be dispatched: a burst of didOpens
    is taken in whole (and the requests among it answered) before the opens' hooks, status
    notifications and checks start, one per turn of the loop."""
    deadline = asyncio.get_running_loop().time() + OPEN_WAITS_FOR_MESSAGES_S
    while ls.messages_waiting() and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.005)


def did_change(ls: PtxlsServer, params: types.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    if _too_large(ls, uri):
        return
    ls.store.set(uri, LARGE_PRODUCER, [])  # it may have been too large before this edit
    for hook in ls.did_change_hooks:
        hook(ls, params)
    _carry(ls.state(PtxCheckState), uri, params.content_changes)
    _start_early_lints(ls, uri)
    _schedule(ls, uri, on_save=False)


def _carry(state: PtxCheckState, uri: str, changes) -> None:
    """Moves the carried ptxas problems through one didChange's edits, in order."""
    carried = state.carried.get(uri)
    for change in changes:
        if not carried:
            break
        where = getattr(change, "range", None)
        if where is None:  # the whole text replaced: no line is known to be the same
            carried = []
            break
        text = change.text
        added = text.count("\n") + text.count("\r") - text.count("\r\n")
        carried = moved_through_edit(carried, where.start.line, where.end.line, added)
    if carried is not None:
        state.carried[uri] = carried


def moved_through_edit(problems: list[Problem], first: int, last: int, added: int) -> list[Problem]:
    """``problems`` after an edit that replaced the text from a position on line ``first`` to
    one on line ``last`` with text of ``added`` line breaks: those above keep their lines, those
    below move by the difference, those on a line the edit touched are dropped (their text
    changed). A fix on a touched line is dropped, one below moves with its lines."""
    delta = added - (last - first)

    def line(n: int) -> int | None:
        return n if n < first else n + delta if n > last else None

    def fix(f: Fix | None) -> Fix | None:
        at = None if f is None else line(f.line)
        return None if f is None or at is None else f if at == f.line else replace(f, line=at)

    out = []
    for p in problems:
        start, end = line(p.line), line(p.last_line)
        if start is None or end is None or (p.line < first and p.last_line > last):
            continue  # on a touched line, or spanning the edit
        if (start, fix(p.fix)) == (p.line, p.fix):
            out.append(p)
        else:
            end_line = None if p.end_line is None else end
            out.append(replace(p, line=start, end_line=end_line, fix=fix(p.fix)))
    return out


def _start_early_lints(ls: PtxlsServer, uri: str) -> None:
    """A large PTX text's instant checks, started now in a worker thread, so that they are
    known when the debounce ends (they cost 0.1-0.3 s on 24k lines); a small text's take well
    under a millisecond after the debounce."""
    doc = ls.open_document(uri)
    if doc is None or language_of(uri, doc.language_id) != PTX:
        return
    text = doc.source
    state = ls.state(PtxCheckState)
    if len(text) < INLINE_LINT_BYTES:
        state.early.pop(uri, None)
        return
    state.early[uri] = _EarlyLints(doc.version, text)
    running = state.early_running.get(uri)
    if running is None or running.done():
        _run_early(state, uri)
    # else: started when the running one ends (_early_done), if no newer edit came by then


def _run_early(state: PtxCheckState, uri: str) -> None:
    early = state.early.get(uri)
    if early is None or early.job is not None:
        return
    early.job = asyncio.ensure_future(asyncio.to_thread(instant_check, early.text))
    state.early_running[uri] = early.job
    early.job.add_done_callback(lambda job: _early_done(state, uri, job))


def _early_done(state: PtxCheckState, uri: str, job: asyncio.Future) -> None:
    if not job.cancelled():
        job.exception()  # retrieved: a failure shows when the check awaits it, not as a warning
    if state.early_running.get(uri) is job:
        del state.early_running[uri]
    _run_early(state, uri)  # the latest edit's, if it waited for this one


def _take_early_lints(
    ls: PtxlsServer, uri: str, version: int | None, text: str
) -> asyncio.Future[tuple[PtxModule, list[Problem]]] | None:
    """The early lints of exactly this version and text, if they were started; taken, so that a
    run not yet started never starts."""
    state = ls.state(PtxCheckState)
    early = state.early.get(uri)
    if early is None or early.version != version or early.text != text:
        return None
    del state.early[uri]
    return early.job


def did_save(ls: PtxlsServer, params: types.DidSaveTextDocumentParams) -> None:
    if _too_large(ls, params.text_document.uri):
        return
    for hook in ls.did_save_hooks:
        hook(ls, params)
    _schedule(ls, params.text_document.uri, on_save=True)


def did_close(ls: PtxlsServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    state = ls.state(PtxCheckState)
    state.opening.pop(uri, None)
    state.jobs.cancel(uri)
    state.usage.pop(uri, None)
    state.early.pop(uri, None)
    state.carried.pop(uri, None)
    for hook in ls.did_close_hooks:
        hook(ls, params)
    ls.store.clear(uri)
    ls.publish(uri, None)


def _current(ls: PtxlsServer, uri: str, version: int | None) -> bool:
    doc = ls.open_document(uri)
    return doc is not None and doc.version == version


def _publish(
    ls: PtxlsServer, uri: str, version: int | None, problems: list[Problem], lines
) -> None:
    if not _current(ls, uri, version):
        return  # the editor moved on; a newer job owns this document now
    ls.store.set(uri, PRODUCER, to_diagnostics(problems, lines))
    ls.publish(uri, version)


def _tell_save_only(ls: PtxlsServer, uri: str, size: int) -> None:
    limit = ls.settings.save_only_above_bytes
    ls.tell_once(
        "save-only",
        f"ptxls: {uri.rsplit('/', 1)[-1]} is {size / 1000:.0f} KB, above ptxls.saveOnlyAboveBytes "
        f"({limit / 1000:.0f} KB): ptxas runs when you save it "
        "(it takes seconds on files this size); instant checks still run as you type.",
        types.MessageType.Info,
    )


def _options(ls: PtxlsServer, uri: str, size: int, *, on_save: bool) -> DocumentCheckOptions:
    """Above saveOnlyAboveBytes, ptxas runs on open and save only."""
    settings = ls.settings
    save_only = size > settings.save_only_above_bytes and not on_save
    ptx = PtxCheckOptions(
        arch=settings.arch,
        ptxas_path=settings.ptxas_path,
        timeout=settings.ptxas_timeout_seconds,
        max_problems=settings.max_problems,
        file_name=uri.rsplit("/", 1)[-1] or "input.ptx",
        verbose=True,
    )
    return DocumentCheckOptions(
        ptx=ptx, run_tool=not save_only, lints_alone_after_s=LINTS_ALONE_AFTER_S
    )


async def _check(
    ls: PtxlsServer, uri: str, version: int | None, *, on_save: bool, opened: bool = False
) -> None:
    """One check of one version: the engine's deliveries published as they come."""
    if opened:  # a check an open started waits for a slot (OPEN_CHECKS_AT_ONCE)
        async with ls.state(PtxCheckState).open_slots:
            await _check(ls, uri, version, on_save=on_save)
        return
    if not on_save:
        await asyncio.sleep(ls.settings.debounce_ms / 1000)
    doc = ls.open_document(uri)
    if doc is None or doc.version != version:
        return
    text = doc.source
    lines: list[str] | None = None  # only where there are problems to place (_lines_of)
    opts = _options(ls, uri, len(text), on_save=on_save)
    started = time.monotonic()
    early = _take_early_lints(ls, uri, version, text)
    try:
        async with contextlib.aclosing(check_document(text, opts, lints=early)) as steps:
            async for step in steps:
                if not (opts.run_tool or step.binary):
                    _tell_save_only(ls, uri, len(text))
                problems = _shown(ls, uri, step, opts)
                if lines is None and problems:
                    lines = await _lines_of(text)
                _publish(ls, uri, version, problems, lines or [])
                if step.final:
                    _remember_ptxas(ls, uri, version, step)
                if step.final and step.result.ran_tool:
                    _ran_ptxas(ls, uri, version, step.result, time.monotonic() - started)
    except PtxasUnavailable as e:
        ls.tell_once("ptxas-missing", f"ptxls: {e}", types.MessageType.Error)


def _shown(ls: PtxlsServer, uri: str, step: CheckStep, opts: DocumentCheckOptions) -> list[Problem]:
    """What one step publishes: the lints ahead of ptxas come with the last ptxas run's
    problems (moved through the edits since), so those do not vanish while ptxas runs; ptxas's
    word at the same token wins over a lint, as in the final publish (``merge``)."""
    problems = step.result.problems
    carried = ls.state(PtxCheckState).carried.get(uri)
    if step.final or not opts.run_tool or not carried:
        return problems
    return merge(problems, carried, ls.settings.max_problems)


def _remember_ptxas(ls: PtxlsServer, uri: str, version: int | None, step: CheckStep) -> None:
    """The final step's ptxas problems, carried into the next edits (not a version the editor
    has moved past: its edits already moved the older ones)."""
    state = ls.state(PtxCheckState)
    if step.binary:
        state.carried.pop(uri, None)
    elif step.result.ran_tool and _current(ls, uri, version):
        state.carried[uri] = [p for p in step.result.problems if p.source == "ptxas"]


# Above this a text's lines are split in a worker thread, a slice at a time (_split_in_slices).
LINES_OFF_LOOP_BYTES = 256 << 10


async def _lines_of(text: str) -> list[str]:
    """The text's lines, to place problems: split on the loop for an ordinary file; for a large
    one in a worker thread, in slices (one split of a 1M-line file held the loop 170-200 ms,
    and held the GIL as long in a thread)."""
    if len(text) <= LINES_OFF_LOOP_BYTES:
        return split_lines(text)
    return await asyncio.to_thread(_split_in_slices, text)


def _split_in_slices(text: str, step: int = 1 << 16) -> list[str]:
    """split_lines(text), a slice of about ``step`` characters at a time (cut after a line end),
    so that the thread doing it lets the event loop run between slices."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    out: list[str] = []
    pos, n = 0, len(text)
    while True:
        end = text.find("\n", min(pos + step, n))
        if end < 0:
            out.extend(text[pos:].split("\n"))
            return out
        out.extend(text[pos:end].split("\n"))
        pos = end + 1


def _ran_ptxas(ls: PtxlsServer, uri: str, version, result: CheckResult, took: float) -> None:
    if _current(ls, uri, version):
        ls.state(PtxCheckState).usage[uri] = (version, result.usage)
    # after the publish: the person waits for the squiggles, not for the log line
    ls.log_message(
        f"{result.tool} -arch={result.arch}: {result.error_count} errors in "
        f"{took:.2f} s for {uri.rsplit('/', 1)[-1]} v{version}"
    )


def quick_fixes(ls: PtxlsServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    """The fixes the diagnostics under the cursor carry (one per distinct edit: three uses of
    %r6 share the one ``%r<7>``)."""
    doc = ls.open_document(params.text_document.uri)
    if doc is None:
        return []
    lines = doc.lines
    actions: dict[str, types.CodeAction] = {}
    for d in params.context.diagnostics:
        action = quick_fix(params.text_document.uri, d, [line.rstrip("\r\n") for line in lines])
        if action is not None:
            actions.setdefault(action.title, action)
    return list(actions.values())


def register(server: PtxlsServer) -> None:
    server.code_action_providers.append(quick_fixes)
    server.feature(types.TEXT_DOCUMENT_DID_OPEN)(did_open)
    server.feature(types.TEXT_DOCUMENT_DID_CHANGE)(did_change)
    server.feature(types.TEXT_DOCUMENT_DID_SAVE)(did_save)
    server.feature(types.TEXT_DOCUMENT_DID_CLOSE)(did_close)
