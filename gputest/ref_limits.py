"""What each numpy call a ``ref:`` reference may make creates and costs, worked out from its
arguments *before* numpy runs.

The evaluator (``numpy_ref.py``) used to look at ``args[0]``/``args[1]`` by position, so the
keyword forms of the same calls (``outer(a=x, b=x)``, ``arange(start=0, stop=N)``,
``stack(arrays=[...])``, ``dot(a=x, b=x)``) and functions whose result outgrows their argument
(``tril(ones(20000))`` is 20000², ``inner`` of two column vectors is N²) allocated gigabytes
before the size check ran. Here every allowed function and array method is one entry of
``FUNCTION_RULES``/``METHOD_RULES``:

- ``params``: its signature as numpy takes it (names and order as ``inspect.signature(np.NAME)``
  gives them on numpy 2; ``tests/test_probe_trust3_ref.py`` compares them), so a call in any
  form — positional, keyword, a mix — is bound to the same parameters numpy will bind it to;
  the call numpy then gets is rebuilt from that binding (``Bound.call_args``), so what was
  measured is what runs;
- ``result``: the number of elements of the largest array the call creates, from the bound
  arguments' shapes and values;
- ``work``: how many element operations (or multiply-adds) it does, where that exceeds the
  result (a sort is n·log n, ``diff`` of order k is k passes, a matrix product m·k·n).

A call whose arguments do not bind, that passes ``out=``/``like=``/``device=``/``signature=``,
or whose size or work is over the limits is refused with a message, and numpy never sees it.
Indexing is the same: ``index_result`` bounds what ``a[i, j]`` creates from the shapes of its
index arrays before numpy broadcasts them. The binding and the shape reading are in
``ref_binding.py``; this module is the table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .ref_binding import (
    Bound,
    LimitError,
    Rule,
    bcast,
    bind,
    count,
    index_result,
    log2_ceil,
    shape_count,
    shape_of,
    whole,
)

# dtypes whose matrix products BLAS computes (fast); every other product is numpy's own loop,
# ~0.1-0.8 G multiply-adds per second (an int64 2048³ product took 70 s).
BLAS_KINDS = frozenset({np.dtype(t) for t in ("f4", "f8", "c8", "c16")})

__all__ = ["FUNCTION_RULES", "METHOD_RULES", "Cost", "LimitError", "call_cost", "index_result",
           "product"]  # fmt: skip


# -- results and work, per family ---------------------------------------------------------------


def _first(b: Bound) -> int:
    for key in ("a", "x", "m", "array", "A", "self", "value", "object", "condition"):
        if key in b.arguments:
            return count(b.get(key))
    raise LimitError("no array argument")


def _ufunc(b: Bound) -> int:
    ops = [b.get(k) for k in ("x", "x1", "x2") if k in b.arguments]
    where = b.get("where", True)
    return bcast(*ops, where if where is not True else None)


def _reduction(b: Bound) -> int:
    where = b.get("where", None)
    return bcast(b.get("a"), None if where is True else where, b.get("mean"))


def _arange(b: Bound) -> int:
    start, stop, step = b.get("start"), b.get("stop"), b.get("step")
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    for v in (start, stop, step):
        if count(v) != 1 or isinstance(v, complex | np.complexfloating):
            raise LimitError("arange takes real numbers")
    try:
        lo, hi, st = (float(np.asarray(v).reshape(())) for v in (start, stop, step))
    except (TypeError, ValueError) as e:
        raise LimitError(f"arange: {e}") from None
    if st == 0 or not all(math.isfinite(x) for x in (lo, hi, st)):
        raise LimitError("arange needs a finite, non-zero step")
    return max(0, math.ceil((hi - lo) / st))


def _linspace(b: Bound) -> int:
    return whole(b.get("num", 50), "num") * bcast(b.get("start"), b.get("stop"))


def _full_like(b: Bound) -> int:
    shape = b.get("shape")
    return shape_count(shape) if shape is not None else count(b.get("a"))


def _bincount(b: Bound) -> int:
    x = np.asarray(b.get("x"))
    if x.dtype.kind not in "biu":
        raise LimitError("bincount counts whole numbers (x.astype(int64))")
    top = int(x.max()) + 1 if x.size else 0
    return max(top, whole(b.get("minlength", 0) or 0, "minlength"), x.size)


def _repeat(b: Bound) -> int:
    a, reps = b.get("a"), b.get("repeats")
    r = np.asarray(reps)
    if r.dtype.kind not in "biu":
        raise LimitError("repeats must be whole numbers")
    if r.size <= 1:
        return count(a) * max(0, int(r.reshape(-1)[0]) if r.size else 0)
    per = max(1, count(a) // max(1, r.size))
    return int(np.clip(r, 0, None).sum()) * per


def _tile(b: Bound) -> int:
    return count(b.get("A")) * shape_count(b.get("reps"))


def _pad(b: Bound) -> int:
    shape = shape_of(b.get("array"))
    try:
        w = np.broadcast_to(np.asarray(b.get("pad_width"), dtype=np.int64), (len(shape), 2))
    except (ValueError, TypeError) as e:
        raise LimitError(f"pad_width: {e}") from None
    if (w < 0).any():
        raise LimitError("pad widths cannot be negative")
    return math.prod(int(s) + int(lo) + int(hi) for s, (lo, hi) in zip(shape, w, strict=True))


def _tri(b: Bound) -> int:
    shape = shape_of(b.get("m"))
    return shape[0] * shape[0] if len(shape) == 1 else count(b.get("m"))  # 1-D: an N×N result


def _diff_result(b: Bound) -> int:
    a = count(b.get("a"))
    extra = [b.get(k) for k in ("prepend", "append") if b.get(k) is not None]
    return a + sum(max(count(e), a) for e in extra)  # a scalar is broadcast along the axis


def _diff_work(b: Bound) -> int:
    order = whole(b.get("n", 1), "n")
    if order < 0:
        raise LimitError("diff of a negative order")
    return _diff_result(b) * max(1, min(order, max(shape_of(b.get("a")) or (1,))))


def _parts(b: Bound) -> int:
    parts = b.get("arrays", b.get("tup"))
    if not isinstance(parts, list | tuple | np.ndarray):
        raise LimitError("a sequence of arrays is needed")
    return count(parts)


def _where(b: Bound) -> int:
    x, y = b.get("x"), b.get("y")
    if x is None and y is None:
        return count(b.get("condition")) * max(1, len(shape_of(b.get("condition"))))
    return bcast(b.get("condition"), x, y)


def _clip(b: Bound) -> int:
    bounds = [b.get(k) for k in ("a_min", "a_max", "min", "max")]
    return bcast(b.get("a", b.get("self")), *[v for v in bounds if v is not None])


def _sort_work(b: Bound) -> int:
    n = _first(b)
    return n * log2_ceil(n)


def _roll_work(b: Bound) -> int:
    return _first(b) * max(1, count(b.get("shift")))


def _matmul_shapes(a, b, name: str) -> tuple[int, int]:
    """(result elements, multiply-adds) of a product, as numpy defines each one."""
    sa, sb = shape_of(a), shape_of(b)
    if name == "outer":
        n = count(a) * count(b)
        return n, n
    if name == "vdot":
        return 1, count(a)
    if not sa or not sb:  # a scalar operand: an elementwise product
        if name == "matmul":
            raise LimitError("matmul of a scalar")
        n = bcast(a, b)
        return n, n
    if name == "inner":
        k = sa[-1]
        out = math.prod(sa[:-1]) * math.prod(sb[:-1])
        return out, out * k
    if name == "dot" and len(sb) > 1:
        k = sa[-1]
        out = math.prod(sa[:-1]) * math.prod(sb[:-2]) * sb[-1]
        return out, out * k
    if name == "dot":  # N-D · 1-D
        return math.prod(sa[:-1]), count(a)
    # matmul / @: batch dimensions broadcast, 1-D operands promoted
    ma = sa if len(sa) > 1 else (1, *sa)
    mb = sb if len(sb) > 1 else (*sb, 1)
    try:
        batch = math.prod(np.broadcast_shapes(ma[:-2], mb[:-2]))
    except ValueError as e:
        raise LimitError(str(e)) from None
    out = batch * ma[-2] * mb[-1]
    return out, out * ma[-1]


def product(a, b, name: str = "matmul") -> tuple[int, int, bool]:
    """(result elements, multiply-adds, computed by BLAS) of ``a @ b`` / dot / inner / ..."""
    out, macs = _matmul_shapes(a, b, name)
    try:
        dt = np.result_type(*(v for v in (a, b) if isinstance(v, np.ndarray | np.generic)))
    except TypeError:
        dt = np.dtype("O")
    return out, macs, dt in BLAS_KINDS and name != "outer"


def _product_rule(name: str) -> Rule:
    keys = ("a", "b") if name != "matmul" else ("x1", "x2")
    sig = {
        "dot": "a, b, out=None",
        "outer": "a, b, out=None",
        "inner": "a, b, /",
        "vdot": "a, b, /",
        "matmul": "x1, x2, /, out=None, *, casting='same_kind', order='K', dtype=None, subok=True",
    }[name]
    return Rule(
        sig,
        lambda b: _matmul_shapes(b.get(keys[0]), b.get(keys[1]), name)[0],
        lambda b: _matmul_shapes(b.get(keys[0]), b.get(keys[1]), name)[1],
        matmul=True,
    )


UFUNC_KW = "*, where=True, casting='same_kind', order='K', dtype=None, subok=True, signature=None"
U1 = Rule(f"x, /, out=None, {UFUNC_KW}", _ufunc)
U2 = Rule(f"x1, x2, /, out=None, {UFUNC_KW}", _ufunc)
DIVMOD = Rule(f"x1, x2, /, out=None, {UFUNC_KW}", lambda b: 2 * _ufunc(b))
SAME = _first  # a result no larger than the first argument
CONVERT = Rule("value=0, /", lambda b: count(b.get("value")))


def _red(params: str) -> Rule:
    return Rule(params, _reduction)


_UNARY = [
    "abs",
    "absolute",
    "exp",
    "exp2",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "sqrt",
    "cbrt",
    "square",
    "reciprocal",
    "sin",
    "cos",
    "tan",
    "arcsin",
    "arccos",
    "arctan",
    "sinh",
    "cosh",
    "tanh",
    "arcsinh",
    "arccosh",
    "arctanh",
    "sign",
    "floor",
    "ceil",
    "trunc",
    "rint",
    "isnan",
    "isinf",
    "isfinite",
    "logical_not",
    "bitwise_not",
    "invert",
]
_BINARY = [
    "power",
    "float_power",
    "arctan2",
    "hypot",
    "copysign",
    "fmod",
    "remainder",
    "mod",
    "maximum",
    "minimum",
    "fmax",
    "fmin",
    "logical_and",
    "logical_or",
    "logical_xor",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "left_shift",
    "right_shift",
]
_RED_MAX = "a, axis=None, out=None, keepdims=NV, initial=NV, where=NV"
_RED_SUM = "a, axis=None, dtype=None, out=None, keepdims=NV, initial=NV, where=NV"
_RED_VAR = (
    "a, axis=None, dtype=None, out=None, ddof=0, keepdims=NV, *, where=NV, mean=NV, correction=NV"
)
_CONVERSIONS = "float16 float32 float64 int8 int16 int32 int64 uint8 uint16 uint32 uint64 bool_"

FUNCTION_RULES: dict[str, Rule] = {
    **{n: U1 for n in _UNARY},
    **{n: U2 for n in _BINARY},
    "divmod": DIVMOD,
    "sum": _red(_RED_SUM),
    "prod": _red(_RED_SUM),
    "max": _red(_RED_MAX),
    "min": _red(_RED_MAX),
    "amax": _red(_RED_MAX),
    "amin": _red(_RED_MAX),
    "mean": _red("a, axis=None, dtype=None, out=None, keepdims=NV, *, where=NV"),
    "var": _red(_RED_VAR),
    "std": _red(_RED_VAR),
    "all": _red("a, axis=None, out=None, keepdims=NV, *, where=NV"),
    "any": _red("a, axis=None, out=None, keepdims=NV, *, where=NV"),
    "median": Rule("a, axis=None, out=None, overwrite_input=False, keepdims=False", SAME),
    "argmax": Rule("a, axis=None, out=None, *, keepdims=NV", SAME),
    "argmin": Rule("a, axis=None, out=None, *, keepdims=NV", SAME),
    "count_nonzero": Rule("a, axis=None, *, keepdims=False", SAME),
    "allclose": Rule(
        "a, b, rtol=1e-05, atol=1e-08, equal_nan=False",
        lambda b: bcast(b.get("a"), b.get("b"), b.get("rtol"), b.get("atol")),
    ),  # fmt: skip
    "isclose": Rule(
        "a, b, rtol=1e-05, atol=1e-08, equal_nan=False",
        lambda b: bcast(b.get("a"), b.get("b"), b.get("rtol"), b.get("atol")),
    ),  # fmt: skip
    "cumsum": Rule("a, axis=None, dtype=None, out=None", SAME),
    "cumprod": Rule("a, axis=None, dtype=None, out=None", SAME),
    "sort": Rule("a, axis=-1, kind=None, order=None, *, stable=None", SAME, _sort_work),
    "argsort": Rule("a, axis=-1, kind=None, order=None, *, stable=None", SAME, _sort_work),
    "dot": _product_rule("dot"),
    "matmul": _product_rule("matmul"),
    "vdot": _product_rule("vdot"),
    "inner": _product_rule("inner"),
    "outer": _product_rule("outer"),
    "transpose": Rule("a, axes=None", SAME),
    "reshape": Rule("a, /, shape=None, order='C', *, copy=None", SAME),
    "ravel": Rule("a, order='C'", SAME),
    "concatenate": Rule("arrays, /, axis=0, out=None, *, dtype=None, casting='same_kind'", _parts),
    "stack": Rule("arrays, axis=0, out=None, *, dtype=None, casting='same_kind'", _parts),
    "hstack": Rule("tup, *, dtype=None, casting='same_kind'", _parts),
    "vstack": Rule("tup, *, dtype=None, casting='same_kind'", _parts),
    "zeros": Rule(
        "shape, dtype=None, order='C', *, device=None, like=None",
        lambda b: shape_count(b.get("shape")),
    ),  # fmt: skip
    "ones": Rule(
        "shape, dtype=None, order='C', *, device=None, like=None",
        lambda b: shape_count(b.get("shape")),
    ),  # fmt: skip
    "full": Rule(
        "shape, fill_value, dtype=None, order='C', *, device=None, like=None",
        lambda b: max(shape_count(b.get("shape")), count(b.get("fill_value"))),
    ),  # fmt: skip
    "zeros_like": Rule(
        "a, dtype=None, order='K', subok=True, shape=None, *, device=None", _full_like
    ),  # fmt: skip
    "ones_like": Rule(
        "a, dtype=None, order='K', subok=True, shape=None, *, device=None", _full_like
    ),  # fmt: skip
    "full_like": Rule(
        "a, fill_value, dtype=None, order='K', subok=True, shape=None, *, device=None",
        lambda b: max(_full_like(b), count(b.get("fill_value"))),
    ),
    "arange": Rule(
        "start, stop=None, step=None, *, dtype=None, device=None, like=None", _arange
    ),  # fmt: skip
    "linspace": Rule(
        "start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None",
        _linspace,
    ),
    "bincount": Rule("x, /, weights=None, minlength=0", _bincount),
    "flip": Rule("m, axis=None", SAME),
    "roll": Rule("a, shift, axis=None", SAME, _roll_work),
    "pad": Rule("array, pad_width, mode='constant', **kwargs", _pad),
    "tril": Rule("m, k=0", _tri),
    "triu": Rule("m, k=0", _tri),
    "diff": Rule("a, n=1, axis=-1, prepend=NV, append=NV", _diff_result, _diff_work),
    "nan_to_num": Rule("x, copy=True, nan=0.0, posinf=None, neginf=None", SAME),
    "round": Rule("a, decimals=0, out=None", SAME),
    "around": Rule("a, decimals=0, out=None", SAME),
    "fix": Rule("x, out=None", SAME),
    "where": Rule("condition, x=None, y=None, /", _where),
    "clip": Rule("a, a_min=NV, a_max=NV, out=None, *, min=NV, max=NV, **kwargs", _clip),
    "asarray": Rule("a, dtype=None, order=None, *, device=None, copy=None, like=None", SAME),
    "array": Rule(
        "object, dtype=None, *, copy=True, order='K', subok=False, ndmin=0, ndmax=0, like=None",
        SAME,
    ),
    "copy": Rule("a, order='K', subok=False", SAME),
    "broadcast_to": Rule(
        "array, shape, subok=False",
        lambda b: max(shape_count(b.get("shape")), count(b.get("array"))),
    ),  # fmt: skip
    "expand_dims": Rule("a, axis", SAME),
    "squeeze": Rule("a, axis=None", SAME),
    "swapaxes": Rule("a, axis1, axis2", SAME),
    "moveaxis": Rule("a, source, destination", SAME),
    "repeat": Rule("a, repeats, axis=None", _repeat),
    "tile": Rule("A, reps", _tile),
    **{n: CONVERT for n in _CONVERSIONS.split()},
}

# Array methods, ``x.NAME(...)``: the array is bound as ``self``.
_M_RED = "self, /, axis=None, dtype=None, out=None, keepdims=False, initial=NV, where=True"
_M_MAX = "self, /, axis=None, out=None, keepdims=False, initial=NV, where=True"
_M_VAR = "self, /, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=NV, correction=NV"


def _m_red(b: Bound) -> int:
    where = b.get("where", True)
    return bcast(b.get("self"), None if where is True else where, b.get("mean"))


def _m_same(b: Bound) -> int:
    return count(b.get("self"))


def _m_product(b: Bound) -> tuple[int, int]:
    return _matmul_shapes(b.get("self"), b.get("b"), "dot")


def _m_repeat(b: Bound) -> int:
    return _repeat(Bound({"a": b.get("self"), "repeats": b.get("repeats")}, (), {}))


METHOD_RULES: dict[str, Rule] = {
    "reshape": Rule("self, /, *shape, order='C', copy=None", _m_same),
    "astype": Rule("self, /, dtype, order='K', casting='unsafe', subok=True, copy=True", _m_same),
    "sum": Rule(_M_RED, _m_red),
    "prod": Rule(_M_RED, _m_red),
    "max": Rule(_M_MAX, _m_red),
    "min": Rule(_M_MAX, _m_red),
    "mean": Rule("self, /, axis=None, dtype=None, out=None, keepdims=False, *, where=True", _m_red),
    "var": Rule(_M_VAR, _m_red),
    "std": Rule(_M_VAR, _m_red),
    "any": Rule("self, /, axis=None, out=None, keepdims=False, *, where=True", _m_red),
    "all": Rule("self, /, axis=None, out=None, keepdims=False, *, where=True", _m_red),
    "argmax": Rule("self, /, axis=None, out=None, *, keepdims=False", _m_same),
    "argmin": Rule("self, /, axis=None, out=None, *, keepdims=False", _m_same),
    "cumsum": Rule("self, /, axis=None, dtype=None, out=None", _m_same),
    "cumprod": Rule("self, /, axis=None, dtype=None, out=None", _m_same),
    "transpose": Rule("self, /, *axes", _m_same),
    "ravel": Rule("self, /, order='C'", _m_same),
    "flatten": Rule("self, /, order='C'", _m_same),
    "copy": Rule("self, /, order='C'", _m_same),
    "clip": Rule("self, /, min=None, max=None, out=None, **kwargs", _clip),
    "dot": Rule(
        "self, /, b, out=None", lambda b: _m_product(b)[0], lambda b: _m_product(b)[1], matmul=True
    ),  # fmt: skip
    "round": Rule("self, /, decimals=0, out=None", _m_same),
    "squeeze": Rule("self, /, axis=None", _m_same),
    "swapaxes": Rule("self, /, axis1, axis2", _m_same),
    "repeat": Rule("self, /, repeats, axis=None", _m_repeat),
    "sort": Rule("self, /, axis=-1, kind=None, order=None, *, stable=None", _m_same, _sort_work),
    "argsort": Rule(
        "self, /, axis=-1, kind=None, order=None, *, stable=None", _m_same, _sort_work
    ),  # fmt: skip
    "item": Rule("self, /, *args", lambda b: 1),
}


@dataclass
class Cost:
    elements: int  # of the largest array the call creates
    work: int  # element operations or multiply-adds
    blas: bool = True  # for a product: computed by BLAS (fast) or numpy's own loop


def call_cost(name: str, args: list, kwargs: dict, *, method: bool = False) -> tuple[Cost, Bound]:
    """Bind a call (``method``: ``args[0]`` is the array) and say what it creates and costs.
    Raises LimitError for a call that does not bind or passes a refused keyword."""
    rules = METHOD_RULES if method else FUNCTION_RULES
    rule = rules.get(name)
    if rule is None:
        raise LimitError(f"{name}() has no size rule")
    b = bind(rule, name, args, kwargs)
    elements = int(rule.result(b))
    work = int(rule.work(b)) if rule.work else elements
    blas = True
    if rule.matmul:
        first = b.get("self", b.get("a", b.get("x1")))
        second = b.get("b", b.get("x2"))
        blas = product(first, second, "outer" if name == "outer" else "dot")[2]
    return Cost(elements, work, blas), b
