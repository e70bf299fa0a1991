"""Large element-wise numpy work split into fixed chunks over threads (numpy's ufuncs release
the GIL). Used where a benchmark size makes one core the bottleneck: the numpy reference's
operators and functions, the conversions around it, and the element-by-element comparison.

Exact by construction: an element-wise operation on a chunk gives the same elements as on the
whole array (numpy's type promotion looks at dtypes, not values), and the chunks are fixed
(``CHUNK``), so the result depends neither on the thread count nor on the scheduling. Anything
that is not plainly element-wise (broadcasting between arrays of different shapes, non-contiguous
views, lists) is left to the caller's one-call path: ``elementwise`` returns None.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import numpy as np

T = TypeVar("T")
PARALLEL_MIN = 1 << 22  # elements: below this one call is as fast (thread hand-offs cost ~µs)
CHUNK = 1 << 20
_POOL: ThreadPoolExecutor | None = None


def pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(min(16, os.cpu_count() or 1), thread_name_prefix="elementwise")
    return _POOL


def threads() -> int:
    """Worker threads; 1 (everything in one call) on a machine of fewer than 4 cores, where the
    hand-offs cost more than the split gains."""
    cores = os.cpu_count() or 1
    return min(16, cores) if cores >= 4 else 1


def chunks(size: int) -> list[slice]:
    return [slice(lo, min(lo + CHUNK, size)) for lo in range(0, size, CHUNK)]


def spans(size: int) -> list[slice]:
    """``range(size)`` as one span, or as ``CHUNK``-sized spans from ``PARALLEL_MIN`` up."""
    if threads() == 1 or size < PARALLEL_MIN:
        return [slice(0, size)]
    return chunks(size)


def map_spans(fn: Callable[[slice], T], parts: list[slice]) -> list[T]:
    """``fn(s)`` for each span, on threads when there are several, in order, under the calling
    thread's numpy error settings."""
    if len(parts) == 1:
        return [fn(parts[0])]
    err = np.geterr()

    def run(s: slice) -> T:
        with np.errstate(**err):
            return fn(s)

    return list(pool().map(run, parts))


def _scalar(x) -> bool:
    return isinstance(x, int | float | complex | bool | np.generic) or (
        isinstance(x, np.ndarray) and x.ndim == 0
    )


def elementwise(fn: Callable, *operands) -> np.ndarray | None:
    """``fn(*operands)`` computed chunk by chunk on threads, or None when it is not a plain
    element-wise case worth splitting: every array operand C-contiguous, of one shape and at
    least ``PARALLEL_MIN`` elements, every other operand a scalar, and ``fn`` returning one
    array of that shape and one dtype for every chunk."""
    if threads() == 1:
        return None
    arrays = [x for x in operands if isinstance(x, np.ndarray) and x.ndim > 0]
    if not arrays or len(arrays) + sum(map(_scalar, operands)) != len(operands):
        return None
    shape, size = arrays[0].shape, arrays[0].size
    if size < PARALLEL_MIN or any(a.shape != shape or not a.flags.c_contiguous for a in arrays):
        return None
    flat = [x.reshape(-1) if isinstance(x, np.ndarray) and x.ndim > 0 else x for x in operands]

    def part(s: slice):
        return fn(*[x[s] if isinstance(x, np.ndarray) and x.ndim > 0 else x for x in flat])

    head = chunks(size)[0]
    err = np.geterr()
    first = part(head)
    if not isinstance(first, np.ndarray) or first.shape != (head.stop,):
        return None
    out = np.empty(size, first.dtype)
    out[head] = first
    mixed: list[bool] = []

    def rest(s: slice) -> None:
        with np.errstate(**err):
            got = part(s)
        if (
            not isinstance(got, np.ndarray)
            or got.dtype != first.dtype
            or got.shape != (s.stop - s.start,)
        ):
            mixed.append(True)
            return
        out[s] = got

    list(pool().map(rest, chunks(size)[1:]))
    if mixed:
        return None
    return out.reshape(shape)
