"""Live diagnostics for .ptx buffers: instant lints, then ptxas after a short debounce.

Per document there is at most one job. Each edit cancels the running job, which kills its
ptxas, and starts a new one for the new version. Nothing is published for a version the editor
has already moved past, and every publish carries the version it was computed for.

Above ``saveOnlyAboveBytes`` ptxas runs on save only (it takes ~10 s on 670 KB): edits get the
instant lints, and the person is told once why ptxas waits for the save.
"""

from __future__ import annotations

import asyncio
import time

from lsprotocol import types

from ptxls.diagnostics.engine import (
    INLINE_LINT_BYTES,
    PtxasUnavailable,
    PtxCheckOptions,
    check_ptx,
    instant_check,
    split_lines,
)
from ptxls.diagnostics.text_guard import binary_problem

from ..app import PtxlsServer
from ..convert import to_diagnostic
from .jobs import DocumentJobs
from .languages import PTX, language_of

PRODUCER = "ptx-check"
# After the debounce, how long to wait for ptxas before showing the instant lints on their own:
# small files answer within this, so the person sees one publish, not lints then ptxas.
LINTS_ALONE_AFTER_S = 0.4


def register(server: PtxlsServer) -> None:
    jobs = DocumentJobs("ptxas")
    server.ptx_jobs = jobs  # tests and the benchmark look at it
    server.ptx_usage = {}  # uri → (version, [EntryUsage]) from the last clean ptxas -v run

    def is_ptx(uri: str) -> bool:
        doc = server.open_document(uri)
        return doc is not None and language_of(uri, doc.language_id) == PTX

    def schedule(uri: str, *, on_save: bool) -> None:
        doc = server.open_document(uri)
        if doc is None:
            return
        jobs.start(uri, _check(server, uri, doc.version, on_save=on_save))

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: PtxlsServer, params: types.DidOpenTextDocumentParams) -> None:
        for hook in ls.did_open_hooks:
            hook(ls, params)
        if is_ptx(params.text_document.uri):
            schedule(params.text_document.uri, on_save=True)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: PtxlsServer, params: types.DidChangeTextDocumentParams) -> None:
        for hook in ls.did_change_hooks:
            hook(ls, params)
        if is_ptx(params.text_document.uri):
            schedule(params.text_document.uri, on_save=False)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: PtxlsServer, params: types.DidSaveTextDocumentParams) -> None:
        for hook in ls.did_save_hooks:
            hook(ls, params)
        if is_ptx(params.text_document.uri):
            schedule(params.text_document.uri, on_save=True)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: PtxlsServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        jobs.cancel(uri)
        ls.ptx_usage.pop(uri, None)
        for hook in ls.did_close_hooks:
            hook(ls, params)
        ls.store.clear(uri)
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )


def _current(server: PtxlsServer, uri: str, version: int | None) -> bool:
    doc = server.open_document(uri)
    return doc is not None and doc.version == version


def _publish(server: PtxlsServer, uri: str, version: int | None, problems, lines) -> None:
    if not _current(server, uri, version):
        return  # the editor moved on; a newer job owns this document now
    server.store.set(uri, PRODUCER, [to_diagnostic(p, lines) for p in problems])
    server.publish(uri, version)


async def _check(server: PtxlsServer, uri: str, version: int | None, *, on_save: bool) -> None:
    settings = server.settings
    if not on_save:
        await asyncio.sleep(settings.debounce_ms / 1000)
    doc = server.open_document(uri)
    if doc is None or doc.version != version:
        return
    text = doc.source
    lines = split_lines(text)

    bad = binary_problem(text)
    if bad is not None:
        _publish(server, uri, version, [bad], lines)
        return

    size = len(text)
    if size < INLINE_LINT_BYTES:
        lint_job = asyncio.get_running_loop().create_future()
        lint_job.set_result(instant_check(text))
    else:
        lint_job = asyncio.ensure_future(asyncio.to_thread(instant_check, text))
    if size > settings.save_only_above_bytes and not on_save:
        server.tell_once(
            "save-only",
            f"ptxls: {uri.rsplit('/', 1)[-1]} is {size / 1000:.0f} KB, above ptxls.saveOnlyAboveBytes "
            f"({settings.save_only_above_bytes / 1000:.0f} KB): ptxas runs when you save it "
            "(it takes seconds on files this size); instant checks still run as you type.",
            types.MessageType.Info,
        )
        _, lints = await lint_job
        _publish(server, uri, version, lints, lines)
        return

    opts = PtxCheckOptions(
        arch=settings.arch,
        ptxas_path=settings.ptxas_path,
        timeout=settings.ptxas_timeout_seconds,
        max_problems=settings.max_problems,
        file_name=uri.rsplit("/", 1)[-1] or "input.ptx",
        verbose=True,
    )
    started = time.monotonic()
    ptxas_job = asyncio.ensure_future(check_ptx(text, opts, lints=asyncio.shield(lint_job)))
    try:
        done, _ = await asyncio.wait({ptxas_job}, timeout=LINTS_ALONE_AFTER_S)
        if not done:
            # ptxas is slow on this one: show what is certain now, ptxas's word when it comes
            _, lints = await lint_job
            if not ptxas_job.done():
                _publish(server, uri, version, lints, lines)
        result = await ptxas_job
    except PtxasUnavailable as e:
        server.tell_once("ptxas-missing", f"ptxls: {e}", types.MessageType.Error)
        _, lints = await lint_job
        _publish(server, uri, version, lints, lines)
        return
    except asyncio.CancelledError:
        ptxas_job.cancel()
        raise
    if _current(server, uri, version):
        server.ptx_usage[uri] = (version, result.usage)
    _publish(server, uri, version, result.problems, lines)
    # after the publish: the person waits for the squiggles, not for the log line
    server.log_message(
        f"{result.tool} -arch={result.arch}: {result.error_count} errors in "
        f"{time.monotonic() - started:.2f} s for {uri.rsplit('/', 1)[-1]} v{version}"
    )
