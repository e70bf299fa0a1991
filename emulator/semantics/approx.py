"""The ``.approx`` functions: ex2, lg2, rcp, rsqrt, sqrt, sin, cos, tanh.

f32 (and f64 rsqrt/rcp): the value is computed in float64 and rounded once to f32 — the
correctly rounded result except in rare double-rounding ties (< 0.5 ulp + 2**-29 ulp), so
within every bound the ISA gives. Special values (inf, NaN, ±0, subnormal inputs) follow
what the H200 does (tests/data/emulator/h200_approx_f32.npz), e.g. sin/cos flush a subnormal
input even without .ftz, lg2 without .ftz handles subnormal inputs exactly, rsqrt(-0) = -inf.

f16, bf16 (and their x2 forms, per element): the H200's own 65536-entry result tables
(emulator/semantics/data/h200_half_approx.npz), so these match the H200 bit for bit.

Bounds, H200 measurements and this module's error: emulator/semantics/README.md.
Inputs/outputs as in the package docstring: f32 float32 arrays, f16/bf16 uint16 patterns,
x2 types uint32.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np

from .formats import join2, split2
from .fp import CANON_NAN_F32, flush_subnormal

_TABLES = Path(__file__).resolve().parent / "data" / "h200_half_approx.npz"


@cache
def _table(name: str) -> np.ndarray:
    with np.load(_TABLES) as z:
        return z[name].astype(np.uint16)


def _half_lut(name: str, a, t: str) -> np.ndarray:
    kind = t.removesuffix("x2")
    table = _table(f"{name}_{kind}")
    if t.endswith("x2"):
        lo, hi = split2(a)
        return join2(table[lo], table[hi])
    return table[np.asarray(a).astype(np.uint16)]


def _f32(fn, a, ftz: bool, flush_in_always: bool = False) -> np.ndarray:
    a = np.asarray(a, dtype=np.float32)
    x = flush_subnormal(a) if (ftz or flush_in_always) else a
    with np.errstate(all="ignore"):
        r = fn(x.astype(np.float64)).astype(np.float32)
    if ftz:
        r = flush_subnormal(r)
    return np.where(np.isnan(r), CANON_NAN_F32, r).astype(np.float32)


@np.errstate(all="ignore")
def ex2(a, t: str = "f32", ftz: bool = False) -> np.ndarray:
    """``ex2.approx{.ftz}.f32``, ``ex2.approx.{f16,f16x2}``, ``ex2.approx.ftz.{bf16,bf16x2}``:
    2**a. ex2(-inf) = +0, ex2(+inf) = +inf, ex2(±0) = 1."""
    if t != "f32":
        return _half_lut("ex2", a, t)
    return _f32(np.exp2, a, ftz)


@np.errstate(all="ignore")
def lg2(a, ftz: bool = False) -> np.ndarray:
    """``lg2.approx{.ftz}.f32``: log2(a). lg2(±0) = -inf, lg2(negative) = NaN, lg2(+inf) =
    +inf; subnormal inputs are exact without .ftz (→ -149 for 2**-149), -inf with it."""

    def f(x):
        return np.where(x == 0, -np.inf, np.log2(x))

    return _f32(f, a, ftz)


_HIGH_WORD = np.uint64(0xFFFFFFFF00000000)
_NAN_HIGH_WORD = np.uint64(0x7FFFFFFF00000000)  # the ISA's NaN of the .ftz.f64 forms


def _high_word_f64(fn, a) -> np.ndarray:
    """The ``.approx.ftz.f64`` forms (ISA: ``tmp = a[63:32]; d[63:32] = f(tmp); d[31:0] =
    0``): f of the input's high word, the result's low word cleared; subnormal inputs and
    results flushed; a NaN result is 0x7fffffff00000000. The H200 agrees bit for bit on 93 %
    of inputs and is within 2**-20 relative everywhere (README)."""
    a = np.asarray(a, dtype=np.float64)
    x = (a.view(np.uint64) & _HIGH_WORD).view(np.float64)
    x = np.where(np.abs(a) < 2.0**-1022, np.copysign(0.0, a), x)
    r = fn(x)
    r = np.where(np.abs(r) < 2.0**-1022, np.copysign(0.0, r), r)
    bits = r.view(np.uint64) & _HIGH_WORD
    return np.where(np.isnan(r), _NAN_HIGH_WORD, bits).view(np.float64)


@np.errstate(all="ignore")
def rcp_approx(a, t: str = "f32", ftz: bool = False) -> np.ndarray:
    """``rcp.approx{.ftz}.f32``: 1/a (±0 → ±inf, ±inf → ±0; ISA bound 1 ulp).
    ``rcp.approx.ftz.f64``: see ``_high_word_f64``."""
    if t == "f64":
        return _high_word_f64(lambda x: 1.0 / x, a)

    def f(x):
        return 1.0 / x

    return _f32(f, a, ftz)


@np.errstate(all="ignore")
def rsqrt(a, t: str = "f32", ftz: bool = False) -> np.ndarray:
    """``rsqrt.approx{.ftz}.f32`` (ISA: rel 2**-22.9), ``rsqrt.approx.f64`` (1/sqrt in
    float64), ``rsqrt.approx.ftz.f64`` (``_high_word_f64``): ±0 → ±inf, +inf → +0,
    negative → NaN."""
    if t == "f64":
        if ftz:
            return _high_word_f64(lambda x: 1.0 / np.sqrt(x), a)
        return 1.0 / np.sqrt(np.asarray(a, dtype=np.float64))

    def f(x):
        return 1.0 / np.sqrt(x)

    return _f32(f, a, ftz)


@np.errstate(all="ignore")
def sqrt_approx(a, ftz: bool = False) -> np.ndarray:
    """``sqrt.approx{.ftz}.f32``: sqrt(a); sqrt(-0) = -0, negative → NaN."""
    return _f32(np.sqrt, a, ftz)


@np.errstate(all="ignore")
def sin(a, ftz: bool = False) -> np.ndarray:
    """``sin.approx{.ftz}.f32``: sin(a); ±inf → NaN; a subnormal input is flushed to ±0 even
    without .ftz (as the H200 does)."""
    return _f32(np.sin, a, ftz, flush_in_always=True)


@np.errstate(all="ignore")
def cos(a, ftz: bool = False) -> np.ndarray:
    """``cos.approx{.ftz}.f32``: cos(a); ±inf → NaN; subnormal input → 1."""
    return _f32(np.cos, a, ftz, flush_in_always=True)


@np.errstate(all="ignore")
def tanh(a, t: str = "f32") -> np.ndarray:
    """``tanh.approx.f32`` (tanh(±inf) = ±1, subnormal in → itself), ``tanh.approx.{f16,
    f16x2,bf16,bf16x2}`` (the H200's table)."""
    if t != "f32":
        return _half_lut("tanh", a, t)
    return _f32(np.tanh, a, False)
