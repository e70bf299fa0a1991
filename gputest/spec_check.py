"""Checks of a whole spec before anything runs: every expression evaluates for every size, no
buffer is absurdly large, and the numpy reference is inside the ref language (or the person
trusts the workspace). Specs come from files in cloned repositories, so a spec that would ask
the worker for 10**12 elements, or a reference that walks ``__subclasses__``, is refused here
with a message that names the problem, before a GPU worker or a compiler starts."""

from __future__ import annotations

import math

from . import numpy_ref
from .exprs import ExprError, evaluate_int
from .launch import launch_dims, scalar_env
from .spec import SpecProblem, TestSpec

MAX_SIZE = 1 << 31  # the problem size n
MAX_ELEMENTS = 1 << 31  # per buffer
MAX_BUFFER_BYTES = 32 << 30  # all buffers of one case, device and host alike
MAX_SIZES = 256  # cases in one test: the library uses a handful; 10**6 would run for days
MAX_TIMING_RUNS = 10_000  # timed launches per case (20 by default)
TRUST_HINT = (
    "ptxls runs a reference outside its restricted numpy language only in a trusted workspace: "
    "trust the folder in VS Code (other editors: initializationOptions.trustedWorkspace), or "
    "pass --trust to ptxls test"
)


def check_spec(spec: TestSpec, *, trusted: bool = False) -> list[SpecProblem]:
    """Problems that mean the test must not start. Cheap and bounded (no eval, no arrays)."""
    from .dtypes import DTYPES

    problems: list[SpecProblem] = []
    if spec.tol is not None and not (
        isinstance(spec.tol, int | float) and math.isfinite(spec.tol) and spec.tol >= 0
    ):
        # A spec.json may say NaN (Python's json reads it): 'err > NaN' is never true, so
        # every element of every output would pass.
        return [SpecProblem(f"tolerance {spec.tol!r} is not a finite number ≥ 0")]
    if len(spec.sizes) > MAX_SIZES:
        return [SpecProblem(f"{len(spec.sizes)} sizes (at most {MAX_SIZES})")]
    if not (_whole(spec.timing_runs) and 1 <= spec.timing_runs <= MAX_TIMING_RUNS):
        return [SpecProblem(f"runs {spec.timing_runs!r} is out of range 1..{MAX_TIMING_RUNS}")]
    if spec.seed is not None and not (_whole(spec.seed) and 0 <= spec.seed < 1 << 64):
        return [SpecProblem(f"seed {spec.seed!r} is not a whole number in 0..2**64-1")]
    for n in spec.sizes:
        if not _whole(n) or not 0 <= n <= MAX_SIZE:
            problems.append(SpecProblem(f"size {n} is out of range 0..{MAX_SIZE}"))
            return problems
    for n in spec.sizes:
        try:
            env = scalar_env(spec, n)
            launch_dims(spec, env)
            total = 0
            for p in spec.params:
                if not p.is_pointer:
                    continue
                length = evaluate_int(p.length, env)
                if length > MAX_ELEMENTS:
                    problems.append(SpecProblem(
                        f"buffer '{p.name}' would have {length} elements at n={n} "
                        f"(at most {MAX_ELEMENTS})"))  # fmt: skip
                    return problems
                dt = DTYPES.get(p.dtype)
                total += max(0, length) * (dt.itemsize if dt else 8)
            if total > MAX_BUFFER_BYTES:
                problems.append(SpecProblem(
                    f"the buffers would take {total / 2**30:.1f} GiB at n={n} "
                    f"(at most {MAX_BUFFER_BYTES >> 30} GiB)"))  # fmt: skip
                return problems
        except (ExprError, ValueError, TypeError, ZeroDivisionError, OverflowError) as e:
            problems.append(SpecProblem(f"at n={n}: {e}"))
            return problems
    if spec.numpy_ref is not None and not isinstance(spec.numpy_ref, str):
        problems.append(SpecProblem("the numpy reference is not text"))
    elif spec.numpy_ref and not trusted:
        names = {p.name for p in spec.params} | {"n"}
        try:
            numpy_ref.check(spec.numpy_ref, names)
        except numpy_ref.RefError as e:
            problems.append(SpecProblem(f"{e} — {TRUST_HINT}" if e.refused else str(e)))
    return problems


def _whole(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)
