"""``ptxls/kernels``: the kernels an open document defines, read by the server's own readers.

The VS Code client's "… for this kernel" commands (run GPU test, lower, show PTX) ask this
instead of scanning the text themselves, so the editor and the server agree on what a kernel is.

Request params ``{"textDocument": {"uri": ...}}``; result ``[{name, line, kind}]`` in file order:
``line`` is 0-based, the line of the kernel's name (``.entry NAME``, ``void NAME(``,
``def NAME(``); ``kind`` is "ptx-entry", "cuda-global" or "triton-jit". A document that is not
open, or of another language, has none.
"""

from __future__ import annotations

import asyncio

from ptxls.frontend.kernels import kernels_in
from ptxls.frontend.ptx import parse_ptx
from ptxls.frontend.triton import read_triton

from ..app import PtxlsServer
from .languages import CUDA, PTX, PYTHON, language_of

METHOD = "ptxls/kernels"
# Above this many characters the reading runs in a worker thread (a megabyte of PTX takes
# about half a second to parse), never on the event loop.
THREAD_ABOVE_CHARS = 256_000


def _ptx_entries(text: str) -> list[dict]:
    module, _ = parse_ptx(text)
    return [
        {"name": f.name, "line": f.name_span.start.line, "kind": "ptx-entry"}
        for f in module.functions
        if f.is_entry
    ]


def _cuda_globals(text: str) -> list[dict]:
    return [
        {"name": name, "line": line, "kind": "cuda-global"}
        for name, line, _col in kernels_in(text, "cuda")
    ]


def _triton_kernels(text: str) -> list[dict]:
    kernels = sorted(read_triton(text).kernels, key=lambda k: k.def_line)
    return [{"name": k.name, "line": k.def_line, "kind": "triton-jit"} for k in kernels]


_READERS = {PTX: _ptx_entries, CUDA: _cuda_globals, PYTHON: _triton_kernels}


def kernels_of(text: str, language: str | None) -> list[dict]:
    reader = _READERS.get(language or "")
    return reader(text) if reader else []


def _field(value: object, name: str) -> object:
    """``value[name]``, for the dicts and the namedtuples pygls makes of a custom request's
    params (anything else, or a missing field: None)."""
    if isinstance(value, dict):
        return value.get(name)
    fields = value._fields if isinstance(value, tuple) and hasattr(value, "_fields") else ()
    return getattr(value, name) if name in fields else None  # (a namedtuple's field)


async def kernels(ls: PtxlsServer, params: object) -> list[dict]:
    uri = _field(_field(params, "textDocument"), "uri")
    if not isinstance(uri, str):
        return []
    doc = ls.open_document(uri)
    if doc is None:
        return []
    text, language = doc.source, language_of(uri, doc.language_id)
    if len(text) > THREAD_ABOVE_CHARS:
        return await asyncio.to_thread(kernels_of, text, language)
    return kernels_of(text, language)


def register(server: PtxlsServer) -> None:
    server.feature(METHOD)(kernels)
