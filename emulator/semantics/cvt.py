"""``cvt``: every conversion the PTX ISA allows among integer and float types, plus the packed
forms (f16x2/bf16x2/e4m3x2/e5m2x2 from two f32) and tf32.

Value representation as in the package docstring: integers as integer arrays, f32/f64 as
float arrays, f16/bf16/tf32 as bit patterns (uint16/uint16/uint32), e4m3/e5m2 as uint8.

Rules (PTX ISA, "cvt"):
- int → int: sign- or zero-extend per the source type, keep the low bits of the destination
  (wrap); ``sat`` clamps to the destination range instead.
- float → int: ``rnd`` is one of rni rzi rmi rpi; the result is ALWAYS clamped to the
  destination range (the ISA: float-to-integer conversions saturate by default); NaN → 0,
  but NaN → 0x8000000000000000 for s64/u64 destinations (as the H200 does).
  ``ftz`` (f32 source) flushes a subnormal input first.
- int → float: ``rnd`` rn rz rm rp, rounding the exact integer (64-bit sources included).
- float → float, narrowing: ``rnd`` rn rz rm rp; ``sat`` clamps to [0, 1] (NaN → 0);
  ``relu`` (f16/bf16 destinations) negative → +0; ``satfinite`` overflow → ±max finite, NaN
  stays NaN. Widening is exact. Same type with rni/rzi/rmi/rpi rounds to an integral value.
- NaN results are the destination's canonical NaN.
"""

from __future__ import annotations

import numpy as np

from . import formats
from .fp import CANON_NAN_F32, CANON_NAN_F64, flush_subnormal
from .integer import as_type, dtype_of
from .rounding import F64, FORMATS_BY_NAME, round_pair, two_sum

INT_TYPES = ("u8", "s8", "u16", "s16", "u32", "s32", "u64", "s64", "b8", "b16", "b32", "b64")
FLOAT_TYPES = ("f16", "bf16", "tf32", "f32", "f64", "e4m3", "e5m2")
_INT_ROUND = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}


@np.errstate(all="ignore")
def to_float64(x, src: str) -> np.ndarray:
    """Any float operand (f32/f64 arrays, bit patterns of the small formats) as float64."""
    x = np.asarray(x)
    if src == "f32":
        return (
            x.astype(np.float32).astype(np.float64)
            if x.dtype != np.uint32
            else x.view(np.float32).astype(np.float64)
        )
    if src == "f64":
        return x.astype(np.float64) if x.dtype != np.uint64 else x.view(np.float64)
    return formats.decode(x, src)


@np.errstate(all="ignore")
def from_exact(s, e, dst: str, rnd: str, sat=False, relu=False, satfinite=False, ftz=False):
    """Round the exact value s + e to float type ``dst`` and encode it as cvt returns it."""
    fmt = F64 if dst == "f64" else FORMATS_BY_NAME[dst]
    if satfinite:
        # clamp before rounding: anything beyond max finite (inf included) → ±max finite
        big = np.abs(s) > fmt.max_finite
        s = np.where(big & ~np.isnan(s), np.copysign(fmt.max_finite, s), s)
        e = np.where(big, 0.0, e)
    r = round_pair(s, e, fmt, rnd)
    if ftz and dst == "f32":
        r = flush_subnormal(r.astype(np.float32)).astype(np.float64)
    with np.errstate(invalid="ignore"):
        if sat:
            r = np.where(np.isnan(r) | (r <= 0), 0.0, np.minimum(r, 1.0))
        if relu:
            r = np.where(~np.isnan(r) & (r <= 0), 0.0, r)
    if dst == "f32":
        return np.where(np.isnan(r), CANON_NAN_F32, r.astype(np.float32)).astype(np.float32)
    if dst == "f64":
        return np.where(np.isnan(r), CANON_NAN_F64, r)
    return formats.encode(r, dst)


@np.errstate(all="ignore")
def cvt(x, dst: str, src: str, rnd: str | None = None, ftz: bool = False, sat: bool = False,
        relu: bool = False, satfinite: bool = False):  # fmt: skip
    """``cvt{.rnd}{.ftz}{.sat}{.relu}{.satfinite}.dst.src d, x`` — see the module rules."""
    if src in INT_TYPES and dst in INT_TYPES:
        return _int_to_int(x, dst, src, sat)
    if src in INT_TYPES:
        s, e = _int_exact(x, src)
        return from_exact(s, e, dst, rnd or "rn", sat=sat, relu=relu, satfinite=satfinite, ftz=ftz)
    v = to_float64(x, src)
    if ftz and src == "f32":
        v = flush_subnormal(v.astype(np.float32)).astype(np.float64)
    if dst in INT_TYPES:
        return _float_to_int(v, dst, rnd or "rzi")
    if rnd in _INT_ROUND:  # cvt.rni.f32.f32 and friends: an integral value, same format
        with np.errstate(invalid="ignore"):
            r = _INT_ROUND[rnd](v)
        return from_exact(r, np.zeros_like(r), dst, "rn", sat=sat, relu=relu, ftz=ftz)
    if dst == "tf32":
        return _to_tf32(v, x, src, rnd or "rna", relu, satfinite)
    return from_exact(v, np.zeros_like(v), dst, rnd or "rn", sat=sat, relu=relu,
                      satfinite=satfinite, ftz=ftz)  # fmt: skip


def _to_tf32(v, x, src, rnd, relu, satfinite):
    """f32 → tf32 (an f32 bit pattern with the low 13 bits zero). A NaN keeps its truncated
    bits (0x7fffffff → 0x7fffe000, 0x7f800001 → 0x7f800000), as the H200 gives them."""
    r = from_exact(v, 0.0 * v, "tf32", rnd, relu=relu, satfinite=satfinite)
    if src == "f32":
        raw = (
            np.asarray(x).astype(np.float32).view(np.uint32)
            if np.asarray(x).dtype != np.uint32
            else np.asarray(x)
        )
        r = np.where(np.isnan(v), raw & np.uint32(0xFFFFE000), r)
    return r.astype(np.uint32)


def _int_to_int(x, dst, src, sat):
    xs = as_type(x, src)
    if not sat:
        return xs.astype(dtype_of(dst))  # numpy's cast: sign/zero-extend, then keep low bits
    info = np.iinfo(dtype_of(dst))
    if xs.dtype == np.uint64:
        return np.minimum(xs, np.uint64(info.max)).astype(dtype_of(dst))
    if xs.dtype == np.int64 and info.max == 2**64 - 1:
        return np.maximum(xs, 0).astype(np.uint64)
    if xs.dtype == np.int64 and info.max == 2**63 - 1:
        return xs
    w = xs.astype(np.int64)
    return np.clip(w, max(info.min, -(2**63)), min(info.max, 2**63 - 1)).astype(dtype_of(dst))


def _int_exact(x, src):
    """An integer operand as an exact float64 pair (hi + lo, both exactly representable)."""
    xs = as_type(x, src)
    if xs.dtype.itemsize < 8:
        v = xs.astype(np.float64)
        return v, np.zeros_like(v)
    u = xs.astype(np.uint64) if xs.dtype == np.uint64 else xs.view(np.uint64)
    lo = (u & np.uint64(0xFFFFFFFF)).astype(np.float64)
    hi_u = u >> np.uint64(32)
    hi = hi_u.astype(np.float64)
    if xs.dtype == np.int64:
        hi = np.where(hi_u >= 2**31, hi - 2.0**32, hi)
    return two_sum(hi * 2.0**32, lo)


def _float_to_int(v, dst, rnd):
    if rnd not in _INT_ROUND:
        raise ValueError(f"float → integer needs rni/rzi/rmi/rpi, got {rnd!r}")
    dt = dtype_of(dst)
    info = np.iinfo(dt)
    with np.errstate(invalid="ignore"):
        r = _INT_ROUND[rnd](v)
        nan = np.isnan(r)
        r = np.where(nan, 0.0, r)  # NaN → 0 (32-bit and narrower destinations)
        # float(info.max) of a 64-bit type rounds up to 2**63 / 2**64: >= is the exact test
        too_big = (r >= float(info.max)) if info.bits == 64 else (r > float(info.max))
        too_small = r < float(info.min)
    out = np.where(too_big | too_small, 0.0, r).astype(dt)
    out = np.where(too_big, info.max, out)
    out = np.where(too_small, info.min, out)
    if info.bits == 64:  # the H200 gives 0x8000000000000000 for NaN → s64 and → u64
        out = np.where(nan, np.array(1 << 63, dtype=np.uint64).astype(dt), out)
    return out.astype(dt)


@np.errstate(all="ignore")
def cvt_pack_x2(a, b, dst: str, src: str = "f32", rnd: str = "rn", relu: bool = False,
                satfinite: bool = False) -> np.ndarray:  # fmt: skip
    """``cvt.rn{.relu}{.satfinite}.{f16x2,bf16x2}.f32 d, a, b`` and ``cvt.rn.satfinite{.relu}
    .{e4m3x2,e5m2x2}.f32 d, a, b``: a → the UPPER half, b → the lower half (ISA: "d = {cvt(a),
    cvt(b)}"). f16x2/bf16x2 → uint32; e4m3x2/e5m2x2 → uint16."""
    kind = dst.removesuffix("x2")
    va, vb = to_float64(a, src), to_float64(b, src)
    ra = from_exact(va, 0.0 * va, kind, rnd, relu=relu, satfinite=satfinite)
    rb = from_exact(vb, 0.0 * vb, kind, rnd, relu=relu, satfinite=satfinite)
    if kind in ("e4m3", "e5m2"):
        return (rb.astype(np.uint16) | (ra.astype(np.uint16) << np.uint16(8))).astype(np.uint16)
    return formats.join2(rb, ra)


@np.errstate(all="ignore")
@np.errstate(all="ignore")
def cvt_f16x2_to_fp8x2(a, dst: str, relu: bool = False) -> np.ndarray:
    """``cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2}.f16x2 d, a``: each f16 of a (element 0 = low
    half) to an fp8 code, element 0 in d's low byte. uint32 in, uint16 out."""
    kind = dst.removesuffix("x2")
    lo, hi = formats.split2(a)
    vlo, vhi = formats.decode(lo, "f16"), formats.decode(hi, "f16")
    rlo = from_exact(vlo, 0.0 * vlo, kind, "rn", relu=relu, satfinite=True)
    rhi = from_exact(vhi, 0.0 * vhi, kind, "rn", relu=relu, satfinite=True)
    return (rlo.astype(np.uint16) | (rhi.astype(np.uint16) << np.uint16(8))).astype(np.uint16)


def cvt_unpack_fp8x2(a, src: str, dst: str = "f16x2", relu: bool = False) -> np.ndarray:
    """``cvt.rn{.relu}.f16x2.{e4m3x2,e5m2x2} d, a``: the low byte of a → d's low half (exact:
    every e4m3/e5m2 value is an f16 value)."""
    kind = src.removesuffix("x2")
    a = np.asarray(a).astype(np.uint16)
    lo = formats.decode((a & np.uint16(0xFF)).astype(np.uint8), kind)
    hi = formats.decode((a >> np.uint16(8)).astype(np.uint8), kind)
    lo_b = from_exact(lo, 0.0 * lo, "f16", "rn", relu=relu)
    hi_b = from_exact(hi, 0.0 * hi, "f16", "rn", relu=relu)
    return formats.join2(lo_b, hi_b)
