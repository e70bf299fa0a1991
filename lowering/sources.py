"""Find what can be lowered in a buffer: CUDA ``__global__`` kernels, ``@triton.jit``
functions, natural-language requests in comments, and PTX entries (for "Optimize").

The kernels are read by ``ptxls.frontend`` (``kernels.kernel_defs``: one call, whatever the
language; the readers every room shares); this module adds the requests and what lowering
needs around them. It never raises: code actions ask on every
cursor move, so this must be cheap and tolerant of half-typed code. Lines are 0-based, end
inclusive.

Natural-language syntax (documented in lowering/README.md): a comment line starting with
``@ptx:`` — ``// @ptx: <request>`` in .cu/.ptx (``# @ptx:`` in .py) — continued by following
comment lines that are not blank, e.g.::

    // @ptx: relu_inplace(float* x, int n): x[i] = max(x[i], 0) for i < n
    //       one element per thread
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from ptxls.frontend.cuda import parse_params
from ptxls.frontend.kernels import kernel_defs
from ptxls.frontend.languages import CUDA, PTX, PYTHON

from .ptx_check import ExpectedParam


@dataclass
class SourceKernel:
    kind: str  # "cuda", "triton", "request", "ptx"
    name: str  # kernel name ("" for a request that names none)
    text: str  # the kernel's source text (or the request)
    start_line: int
    end_line: int
    params: list[ExpectedParam] | None = None  # None when unknown (requests, Triton)
    notes: list[str] = field(default_factory=list)

    def contains(self, line: int) -> bool:
        return self.start_line <= line <= self.end_line


def _expected(params: Iterable[tuple[str, str]]) -> list[ExpectedParam]:
    """The parameters a lowering must take, from (name, C type) pairs."""
    return [ExpectedParam(name, c_type) for name, c_type in params]


_KINDS = {CUDA: "cuda", PYTHON: "triton", PTX: "ptx"}
_TEMPLATE_NOTE = "templated kernel: the PTX must be for one instantiation"


def kernels(text: str, language: str) -> list[SourceKernel]:
    """The kernels of a ``language`` text, as the one reader of each language finds them
    (``frontend.kernels.kernel_defs``): CUDA definitions (declarations have nothing to lower),
    ``@triton.jit`` functions (a line scan while the file does not parse, mid-edit, so the
    action does not flicker while typing), PTX entries (for "Optimize")."""
    return [
        SourceKernel(
            _KINDS[k.language],
            k.name,
            k.text,
            k.start_line,
            k.end_line,
            params=_expected(k.params) if k.params is not None else None,
            notes=[_TEMPLATE_NOTE] if k.is_template else [],
        )
        for k in kernel_defs(text, language)
    ]


def cuda_kernels(text: str) -> list[SourceKernel]:
    """Every ``__global__`` kernel defined in the text."""
    return kernels(text, CUDA)


def triton_kernels(text: str) -> list[SourceKernel]:
    """``@triton.jit`` (or ``@jit`` from triton) functions."""
    return kernels(text, PYTHON)


def ptx_entries(text: str) -> list[SourceKernel]:
    """The ``.entry`` functions of a PTX text (the text of each: the whole module)."""
    return kernels(text, PTX)


_REQUEST = re.compile(r"^\s*(?://|#|;)\s*@ptx:\s*(?P<req>.*)$")
_COMMENT = re.compile(r"^\s*(?://|#|;)\s?(?P<body>.*)$")
_NAME_IN_REQUEST = re.compile(r"^\s*(?:kernel\s+)?(?P<name>[A-Za-z_]\w*)\s*(?:\(|:)")


def requests(text: str) -> list[SourceKernel]:
    lines = text.splitlines()
    found = []
    i = 0
    while i < len(lines):
        m = _REQUEST.match(lines[i])
        if not m:
            i += 1
            continue
        parts = [m.group("req").strip()]
        j = i + 1
        while j < len(lines):
            c = _COMMENT.match(lines[j])
            if not c or not c.group("body").strip() or _REQUEST.match(lines[j]):
                break
            # "@gputest ..." lines in the block say how to test the result (a numpy reference);
            # they belong to the request's block but not to what the model is asked for.
            if not c.group("body").lstrip().startswith("@gputest"):
                parts.append(c.group("body").strip())
            j += 1
        req = " ".join(p for p in parts if p)
        name = _NAME_IN_REQUEST.match(req)
        params = None
        sig = re.match(r"^\s*(?:kernel\s+)?([A-Za-z_]\w*)\s*\(([^)]*)\)", req)
        if sig:
            params = _expected((p.name, p.c_type) for p in parse_params(sig.group(2)))
        found.append(
            SourceKernel(
                "request", name.group("name") if name else "", req, i, j - 1, params=params
            )
        )
        i = j
    return found


def sources_in(text: str, language: str) -> list[SourceKernel]:
    """Everything lowerable in a buffer of ``language`` ("cuda", "python", "ptx"): its kernels,
    then the plain-language requests in its comments."""
    if language not in _KINDS:
        return []
    return kernels(text, language) + requests(text)
