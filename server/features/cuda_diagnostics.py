"""Diagnostics for .cu buffers: device code through nvcc -ptx (NVRTC without nvcc).

nvcc takes ~0.3–0.8 s on a small file, so it runs on open and save, and after a longer pause
in typing (4 × the PTX debounce, at least 600 ms) rather than on every keystroke.
"""

from __future__ import annotations

import asyncio

from ptxls.diagnostics.cuda_check import check_cuda
from ptxls.diagnostics.engine import split_lines
from ptxls.diagnostics.text_guard import binary_problem
from ptxls.toolchain.arch import choose_arch

from ..app import PtxlsServer
from ..convert import to_diagnostic
from .jobs import DocumentJobs
from .languages import CUDA, language_of

PRODUCER = "cuda-check"


def register(server: PtxlsServer) -> None:
    jobs = DocumentJobs("nvcc")

    def schedule(ls: PtxlsServer, uri: str, delay: float) -> None:
        doc = ls.open_document(uri)
        if doc is None or language_of(uri, doc.language_id) != CUDA:
            return
        jobs.start(uri, _check(ls, uri, doc.version, delay))

    server.did_open_hooks.append(lambda ls, p: schedule(ls, p.text_document.uri, 0))
    server.did_save_hooks.append(lambda ls, p: schedule(ls, p.text_document.uri, 0))
    server.did_change_hooks.append(
        lambda ls, p: schedule(
            ls, p.text_document.uri, max(0.6, 4 * ls.settings.debounce_ms / 1000)
        )
    )
    server.did_close_hooks.append(lambda ls, p: jobs.cancel(p.text_document.uri))


async def _check(server: PtxlsServer, uri: str, version: int | None, delay: float) -> None:
    if delay:
        await asyncio.sleep(delay)
    doc = server.open_document(uri)
    if doc is None or doc.version != version:
        return
    text = doc.source
    lines = split_lines(text)
    bad = binary_problem(text, source="nvcc")
    if bad is not None:
        problems = [bad]
    else:
        path = doc.path if uri.startswith("file:") else None
        result = await check_cuda(
            text,
            file_path=path,
            arch=choose_arch(server.settings.arch, None),
            nvcc_path=server.settings.nvcc_path,
            timeout=server.settings.ptxas_timeout_seconds,
        )
        for note in result.notes:
            server.tell_once("cuda-note:" + note, f"ptxls: {note}")
        problems = result.problems
    doc = server.open_document(uri)
    if doc is None or doc.version != version:
        return
    server.store.set(uri, PRODUCER, [to_diagnostic(p, lines) for p in problems])
    server.publish(uri, version)
