"""The kernels a text defines, whatever its language: where each one is (name, line, column).

The one answer to "which kernels are in this buffer" for code lenses, ``ptxls test`` and the
client's kernel pickers: ``.entry`` functions of PTX (``ptx.find_entries``), ``__global__``
functions of CUDA (``cuda.find_kernels``). What can be *lowered* from a buffer (requests and
Triton kernels too, with their source text) is ``lowering.sources.sources_in``.
"""

from __future__ import annotations

from typing import NamedTuple

from .cuda import find_kernels
from .languages import CUDA, PTX
from .ptx import find_entries


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
