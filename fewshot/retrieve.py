"""Pick the few-shot examples most relevant to a request (CUDA, Triton or plain language).

Scoring is deliberately simple and explainable: words of the request that match an example's
keywords, plus code patterns that mark a kernel family (``__shfl`` or ``tl.sum`` → reduction,
``__shared__`` tiles or ``tl.dot`` → matmul, ``a[i] = b[i] + …`` → elementwise, ``[i-1]`` /
``[i+1]`` neighbours → stencil, ``.T`` or ``[x][y]`` ↔ ``[y][x]`` → transpose). The family
weighs more than any one keyword, so an elementwise request gets elementwise examples, not a
reduction that happens to share a word. Ties keep the library order, so the same request
always gets the same prompt (reproducible lowering).

The example being asked for is never returned: names in ``exclude=``, and the kernel the
request itself defines (``__global__ void NAME``, ``.entry NAME``, ``def NAME``) — a model shown
the answer learns nothing about whether it can write it. While a task suite is evaluated
(``ptxls eval``), every kernel of the suite and the library kernels that compute the same thing
are left out as well (``evaluating``), so no task is ever another task's example.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ptxls.frontend.cuda import find_kernels
from ptxls.frontend.ptx import find_entries
from ptxls.frontend.triton import read_triton

from .library import Example, load_examples

# Code patterns that point at a family, with their weight. Regexes on the raw request text.
_FAMILY_PATTERNS: dict[str, list[tuple[str, float]]] = {
    "reduction": [
        (r"__shfl\w*_sync|shfl\.sync", 3.0),
        (r"atomicAdd|red\.global|atom\.", 2.0),
        (r"\btl\.(sum|max|min|reduce)\b|\.sum\(|\breduc", 3.0),
        (r"\+=\s*\w+\s*\[", 1.0),
        (r"\b(sum|mean|norm|softmax|max|argmax|total|dot)\b", 1.5),
    ],
    "matmul": [
        (r"\btl\.dot\b|\bmatmul\b|\bgemm\b|\bmatrix multipl", 4.0),
        (r"__shared__\s+\w+\s+\w+\s*\[[^\]]+\]\s*\[", 2.0),
        (r"blockIdx\.y|program_id\(\s*(axis\s*=\s*)?1\s*\)", 1.0),
        (r"\bfor\s*\(\s*int\s+k\b", 1.0),
    ],
    "elementwise": [
        (r"\w+\s*\[\s*i\s*\]\s*=\s*\w+\s*\[\s*i\s*\]", 2.0),
        (r"\belementwise\b|\bpointwise\b|\bvector add\b|\bsaxpy\b|\bscale\b|\brelu\b", 2.0),
        (r"\bgelu\b|\bsilu\b|\bsigmoid\b|\bactivation\b|\bbias add\b", 2.0),
        (r"tl\.load\(.*\)\s*\+\s*tl\.load", 1.0),
    ],
    "transpose": [
        (r"\btranspose\b|\bpermute\b|\bswap axes\b|\.T\b|\.t\(\)", 4.0),
        (r"\[\s*(\w+)\s*\]\s*\[\s*(\w+)\s*\][^;]*=[^;]*\[\s*\2\s*\]\s*\[\s*\1\s*\]", 3.0),
        (
            r"\w+\s*\[\s*(\w+)\s*\*\s*\w+\s*\+\s*(\w+)\s*\]\s*=\s*\w+\s*\[\s*\2\s*\*\s*\w+\s*\+\s*\1\s*\]",
            3.0,
        ),
    ],
    "stencil": [
        (r"\bstencil\b|\blaplac\w*|\bjacobi\b|\bfinite difference\b|\bblur\b|\bhalo\b", 4.0),
        (r"\[\s*\w+\s*-\s*1\s*\].*\[\s*\w+\s*\+\s*1\s*\]", 3.0),
        (r"\[\s*\w+\s*[-+]\s*\w+\s*\]\s*\+\s*\w+\s*\[\s*\w+\s*[-+]\s*\w+\s*\]", 1.0),
        # neighbours in a flattened 2-D index: x[(i - 1) * nx + j], x[i * nx + j + 1]
        (r"\(\s*\w+\s*-\s*1\s*\)\s*\*\s*\w+.*\(\s*\w+\s*\+\s*1\s*\)\s*\*\s*\w+", 3.0),
        (r"\w+\s*-\s*1\s*\].*\w+\s*\+\s*1\s*\]", 2.0),
    ],
}

_WORD = re.compile(r"[a-z][a-z0-9_]+")

# Kernels of a task suite under evaluation: never picked as examples while it runs.
_evaluated: list[frozenset[str]] = []


@contextlib.contextmanager
def evaluating(names: Iterable[str]) -> Iterator[None]:
    """Leave ``names`` out of every pick while the block runs (``ptxls eval``: the whole suite)."""
    _evaluated.append(frozenset(names))
    try:
        yield
    finally:
        _evaluated.pop()


def evaluated_names() -> frozenset[str]:
    return frozenset().union(*_evaluated) if _evaluated else frozenset()


@dataclass(frozen=True)
class Scored:
    example: Example
    score: float
    why: tuple[str, ...]  # what matched, for the transcript


def defined_kernels(request: str) -> set[str]:
    """Names of the kernels the request itself defines (CUDA, PTX or Triton), read by the
    project's own readers: a kernel being lowered must not come back as its own example."""
    return (
        {k.name for k in find_kernels(request)}
        | {e.name for e in find_entries(request)}
        | {k.name for k in read_triton(request).kernels}
    )


def score_examples(
    request: str, examples: list[Example] | None = None, exclude: Iterable[str] = ()
) -> list[Scored]:
    examples = load_examples() if examples is None else examples
    skip = set(exclude) | defined_kernels(request) | evaluated_names()
    examples = [e for e in examples if e.name not in skip]
    text = request.lower()
    words = set(_WORD.findall(text))
    scored = []
    for ex in examples:
        score, why = 0.0, []
        for kw in ex.keywords:
            hit = kw in text if " " in kw else kw in words
            if hit:
                score += 1.0
                why.append(f"keyword '{kw}'")
        if ex.name.lower() in text:
            score += 2.0
            why.append(f"name '{ex.name}'")
        for pattern, weight in _FAMILY_PATTERNS.get(ex.family, []):
            if re.search(pattern, request, re.IGNORECASE):
                score += weight
                why.append(f"{ex.family} pattern /{pattern}/")
        scored.append(Scored(ex, score, tuple(why)))
    order = {ex.name: i for i, ex in enumerate(examples)}
    scored.sort(key=lambda s: (-s.score, order[s.example.name]))
    return scored


def pick_examples(
    request: str,
    k: int = 2,
    examples: list[Example] | None = None,
    exclude: Iterable[str] = (),
) -> list[Example]:
    """The ``k`` best examples for ``request``, never one named in ``exclude`` nor the kernel
    the request defines. Something is always returned when the library is not empty: a
    zero-score request still gets the simplest complete kernel (elementwise, else the first),
    because one well-formed PTX file already fixes most syntax slips."""
    if k <= 0:
        return []
    scored = score_examples(request, examples, exclude)
    if not scored:
        return []
    picked = [s.example for s in scored if s.score > 0][:k]
    if not picked:
        # the simplest elementwise kernel: the shortest PTX of that family
        elementwise = [s.example for s in scored if s.example.family == "elementwise"]
        fallback = min(elementwise, key=lambda e: len(e.ptx)) if elementwise else None
        picked = [fallback or scored[0].example]
    return picked
