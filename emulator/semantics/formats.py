"""Bit patterns of the small float formats (f16, bf16, tf32, e4m3, e5m2) ↔ float64 values,
and the packed-pair helpers (low half = element 0, as the hardware packs f16x2/bf16x2)."""

from __future__ import annotations

import numpy as np

from .rounding import BF16, E4M3, E5M2, F16, F32, TF32, Format

CANON_NAN = {"f16": 0x7FFF, "bf16": 0x7FFF, "e4m3": 0x7F, "e5m2": 0x7F, "f32": 0x7FFFFFFF}
FORMATS = {"f16": F16, "bf16": BF16, "tf32": TF32, "e4m3": E4M3, "e5m2": E5M2, "f32": F32}


@np.errstate(all="ignore")
def decode(bits, kind: str) -> np.ndarray:
    """Bit patterns (uint16 for f16/bf16, uint8 for e4m3/e5m2, uint32 for tf32/f32) →
    float64 values (NaN for any NaN pattern)."""
    bits = np.asarray(bits)
    if kind == "f16":
        return bits.astype(np.uint16).view(np.float16).astype(np.float64)
    if kind == "bf16":
        return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    if kind in ("tf32", "f32"):
        return bits.astype(np.uint32).view(np.float32).astype(np.float64)
    if kind in ("e4m3", "e5m2"):
        return _decode_fp8(bits.astype(np.uint8), FORMATS[kind])
    raise ValueError(f"unknown float format {kind!r}")


@np.errstate(all="ignore")
def encode(values, kind: str) -> np.ndarray:
    """float64 values ALREADY representable in ``kind`` (as ``round_pair`` returns them) →
    bit patterns; NaN → the canonical NaN of the format."""
    v = np.asarray(values, dtype=np.float64)
    nan = np.isnan(v)
    if kind == "f16":
        with np.errstate(all="ignore"):
            b = v.astype(np.float16).view(np.uint16)
        return np.where(nan, np.uint16(CANON_NAN["f16"]), b).astype(np.uint16)
    if kind == "bf16":
        b = (v.astype(np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint16)
        return np.where(nan, np.uint16(CANON_NAN["bf16"]), b).astype(np.uint16)
    if kind in ("tf32", "f32"):
        b = v.astype(np.float32).view(np.uint32)
        return np.where(nan, np.uint32(CANON_NAN["f32"]), b).astype(np.uint32)
    if kind in ("e4m3", "e5m2"):
        return _encode_fp8(v, FORMATS[kind])
    raise ValueError(f"unknown float format {kind!r}")


def _layout(fmt: Format) -> tuple[int, int]:
    mbits = fmt.precision - 1
    bias = 1 - fmt.emin
    return mbits, bias


def _decode_fp8(b: np.ndarray, fmt: Format) -> np.ndarray:
    mbits, bias = _layout(fmt)
    ebits = 7 - mbits
    sign = np.where(b & 0x80, -1.0, 1.0)
    e = ((b >> mbits) & ((1 << ebits) - 1)).astype(np.int64)
    m = (b & ((1 << mbits) - 1)).astype(np.float64)
    mag = np.where(
        e == 0, np.ldexp(m, fmt.emin - mbits), np.ldexp(1.0 + m / (1 << mbits), e - bias)
    )
    if fmt.has_inf:  # e5m2: exponent all ones is inf (m == 0) or NaN
        top = e == (1 << ebits) - 1
        mag = np.where(top, np.where(m == 0, np.inf, np.nan), mag)
    else:  # e4m3: only S.1111.111 is NaN
        mag = np.where((e == 15) & (m == 7), np.nan, mag)
    return sign * mag


def _encode_fp8(v: np.ndarray, fmt: Format) -> np.ndarray:
    mbits, bias = _layout(fmt)
    sign = np.where(np.signbit(v), 0x80, 0).astype(np.int64)
    a = np.abs(np.where(np.isfinite(v), v, 0.0))
    _, ex = np.frexp(a)
    e_unb = ex - 1
    normal = (a != 0) & (e_unb >= fmt.emin)
    mant_sub = np.rint(np.ldexp(a, mbits - fmt.emin)).astype(np.int64)
    mant_norm = np.rint((np.ldexp(a, -e_unb) - 1.0) * (1 << mbits)).astype(np.int64)
    efield = np.where(normal, e_unb + bias, 0)
    mfield = np.where(normal, mant_norm, mant_sub)
    bits = sign | (efield << mbits) | mfield
    if fmt.has_inf:
        bits = np.where(np.isinf(v), sign | (0x1F << mbits), bits)
    bits = np.where(np.isnan(v), CANON_NAN[fmt.name], bits)
    return bits.astype(np.uint8)


@np.errstate(all="ignore")
def split2(x) -> tuple[np.ndarray, np.ndarray]:
    """uint32 packed pair → (element 0 = low 16 bits, element 1 = high 16 bits), uint16."""
    x = np.asarray(x).astype(np.uint32)
    return (x & np.uint32(0xFFFF)).astype(np.uint16), (x >> np.uint32(16)).astype(np.uint16)


@np.errstate(all="ignore")
def join2(lo, hi) -> np.ndarray:
    """(element 0, element 1) uint16 → packed uint32 (element 0 in the low half)."""
    return np.asarray(lo).astype(np.uint32) | (np.asarray(hi).astype(np.uint32) << np.uint32(16))
