"""What the per-kernel commands of a buffer share ("Run GPU test", "Run with sanitizer"): the
kernels a lens sits on, the last result per (uri, kernel) with the document version it was for,
the run in flight per (uri, kernel), and the refusal a command answers with.

A feature declares its state as a subclass (``ls.state`` keeps one per class) and its cached
result type: ``class GpuTestState(KernelRuns[TestReport])``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from lsprotocol import types

from ptxls.frontend.kernels import KernelAt, kernels_in
from ptxls.frontend.languages import CUDA, PTX, language_of

from .. import convert
from ..app import PtxlsServer

R = TypeVar("R")


@dataclass
class Cached(Generic[R]):
    version: int | None  # document version the run was for
    value: R


@dataclass
class KernelRuns(Generic[R]):
    results: dict[tuple[str, str], Cached[R]] = field(default_factory=dict)  # (uri, kernel)
    running: dict[tuple[str, str], asyncio.Task] = field(default_factory=dict)

    def has_results(self, uri: str) -> bool:
        return any(u == uri for u, _ in self.results)

    def forget(self, uri: str) -> None:
        """The document closed: its results go, its runs are cancelled."""
        for key in [k for k in self.results if k[0] == uri]:
            del self.results[key]
        for key in [k for k in self.running if k[0] == uri]:
            self.running.pop(key).cancel()


def is_stale(ls: PtxlsServer, uri: str, cached: Cached) -> bool:
    doc = ls.open_document(uri)
    return doc is None or doc.version != cached.version


def kernel_language(ls: PtxlsServer, uri: str) -> str | None:
    """ "ptx" or "cuda" (frontend/languages.py's table) for an open document a kernel runs
    from, else None."""
    doc = ls.open_document(uri)
    if doc is None:
        return None
    lang = language_of(uri, doc.language_id)
    return lang if lang in (PTX, CUDA) else None


def kernels(ls: PtxlsServer, uri: str) -> list[KernelAt]:
    """(name, line, col) of every .entry (PTX) or __global__ kernel (CUDA) of an open buffer:
    where the lenses sit, side by side."""
    doc, lang = ls.open_document(uri), kernel_language(ls, uri)
    if doc is None or lang is None:
        return []
    return kernels_in(doc.source, lang)


def lenses(
    ls: PtxlsServer, uri: str, command: str, title: Callable[[str], str]
) -> list[types.CodeLens]:
    """One lens per kernel, running ``command`` with (uri, kernel); ``title(kernel)``."""
    return [
        convert.code_lens(
            convert.line_range(line, col, col + len(name)), title(name), command, [uri, name]
        )
        for name, line, col in kernels(ls, uri)
    ]


def refused(status: str, summary: str) -> dict:
    return {"ok": False, "status": status, "summary": summary}
