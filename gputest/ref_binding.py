"""How a ``ref:`` call is bound to its function's parameters, and how large the values it is
given are, without converting them: the machinery under ``ref_limits.py``'s rules.

- ``Rule.params`` is a signature in a small notation (``"a, /, axis=None, *, keepdims=NV"``;
  ``NV`` is numpy's "no value" default); ``bind`` binds a call to it exactly as Python would,
  refuses the keywords a reference never needs (``out=`` writes into a caller's array,
  ``like=``/``device=`` dispatch to other array libraries, ``signature=`` picks loops), and keeps
  the call numpy will get, rebuilt from the binding (``Bound.call_args``/``call_kwargs``).
- ``shape_of``/``count``/``bcast`` read shapes of arrays, scalars and (nested) lists without
  ``np.shape``/``np.asarray``, which would allocate the list's array.
- ``index_result`` bounds what ``a[index]`` creates from the shapes of the index alone.
"""

from __future__ import annotations

import ast
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


class _NoValue:
    """numpy's ``<no value>`` default: the parameter was not given."""

    def __repr__(self) -> str:
        return "NV"


_NV = _NoValue()
# Keywords a reference never needs and that reach outside the computation: out= writes into a
# caller's array, like=/device= dispatch to other array libraries, signature= picks loops.
REFUSED_KEYWORDS = frozenset({"out", "like", "device", "signature", "extobj"})


class LimitError(ValueError):
    """The call would be too large, or its arguments do not fit the function (message says)."""


def _signature(spec: str) -> inspect.Signature:
    """``"a, /, axis=None, *, keepdims=NV, **kwargs"`` -> an ``inspect.Signature``; defaults are
    Python literals (``NV``: numpy's no-value)."""
    params: list[inspect.Parameter] = []
    kind: inspect._ParameterKind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    for raw in (p.strip() for p in spec.split(",") if p.strip()):
        if raw == "/":
            params = [p.replace(kind=inspect.Parameter.POSITIONAL_ONLY) for p in params]
            continue
        if raw == "*":
            kind = inspect.Parameter.KEYWORD_ONLY
            continue
        if raw.startswith("**"):
            params.append(inspect.Parameter(raw[2:], inspect.Parameter.VAR_KEYWORD))
            continue
        if raw.startswith("*"):
            params.append(inspect.Parameter(raw[1:], inspect.Parameter.VAR_POSITIONAL))
            kind = inspect.Parameter.KEYWORD_ONLY
            continue
        name, eq, default = raw.partition("=")
        value: object
        if not eq:
            value = inspect.Parameter.empty  # required
        else:
            value = _NV if default == "NV" else ast.literal_eval(default)
        params.append(inspect.Parameter(name, kind, default=value))
    return inspect.Signature(params)


@dataclass
class Bound:
    """A call bound to its parameters: ``get(name)`` (None when not given) and the call numpy
    gets, rebuilt from the binding."""

    arguments: dict
    call_args: tuple
    call_kwargs: dict

    def get(self, name: str, default=None):
        v = self.arguments.get(name, _NV)
        return default if v is _NV else v


@dataclass(frozen=True)
class Rule:
    params: str
    result: Callable[[Bound], int]
    work: Callable[[Bound], int] | None = None
    matmul: bool = False  # work is multiply-adds, limited by the product budget

    def signature(self) -> inspect.Signature:
        return _signature(self.params)


def bind(rule: Rule, name: str, args: list, kwargs: dict) -> Bound:
    sig = rule.signature()
    try:
        b = sig.bind(*args, **kwargs)
    except TypeError as e:
        raise LimitError(f"{name}(): {e}") from None
    given = dict(b.arguments)
    extra = given.get("kwargs") if any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()
    ) else None  # fmt: skip
    for key in [*given, *(extra or {})]:
        value = given.get(key, (extra or {}).get(key))
        if key in REFUSED_KEYWORDS and value is not None:
            raise LimitError(f"{name}(): the argument '{key}' is not allowed in a reference")
    flat = {k: v for k, v in given.items() if k != "kwargs"}
    flat.update(extra or {})
    return Bound(flat, tuple(b.args), dict(b.kwargs))


# -- shapes of values, without converting them (np.shape(list) would allocate) ------------------


def shape_of(v) -> tuple[int, ...]:
    if isinstance(v, np.ndarray | np.generic):
        return tuple(v.shape)
    if isinstance(v, list | tuple):
        if not v:
            return (0,)
        inner = [shape_of(x) for x in v]
        return (len(v), *inner[0]) if all(s == inner[0] for s in inner) else (len(v),)
    return ()


def count(v) -> int:
    """Elements ``v`` holds (a list of arrays: all of them)."""
    if isinstance(v, np.ndarray | np.generic):
        return int(v.size)
    if isinstance(v, list | tuple):
        return sum(count(x) for x in v)
    return 1


def bcast(*values) -> int:
    shapes = [shape_of(v) for v in values if v is not None]
    try:
        return math.prod(np.broadcast_shapes(*shapes)) if shapes else 1
    except ValueError as e:
        raise LimitError(str(e)) from None


def whole(v, what: str) -> int:
    try:
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError
        return int(v)
    except (TypeError, ValueError, OverflowError):
        raise LimitError(f"{what} must be a whole number, not {type(v).__name__}") from None


def shape_count(shape) -> int:
    """Elements of an array of ``shape`` (an int or a sequence of ints)."""
    if isinstance(shape, np.ndarray):
        shape = shape.tolist() if shape.size <= 64 else None
    if isinstance(shape, int | np.integer | float):
        return max(0, whole(shape, "a size"))
    if isinstance(shape, list | tuple) and len(shape) <= 64:
        return math.prod(max(0, whole(s, "a size")) for s in shape)
    raise LimitError("a shape must be a whole number or a short sequence of them")


def log2_ceil(n: int) -> int:
    return max(1, n.bit_length())


# -- indexing ------------------------------------------------------------------------------------


def index_result(base_shape: tuple[int, ...], index) -> int:
    """Elements ``a[index]`` creates (an upper bound), from the shapes alone: basic slices give
    their lengths, integer index arrays (lists, tuples of them: fancy indexing) broadcast
    together, a boolean mask selects at most its size. Raises LimitError for index arrays whose
    shapes do not broadcast (numpy would refuse them, after building them)."""
    parts = list(index) if isinstance(index, tuple) else [index]
    dims = list(base_shape)
    fancy: list[tuple[int, ...]] = []
    kept: list[int] = []
    pos = 0
    consumed = sum(
        len(shape_of(p)) if _is_mask(p) else (0 if p is None or p is Ellipsis else 1) for p in parts
    )
    for p in parts:
        if p is Ellipsis:
            for _ in range(max(0, len(dims) - consumed)):
                kept.append(dims[pos] if pos < len(dims) else 1)
                pos += 1
            consumed = len(dims)  # one Ellipsis only; a second is numpy's error
        elif p is None:
            kept.append(1)
        elif isinstance(p, slice):
            size = dims[pos] if pos < len(dims) else 0
            try:
                kept.append(len(range(*p.indices(size))))
            except (TypeError, ValueError) as e:
                raise LimitError(f"slice: {e}") from None
            pos += 1
        elif _is_mask(p):
            fancy.append((count(p),))
            pos += len(shape_of(p))
        elif isinstance(p, list | tuple | np.ndarray):
            fancy.append(shape_of(p))
            pos += 1
        else:  # an integer (numpy checks its range)
            pos += 1
    kept += dims[pos:]
    try:
        fancy_n = math.prod(np.broadcast_shapes(*fancy)) if fancy else 1
    except ValueError as e:
        raise LimitError(str(e)) from None
    return fancy_n * math.prod(kept)


def _is_mask(p) -> bool:
    return isinstance(p, np.ndarray) and p.dtype == np.bool_
