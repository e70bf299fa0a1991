"""Exact rounding of a float64 value pair to any binary float format, in every PTX mode.

numpy computes only round-to-nearest-even. The PTX modifiers ``.rz`` ``.rm`` ``.rp`` (and
``.rna`` for tf32) need the exact result's position between two representable neighbours.
Every operation here first produces the exact result as an unevaluated pair ``s + e`` of
float64 arrays, where ``s`` is the exact result rounded to nearest in float64 and ``e`` the
(signed) rest, ``|e| <= ulp(s)/2`` (an error-free transformation: TwoSum, TwoProduct). Only
the SIGN of ``e`` and its comparison against half a target ulp matter, and both are decided
exactly below. One function then rounds the pair to f32, f16, bf16, tf32, e4m3, e5m2 or f64.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MODES = ("rn", "rz", "rm", "rp", "rna")


@dataclass(frozen=True)
class Format:
    """A binary float format: ``precision`` significand bits (hidden bit included), the
    smallest normal exponent, the largest finite value, and whether it has infinities."""

    name: str
    precision: int
    emin: int
    max_finite: float
    has_inf: bool = True


F64 = Format("f64", 53, -1022, float(np.finfo(np.float64).max))
F32 = Format("f32", 24, -126, float(np.finfo(np.float32).max))
F16 = Format("f16", 11, -14, 65504.0)
BF16 = Format("bf16", 8, -126, float.fromhex("0x1.fep127"))
TF32 = Format("tf32", 11, -126, float.fromhex("0x1.ffcp127"))
E4M3 = Format("e4m3", 4, -6, 448.0, has_inf=False)
E5M2 = Format("e5m2", 3, -14, 57344.0)
FORMATS_BY_NAME = {f.name: f for f in (F64, F32, F16, BF16, TF32, E4M3, E5M2)}


def two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Knuth's TwoSum: ``s = fl(a+b)`` and ``e`` with ``a + b == s + e`` exactly (float64,
    finite inputs, no overflow)."""
    with np.errstate(all="ignore"):
        s = a + b
        bb = s - a
        e = (a - (s - bb)) + (b - bb)
    return s, e


_SPLIT = float(2**27 + 1)


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    with np.errstate(all="ignore"):
        t = _SPLIT * a
        hi = t - (t - a)
        return hi, a - hi


def two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dekker's TwoProduct: ``p = fl(a*b)``, ``a*b == p + e`` exactly while
    ``|a|, |b| < 2**995`` and ``|a*b| > 2**-969`` (callers check; see ``product_is_exact``)."""
    with np.errstate(all="ignore"):
        p = a * b
        ah, al = _split(a)
        bh, bl = _split(b)
        e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def product_is_exact(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Lanes where ``two_product(a, b)`` is error-free (finite, no split overflow, no
    underflow of the error term)."""
    with np.errstate(all="ignore"):
        p = np.abs(a * b)
        return (
            (np.abs(a) < 2.0**995)
            & (np.abs(b) < 2.0**995)
            & ((p > 2.0**-969) | (a == 0) | (b == 0))
            & np.isfinite(p)
        )


def round_pair(s: np.ndarray, e: np.ndarray | float, fmt: Format, mode: str = "rn") -> np.ndarray:
    """Round the exact value ``s + e`` (float64 arrays, ``s`` = RN64 of it) to ``fmt`` with
    PTX rounding ``mode`` ("rn" nearest-even, "rz", "rm", "rp", "rna" nearest-away).

    Returns float64 values that are exactly representable in ``fmt`` (±inf on overflow as
    IEEE 754 says for the mode; for a format without infinities (e4m3) the overflow result is
    NaN and callers that saturate clamp first). NaN in ``s`` stays NaN. ``fmt`` may be F64
    only for pairs whose ``s`` is already the RN64 result (then the mode only nudges ``s``).
    """
    if mode not in MODES:
        raise ValueError(f"rounding mode {mode!r} is not one of {MODES}")
    s = np.asarray(s, dtype=np.float64)
    e = np.broadcast_to(np.asarray(e, dtype=np.float64), s.shape)
    if fmt is F64:
        return _nudge_f64(s, e, mode)
    if fmt.name in _NUMPY_TYPES and mode != "rna":
        return _round_by_cast(s, e, _NUMPY_TYPES[fmt.name], mode)
    if fmt.name == "bf16" and mode != "rna":
        return _round_bf16(s, e, mode)
    return round_pair_generic(s, e, fmt, mode)


def _round_bf16(s: np.ndarray, e: np.ndarray, mode: str) -> np.ndarray:
    """bf16 by bits: s + e rounded to ODD in f32 (keeps a sticky bit, so the second rounding
    is a correct single rounding: 24 bits > 8 + 2), then rounded to the top 16 bits."""
    with np.errstate(all="ignore"):
        r = s.astype(np.float32)
        d = (s - r.astype(np.float64)) + e
        fix = np.flatnonzero((d != 0) & ((r.view(np.uint32) & np.uint32(1)) == 0) & np.isfinite(s))
        if fix.size:
            r[fix] = np.nextafter(r[fix], np.where(d[fix] > 0, np.inf, -np.inf).astype(np.float32))
        b = r.view(np.uint32).astype(np.uint64)
        neg = (b >> np.uint64(31)) == 1
        low = np.uint64(0xFFFF)
        if mode == "rn":
            b = b + np.uint64(0x7FFF) + ((b >> np.uint64(16)) & np.uint64(1))
        elif mode == "rm":
            b = np.where(neg, b + low, b)
        elif mode == "rp":
            b = np.where(neg, b, b + low)
        top = ((b >> np.uint64(16)) & np.uint64(0xFFFF)).astype(np.uint32) << np.uint32(16)
        out = top.view(np.float32).astype(np.float64)
    return np.where(np.isnan(s), s, out)


_NUMPY_TYPES = {"f32": np.float32, "f16": np.float16}


def _round_by_cast(s: np.ndarray, e: np.ndarray, dt, mode: str) -> np.ndarray:
    """The fast path for f32/f16: numpy's cast rounds s to nearest-even (correctly, from
    float64); the exact value's side of that result (sign of (s - r) + e, exact in float64)
    then picks the neighbour a directed mode needs, and repairs the one case where rounding
    s is not rounding s + e: s exactly halfway between two targets while e != 0. The repairs
    touch only the lanes that need them."""
    with np.errstate(all="ignore"):
        r = s.astype(dt)
        r64 = r.astype(np.float64)
        if mode == "rn":
            lanes = np.flatnonzero((e != 0) & (s != r64) & np.isfinite(r64))
            if lanes.size:
                sl, rl, el = s[lanes], r[lanes], e[lanes]
                other = np.nextafter(rl, np.where(sl > r64[lanes], np.inf, -np.inf).astype(dt))
                half = np.abs(other.astype(np.float64) - r64[lanes]) / 2
                tie = np.abs(sl - r64[lanes]) == half
                move = tie & ((el > 0) == (sl > r64[lanes]))  # exact value on e's side of s
                r[lanes] = np.where(move, other, rl)
            return r.astype(np.float64)
        d = (s - r64) + e  # exact value minus r: only its sign is used
        if mode == "rz":
            step = ((d < 0) & (r > 0)) | ((d > 0) & (r < 0))
            target = 0.0
        elif mode == "rm":
            step = d < 0
            target = -np.inf
        else:
            step = d > 0
            target = np.inf
        step &= np.isfinite(s)
        lanes = np.flatnonzero(step)
        if lanes.size:
            r[lanes] = np.nextafter(r[lanes], dt(target))
        # a zero result keeps the sign of the exact value (a positive value rounded down to 0)
        zeros = np.flatnonzero(r == 0)
        if zeros.size:
            sz, dz = s[zeros], d[zeros]
            sign_src = np.where((sz == 0) & (dz != 0), dz, sz)
            r[zeros] = np.copysign(dt(0), sign_src).astype(dt)
        return r.astype(np.float64)


def round_pair_generic(s: np.ndarray, e: np.ndarray, fmt: Format, mode: str = "rn") -> np.ndarray:
    """``round_pair`` for any format and mode, by scaling to the target's quantum (used for
    bf16, tf32, e4m3, e5m2 and .rna; f32/f16 take ``_round_by_cast``)."""
    finite = np.isfinite(s)
    with np.errstate(all="ignore"):
        ss = np.where(finite, s, 0.0)
        ee = np.where(finite, e, 0.0)
        _, exp = np.frexp(ss)  # ss = m * 2**exp, 0.5 <= |m| < 1
        # the target quantum: spacing of fmt's numbers in the binade of |s| (fixed below emin)
        qexp = np.maximum(exp - 1, fmt.emin) - (fmt.precision - 1)
        x = np.ldexp(ss, -qexp)  # exact: a power-of-two scaling
        ex = np.ldexp(ee, -qexp)
        # |s| a power of two with the exact value just inside it: the value lies in the
        # binade below, whose quantum is half as large
        finer = (
            (np.abs(x) == 2.0 ** (fmt.precision - 1))
            & (ex != 0)
            & (np.signbit(ex) != np.signbit(x))
            & (qexp > fmt.emin - (fmt.precision - 1))
        )
        qexp = np.where(finer, qexp - 1, qexp)
        x = np.where(finer, 2 * x, x)
        ex = np.where(finer, 2 * ex, ex)
        n = np.floor(x)
        frac = x - n  # exact (x has at most 53 significant bits)
        # value exactly on the grid but with a negative rest: it lies just below n
        below = (frac == 0) & (ex < 0)
        n = np.where(below, n - 1, n)
        frac = np.where(below, 1.0, frac)
        # position of the exact value in [n, n+1): compare frac + ex with 0.5 and with 0
        half_cmp = np.sign((frac - 0.5) + ex)  # frac - 0.5 exact for frac in [0.25, 1]
        exact = (frac == 0) & (ex == 0)
        if mode == "rn":
            up = (half_cmp > 0) | ((half_cmp == 0) & (np.fmod(n, 2) != 0))
        elif mode == "rna":
            # ties away from zero: for a negative value "away" is down (n), i.e. not up
            up = (half_cmp > 0) | ((half_cmp == 0) & (ss > 0))
        elif mode == "rz":
            up = (ss < 0) & ~exact
        elif mode == "rm":
            up = np.zeros_like(exact)
        else:  # rp
            up = ~exact
        r = np.ldexp(n + up, qexp)
        over = np.abs(r) > fmt.max_finite
        if over.any():
            away = {
                "rn": np.ones_like(over),
                "rna": np.ones_like(over),
                "rz": np.zeros_like(over),
                "rm": ss < 0,
                "rp": ss > 0,
            }[mode]
            big = np.inf if fmt.has_inf else np.nan
            r = np.where(over, np.copysign(np.where(away, big, fmt.max_finite), ss), r)
        r = np.where(r == 0, np.copysign(0.0, ss), r)
    return np.where(finite, r, s)


def _nudge_f64(s: np.ndarray, e: np.ndarray, mode: str) -> np.ndarray:
    """``s`` is RN64(s + e); move it one ulp where the mode needs the other neighbour."""
    if mode in ("rn", "rna"):
        if mode == "rna":
            raise ValueError("rna is defined only for tf32 conversions")
        return s
    with np.errstate(all="ignore"):
        if mode == "rz":
            move = ((e < 0) & (s > 0)) | ((e > 0) & (s < 0))
            return np.where(move, np.nextafter(s, 0.0), s)
        if mode == "rm":
            return np.where(e < 0, np.nextafter(s, -np.inf), s)
        return np.where(e > 0, np.nextafter(s, np.inf), s)


def overflowed_pair(s: np.ndarray, mode: str, fmt: Format = F64) -> np.ndarray:
    """The result for lanes whose exact value is finite but whose RN64 ``s`` overflowed to
    ±inf: ±inf or ±max_finite by mode (IEEE 754 7.4)."""
    away: bool | np.ndarray | None = {"rn": True, "rna": True, "rz": False}.get(mode)
    if away is None:
        away = (s < 0) if mode == "rm" else (s > 0)
    return np.where(away, s, np.copysign(fmt.max_finite, s))
