"""The kernels a text defines, whatever its language: where each one is (name, line, column),
and, for a tool that works on a kernel's source, what it is (extent, text, parameters).

The one answer to "which kernels are in this buffer": ``kernels_in`` for code lenses, ``ptxls
test`` and the client's kernel pickers (``.entry`` functions of PTX, ``ptx.find_entries``;
``__global__`` functions of CUDA, ``cuda.find_kernels``); ``kernel_defs`` for the lowering, one
call whatever the language (CUDA definitions, ``@triton.jit`` functions, PTX entries).
What can be *lowered* from a buffer (plain-language requests too) is
``lowering.sources.sources_in``.
"""

from __future__ import annotations

from typing import NamedTuple

from .cuda import find_kernels
from .languages import CUDA, PTX, PYTHON
from .ptx import find_entries, parse_ptx
from .triton import read_triton


class KernelAt(NamedTuple):
    name: str
    line: int  # 0-based, the line of the name
    col: int


def kernels_in(text: str, language: str) -> list[KernelAt]:
    """Every kernel of a PTX (``language`` "ptx") or CUDA ("cuda") text, in file order; none
    for another language."""
    if language == PTX:
        return [KernelAt(e.name, e.line, e.col) for e in find_entries(text)]
    if language == CUDA:
        return [KernelAt(k.name, k.line, k.col) for k in find_kernels(text)]
    return []


class KernelDef(NamedTuple):
    """A kernel a text defines, as a tool that works on its source needs it."""

    name: str
    language: str  # languages.py's name: CUDA, PYTHON (a @triton.jit function) or PTX
    start_line: int  # 0-based: its first line (a CUDA template<...> line included)
    end_line: int  # its last line, inclusive
    text: str  # its source text; for PTX the whole module (an entry is not PTX on its own)
    params: tuple[tuple[str, str], ...] | None = None  # CUDA: (name, C type), in order
    is_template: bool = False  # CUDA: a template (its PTX is one instantiation)


def kernel_defs(text: str, language: str) -> list[KernelDef]:
    """Every kernel ``text`` defines, in file order: CUDA ``__global__`` definitions (not
    declarations), ``@triton.jit`` functions (found by a line scan while the file does not
    parse), PTX ``.entry`` functions; none for another language."""
    if language == CUDA:
        return [
            KernelDef(
                k.name,
                CUDA,
                k.decl_line,
                k.end_line,
                text[k.offsets[0] : k.offsets[1]],
                tuple((p.name, p.c_type) for p in k.params),
                k.is_template,
            )  # fmt: skip
            for k in find_kernels(text)
            if k.is_definition
        ]
    if language == PYTHON:
        lines = text.splitlines()
        return [
            KernelDef(
                k.name,
                PYTHON,
                k.start_line,
                k.end_line,
                "\n".join(lines[k.start_line : k.end_line + 1]),
            )  # fmt: skip
            for k in read_triton(text).kernels
        ]
    if language == PTX:
        module, _ = parse_ptx(text)
        return [
            KernelDef(f.name, PTX, f.span.start.line, f.span.end.line, text) for f in module.entries
        ]
    return []
