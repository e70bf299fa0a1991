"""A GPU test's inputs and its numpy reference (gputest/harness.py runs them): the inputs drawn
from the case's seed, the reference run over float64 copies of them in numpy_ref's restricted
evaluator and rounded to each output's type. ``gputest.harness`` re-exports both."""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from . import numpy_ref, parallel
from .dtypes import DTYPES, from_float64, random_values, to_float64
from .spec import ParamSpec


def _inputs(p: ParamSpec, length: int, rng: np.random.Generator) -> np.ndarray:
    dt = DTYPES[p.dtype]
    if p.range and not dt.is_float:
        info = np.iinfo(dt.storage)
        lo, hi = max(int(p.range[0]), info.min), min(int(p.range[1]), info.max)
        if length < parallel.PARALLEL_MIN:
            return rng.integers(lo, hi, length, endpoint=True).astype(dt.storage)
        # A benchmark size: drawn in fixed chunks on threads, each chunk's generator seeded by
        # (one number from the case's generator, the chunk's start), like dtypes.random_values for
        # floats: the values depend on the seed alone.
        base, v = int(rng.integers(2**63)), np.empty(length, dt.storage)

        def fill(s: slice) -> None:
            gen = np.random.default_rng([base, s.start])
            v[s] = gen.integers(lo, hi, s.stop - s.start, endpoint=True, dtype=dt.storage)

        parallel.map_spans(fill, parallel.chunks(length))
        return v
    return random_values(dt, length, rng)


def starts_unwritten(p: ParamSpec) -> bool:
    """A pure output (role "out"): the poison the harness fills it with is not a value the kernel
    may use, so on the emulator its bytes start every launch unwritten and a read of one before
    the kernel wrote it is an ``uninitialized-global`` warning (``emulator/device.name_buffer``
    for the test, ``debugger/case.py`` for a debugging run)."""
    return p.is_pointer and p.role == "out"


def numpy_reference(
    spec, host_inputs, lengths, env, expr: str, *, trusted: bool = False
) -> dict[str, np.ndarray]:
    """Run 'c = a + b; d = sqrt(c)' over float64 copies of the inputs; round to each output's
    type. The reference is text from the file under test, so it runs in numpy_ref's restricted
    evaluator (never eval); ``trusted`` (the person trusts the workspace) lets a reference the
    evaluator refuses run as Python over numpy."""
    names: dict = dict(env)
    for p in spec.params:
        if p.is_pointer:
            dt = DTYPES[p.dtype]
            names[p.name] = (
                _on_cores(functools.partial(to_float64, dt), host_inputs[p.name])
                if p.name in host_inputs
                else np.zeros(lengths[p.name])
            )
    try:
        out = numpy_ref.run(expr, names, trusted=trusted)
    except numpy_ref.RefError as e:
        raise ValueError(str(e)) from None
    result = {}
    for p in spec.params:
        if p.role in ("out", "inout"):
            if p.name not in out:
                raise ValueError(f"the reference '{expr}' does not assign output '{p.name}'")
            dt = DTYPES[p.dtype]
            values = np.broadcast_to(np.asarray(out[p.name], dtype=np.float64), (lengths[p.name],))
            result[p.name] = _on_cores(
                functools.partial(from_float64, dt), np.ascontiguousarray(values)
            )
    return result


def _on_cores(convert: Callable[[np.ndarray], np.ndarray], raw: np.ndarray) -> np.ndarray:
    """An element-wise conversion, chunked over threads at benchmark sizes (gputest/parallel.py)."""
    par = parallel.elementwise(convert, raw)
    return par if par is not None else convert(raw)
