"""Diagnostics for .cu buffers: device code through nvcc -ptx (NVRTC without nvcc).

nvcc takes ~0.3–0.8 s on a small file, so it runs on open and save, and after a longer pause
in typing (4 × the PTX debounce, at least 600 ms) rather than on every keystroke.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from ptxls.diagnostics.engine import (
    CudaCheckOptions,
    DocumentCheckOptions,
    check_text,
    split_lines,
)

from ..app import PtxlsServer
from ..convert import to_diagnostics
from .jobs import DocumentJobs
from .languages import CUDA, language_of

PRODUCER = "cuda-check"


@dataclass
class CudaCheckState:
    jobs: DocumentJobs = field(default_factory=lambda: DocumentJobs("nvcc"))


def _schedule(ls: PtxlsServer, uri: str, delay: float) -> None:
    doc = ls.open_document(uri)
    if doc is None or language_of(uri, doc.language_id) != CUDA:
        return
    ls.state(CudaCheckState).jobs.start(uri, _check(ls, uri, doc.version, delay))


def on_open_or_save(ls: PtxlsServer, params) -> None:
    _schedule(ls, params.text_document.uri, 0)


def on_change(ls: PtxlsServer, params) -> None:
    _schedule(ls, params.text_document.uri, max(0.6, 4 * ls.settings.debounce_ms / 1000))


def on_close(ls: PtxlsServer, params) -> None:
    ls.state(CudaCheckState).jobs.cancel(params.text_document.uri)


async def _check(ls: PtxlsServer, uri: str, version: int | None, delay: float) -> None:
    if delay:
        await asyncio.sleep(delay)
    doc = ls.open_document(uri)
    if doc is None or doc.version != version:
        return
    text = doc.source
    settings = ls.settings
    cuda = CudaCheckOptions(
        arch=settings.arch,
        nvcc_path=settings.nvcc_path,
        file_path=doc.path if uri.startswith("file:") else None,
        timeout=settings.ptxas_timeout_seconds,
    )
    result = await check_text(text, DocumentCheckOptions("cuda", cuda=cuda, guard_source="nvcc"))
    for note in result.notes:
        ls.tell_once("cuda-note:" + note, f"ptxls: {note}")
    doc = ls.open_document(uri)
    if doc is None or doc.version != version:
        return
    ls.store.set(uri, PRODUCER, to_diagnostics(result.problems, split_lines(text)))
    ls.publish(uri, version)


def register(server: PtxlsServer) -> None:
    server.did_open_hooks.append(on_open_or_save)
    server.did_save_hooks.append(on_open_or_save)
    server.did_change_hooks.append(on_change)
    server.did_close_hooks.append(on_close)
