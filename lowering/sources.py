"""Find what can be lowered in a buffer: CUDA ``__global__`` kernels, ``@triton.jit``
functions, natural-language requests in comments, and PTX entries (for "Optimize").

CUDA signatures and PTX entries are read by ``ptxls.frontend`` (the readers every room shares);
this module adds what lowering needs around them. It never raises: code actions ask on every
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
from dataclasses import dataclass, field

from ptxls.frontend.cuda import CudaParam, find_kernels, parse_params
from ptxls.frontend.ptx import parse_ptx
from ptxls.frontend.triton import read_triton

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


def _expected(params: list[CudaParam]) -> list[ExpectedParam]:
    return [ExpectedParam(p.name, p.c_type) for p in params]


def cuda_kernels(text: str) -> list[SourceKernel]:
    """Every ``__global__`` kernel defined in the text (declarations have nothing to lower)."""
    found = []
    for k in find_kernels(text):
        if not k.is_definition:
            continue
        notes = ["templated kernel: the PTX must be for one instantiation"] if k.is_template else []
        found.append(
            SourceKernel(
                kind="cuda",
                name=k.name,
                text=text[k.offsets[0] : k.offsets[1]],
                start_line=k.decl_line,
                end_line=k.end_line,
                params=_expected(k.params),
                notes=notes,
            )
        )
    return found


def triton_kernels(text: str) -> list[SourceKernel]:
    """``@triton.jit`` (or ``@jit`` from triton) functions, as the one Triton reader
    (``frontend/triton.py``) finds them; it scans lines when the file does not parse (mid-edit),
    so the action does not flicker while typing."""
    lines = text.splitlines()
    return [
        SourceKernel(
            "triton",
            k.name,
            "\n".join(lines[k.start_line : k.end_line + 1]),
            k.start_line,
            k.end_line,
        )
        for k in read_triton(text).kernels
    ]


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
            params = _expected(parse_params(sig.group(2)))
        found.append(
            SourceKernel(
                "request", name.group("name") if name else "", req, i, j - 1, params=params
            )
        )
        i = j
    return found


def ptx_entries(text: str) -> list[SourceKernel]:
    module, _ = parse_ptx(text)
    return [
        SourceKernel(
            "ptx",
            f.name,
            text,
            f.span.start.line,
            f.span.end.line,
        )
        for f in module.entries
    ]


def sources_in(text: str, language: str) -> list[SourceKernel]:
    """Everything lowerable in a buffer of ``language`` ("cuda", "python", "ptx")."""
    if language == "cuda":
        return cuda_kernels(text) + requests(text)
    if language == "python":
        return triton_kernels(text) + requests(text)
    if language == "ptx":
        return ptx_entries(text) + requests(text)
    return []
