"""f16 / bf16 arithmetic, scalar and packed (f16x2, bf16x2), as PTX defines it.

Operands are BIT PATTERNS: uint16 arrays for ``f16``/``bf16``, uint32 arrays for ``f16x2``/
``bf16x2`` (element 0 in the low 16 bits). ``t`` names the PTX type. Each element is computed
exactly in float64 (sums and products of halves are exact there; fma gets its rest from
TwoSum) and rounded once to the format with ``rnd``.

Modifiers: ``ftz`` (f16 only in PTX: subnormal inputs/results → sign-preserving zero),
``sat`` (clamp to [0, 1], NaN → +0), ``relu`` (negative → +0, NaN → canonical NaN).
A NaN result is the canonical NaN 0x7fff (per element).
"""

from __future__ import annotations

import numpy as np

from .formats import CANON_NAN, decode, encode, join2, split2
from .rounding import BF16, F16, round_pair, two_sum

_SMALLEST_NORMAL = {"f16": 2.0**-14, "bf16": 2.0**-126}


def _kind(t: str) -> str:
    k = t.removesuffix("x2")
    if k not in ("f16", "bf16"):
        raise ValueError(f"not a half type: {t!r}")
    return k


def _elementwise(t: str, fn, *ops):
    """Apply fn(kind, *uint16 arrays) → uint16 per element; x2 types run it per half."""
    kind = _kind(t)
    if t.endswith("x2"):
        halves = [split2(o) for o in ops]
        lo = fn(kind, *(h[0] for h in halves))
        hi = fn(kind, *(h[1] for h in halves))
        return join2(lo, hi)
    return fn(kind, *(np.asarray(o).astype(np.uint16) for o in ops))


def _flush(v: np.ndarray, kind: str) -> np.ndarray:
    tiny = _SMALLEST_NORMAL[kind]
    with np.errstate(invalid="ignore"):
        return np.where((np.abs(v) < tiny) & (v != 0), np.copysign(0.0, v), v)


def _post(r: np.ndarray, kind: str, ftz: bool, sat: bool, relu: bool) -> np.ndarray:
    if ftz:
        r = _flush(r, kind)
    with np.errstate(invalid="ignore"):
        if sat:
            r = np.where(np.isnan(r) | (r <= 0), 0.0, np.minimum(r, 1.0))
        if relu:
            r = np.where(~np.isnan(r) & (r <= 0), 0.0, r)
    return encode(r, kind)


def _fmt(kind):
    return F16 if kind == "f16" else BF16


def _f16_rn_fast(op: str, xs):
    """f16 round-to-nearest without the pair machinery: numpy's float16 add/sub/mul compute
    in float32 and round once more, which is exact rounding (24 >= 2*11 + 2 bits); fma sums
    in float64, which is exact unless the exponents span more than 53 bits (then the pair
    is rounded exactly, for those lanes only)."""
    v = [x.view(np.float16) for x in xs]
    with np.errstate(all="ignore"):
        if op == "add":
            return (v[0] + v[1]).astype(np.float64)
        if op == "sub":
            return (v[0] - v[1]).astype(np.float64)
        if op == "mul":
            return (v[0] * v[1]).astype(np.float64)
        p = v[0].astype(np.float64) * v[1].astype(np.float64)  # exact
        s, e = two_sum(p, v[2].astype(np.float64))
        r = s.astype(np.float16).astype(np.float64)  # right wherever s is exact (e == 0)
    inexact = np.flatnonzero((e != 0) & np.isfinite(s))
    if inexact.size:
        r[inexact] = round_pair(s[inexact], e[inexact], F16, "rn")
    return r


def _arith(op: str, rnd: str, ftz: bool, sat: bool, relu: bool):
    def fn(kind, *xs):
        if kind == "f16" and rnd == "rn" and not ftz:
            return _post(_f16_rn_fast(op, xs), kind, ftz, sat, relu)
        v = [decode(x, kind) for x in xs]
        if ftz:
            v = [_flush(x, kind) for x in v]
        with np.errstate(all="ignore"):
            if op == "add":
                s, e = two_sum(v[0], v[1])
                zero_pair = (v[0], v[1])
            elif op == "sub":
                s, e = two_sum(v[0], -v[1])
                zero_pair = (v[0], -v[1])
            elif op == "mul":
                s, e = v[0] * v[1], np.zeros_like(v[0])
                zero_pair = None
            else:  # fma: the product of two halves is exact in float64
                p = v[0] * v[1]
                s, e = two_sum(p, v[2])
                zero_pair = (p, v[2])
            e = np.where(np.isfinite(s), e, 0.0)
        r = round_pair(s, e, _fmt(kind), rnd)
        if rnd == "rm" and zero_pair is not None:  # only an EXACT zero sum becomes -0
            x, y = zero_pair
            both_plus = (x == 0) & (y == 0) & ~np.signbit(x) & ~np.signbit(y)
            r = np.where((s == 0) & (r == 0) & ~both_plus, -0.0, r)
        return _post(r, kind, ftz, sat, relu)

    return fn


@np.errstate(all="ignore")
def add(a, b, t: str, rnd: str = "rn", ftz: bool = False, sat: bool = False) -> np.ndarray:
    """``add{.rnd}{.ftz}{.sat}.{f16,f16x2,bf16,bf16x2}``."""
    return _elementwise(t, _arith("add", rnd, ftz, sat, False), a, b)


@np.errstate(all="ignore")
def sub(a, b, t: str, rnd: str = "rn", ftz: bool = False, sat: bool = False) -> np.ndarray:
    """``sub{.rnd}{.ftz}{.sat}.{f16,f16x2,bf16,bf16x2}``."""
    return _elementwise(t, _arith("sub", rnd, ftz, sat, False), a, b)


@np.errstate(all="ignore")
def mul(a, b, t: str, rnd: str = "rn", ftz: bool = False, sat: bool = False) -> np.ndarray:
    """``mul{.rnd}{.ftz}{.sat}.{f16,f16x2,bf16,bf16x2}``."""
    return _elementwise(t, _arith("mul", rnd, ftz, sat, False), a, b)


@np.errstate(all="ignore")
def fma(a, b, c, t: str, rnd: str = "rn", ftz: bool = False, sat: bool = False,
        relu: bool = False) -> np.ndarray:  # fmt: skip
    """``fma.rnd{.ftz}{.sat|.relu}.{f16,f16x2,bf16,bf16x2}``: a*b + c, one rounding."""
    return _elementwise(t, _arith("fma", rnd, ftz, sat, relu), a, b, c)


def _minmax_fn(smaller: bool, ftz: bool, nan: bool, relu: bool, xorsign_abs: bool = False):
    def fn(kind, a, b):
        x, y = decode(a, kind), decode(b, kind)
        if ftz:
            x, y = _flush(x, kind), _flush(y, kind)
        if xorsign_abs:  # compare magnitudes; the result takes sign(a) XOR sign(b)
            sign = np.signbit(x) ^ np.signbit(y)
            x, y = np.abs(x), np.abs(y)
        with np.errstate(invalid="ignore"):
            better = (x < y) if smaller else (x > y)
            tie_pick_x = (x == y) & (np.signbit(x) == smaller)
            r = np.where(better | tie_pick_x, x, y)
        nx, ny = np.isnan(x), np.isnan(y)
        r = np.where(nx & ~ny, y, np.where(ny & ~nx, x, r))
        if nan:
            r = np.where(nx | ny, np.nan, r)
        if xorsign_abs:
            r = np.where(np.isnan(r), r, np.where(sign, -np.abs(r), np.abs(r)))
        if relu:
            with np.errstate(invalid="ignore"):
                r = np.where(~np.isnan(r) & (r <= 0), 0.0, r)
        return encode(r, kind)

    return fn


@np.errstate(all="ignore")
def hmin(a, b, t: str, ftz: bool = False, nan: bool = False, relu: bool = False,
         xorsign_abs: bool = False) -> np.ndarray:  # fmt: skip
    """``min{.ftz}{.NaN}{.relu|.xorsign.abs}.{f16,f16x2,bf16,bf16x2}``: -0 < +0; one NaN →
    the other; both NaN (or any NaN with ``.NaN``) → canonical NaN. ``.xorsign.abs``: the
    smaller magnitude, signed with sign(a) XOR sign(b) (a NaN result stays canonical)."""
    return _elementwise(t, _minmax_fn(True, ftz, nan, relu, xorsign_abs), a, b)


@np.errstate(all="ignore")
def hmax(a, b, t: str, ftz: bool = False, nan: bool = False, relu: bool = False,
         xorsign_abs: bool = False) -> np.ndarray:  # fmt: skip
    """``max{.ftz}{.NaN}{.relu|.xorsign.abs}.{f16,f16x2,bf16,bf16x2}`` (see ``hmin``)."""
    return _elementwise(t, _minmax_fn(False, ftz, nan, relu, xorsign_abs), a, b)


@np.errstate(all="ignore")
def hneg(a, t: str, ftz: bool = False) -> np.ndarray:
    """``neg{.ftz}.{f16,f16x2,bf16,bf16x2}``: flips each sign bit (a NaN stays a NaN)."""

    def fn(kind, x):
        if ftz:
            x = encode_flushed(x, kind)
        return (x ^ np.uint16(0x8000)).astype(np.uint16)

    return _elementwise(t, fn, a)


@np.errstate(all="ignore")
def habs(a, t: str, ftz: bool = False) -> np.ndarray:
    """``abs{.ftz}.{f16,f16x2,bf16,bf16x2}``: clears each sign bit."""

    def fn(kind, x):
        if ftz:
            x = encode_flushed(x, kind)
        return (x & np.uint16(0x7FFF)).astype(np.uint16)

    return _elementwise(t, fn, a)


@np.errstate(all="ignore")
def encode_flushed(x: np.ndarray, kind: str) -> np.ndarray:
    """uint16 patterns with subnormals replaced by the zero of their sign."""
    sub = ((x & np.uint16(0x7FFF)) != 0) & (
        ((x >> np.uint16(10)) & np.uint16(0x1F)) == 0
        if kind == "f16"
        else ((x >> np.uint16(7)) & np.uint16(0xFF)) == 0
    )
    return np.where(sub, x & np.uint16(0x8000), x).astype(np.uint16)


@np.errstate(all="ignore")
def setp(cmp: str, a, b, t: str, ftz: bool = False):
    """``setp.cmp{.ftz}.{f16,bf16}`` → bool array; for x2 types (``setp.cmp.f16x2 p|q``) a
    pair (element 0's predicate, element 1's)."""
    from .fp import setp as fsetp

    kind = _kind(t)
    if t.endswith("x2"):
        (a0, a1), (b0, b1) = split2(a), split2(b)
        return (setp(cmp, a0, b0, kind, ftz), setp(cmp, a1, b1, kind, ftz))
    x, y = decode(a, kind), decode(b, kind)
    if ftz:
        x, y = _flush(x, kind), _flush(y, kind)
    return fsetp(cmp, x, y)


@np.errstate(all="ignore")
def to_float64(a, t: str) -> np.ndarray:
    """Values of f16/bf16 patterns as float64 (x2 types: shape [..., 2], element 0 first)."""
    kind = _kind(t)
    if t.endswith("x2"):
        lo, hi = split2(a)
        return np.stack([decode(lo, kind), decode(hi, kind)], axis=-1)
    return decode(a, kind)


CANONICAL_NAN_HALF = CANON_NAN["f16"]
