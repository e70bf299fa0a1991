"""PTX types as numpy types, and the conversions between a register's raw bits and a value.

Registers hold raw bits (unsigned integers of the register's width; .pred as bool); an
instruction reads them as the type it names (``add.f32`` reads float32 bits). A register
wider than the type is read by its low bits; a narrower one is zero-extended (PTX's rule for
sources of ``ld``/``st``/``cvt`` with a size mismatch)."""

from __future__ import annotations

import struct

import numpy as np

from .decode import Imm

NP = {
    "b8": np.uint8, "u8": np.uint8, "s8": np.int8,
    "b16": np.uint16, "u16": np.uint16, "s16": np.int16, "f16": np.float16, "bf16": np.uint16,
    "b32": np.uint32, "u32": np.uint32, "s32": np.int32, "f32": np.float32,
    "f16x2": np.uint32, "bf16x2": np.uint32, "tf32": np.uint32,
    "b64": np.uint64, "u64": np.uint64, "s64": np.int64, "f64": np.float64,
    "pred": np.bool_,
}  # fmt: skip

UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
SIGNED = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def dtype(t: str):
    return NP[t]


def nbytes(t: str) -> int:
    return np.dtype(NP[t]).itemsize


def is_signed(t: str) -> bool:
    return t[0] == "s"


def is_float(t: str) -> bool:
    return t in ("f16", "f32", "f64")


def storage(width_bits: int):
    """The numpy type a register of this width is stored as."""
    if width_bits == 1:
        return np.bool_
    return UNSIGNED[max(1, width_bits // 8)]


def bits_to(bits: np.ndarray, t: str) -> np.ndarray:
    """Raw register bits → values of PTX type t (view when widths match)."""
    want = NP[t]
    if bits.dtype == np.bool_:
        return bits if want == np.bool_ else bits.astype(want)
    wsize = np.dtype(want).itemsize
    if bits.dtype.itemsize != wsize:
        bits = bits.astype(UNSIGNED[wsize])  # low bits, or zero-extension
    return bits.view(want) if bits.ndim else np.asarray(bits).view(want)


def to_bits(val: np.ndarray, t: str, reg_width_bits: int) -> np.ndarray:
    """Values of PTX type t → raw bits for a register of the given width: sign-extended for
    signed types, zero-extended otherwise, truncated when the register is narrower."""
    val = np.asarray(val)
    if reg_width_bits == 1:
        return val.astype(np.bool_)
    store = UNSIGNED[max(1, reg_width_bits // 8)]
    if val.dtype == np.bool_:
        return val.astype(store)
    size = val.dtype.itemsize
    if size == np.dtype(store).itemsize:
        return val.view(store) if val.ndim else val.reshape(()).view(store)
    if val.dtype.kind == "f":
        val = val.view(UNSIGNED[size]) if val.ndim else val.reshape(()).view(UNSIGNED[size])
    if size < np.dtype(store).itemsize and is_signed(t):
        return val.view(SIGNED[size]).astype(SIGNED[np.dtype(store).itemsize]).view(store)
    return val.astype(store)


def imm_value(imm: Imm, t: str):
    """An immediate as a 0-d array of PTX type t (0f/0d literals by their bits)."""
    want = NP[t]
    if t == "pred":
        return np.asarray(bool(imm.value))
    if imm.bits is not None:
        if np.dtype(want).kind == "f":
            v = (
                struct.unpack("<f", struct.pack("<I", imm.bits))[0]
                if imm.bits_width == 32
                else (struct.unpack("<d", struct.pack("<Q", imm.bits))[0])
            )
            return np.asarray(v, dtype=want)
        # a float literal's bits given to an integer-typed instruction (mov.b32 %r, 0f3F800000)
        mask = (1 << (np.dtype(want).itemsize * 8)) - 1
        return np.asarray(imm.bits & mask, dtype=UNSIGNED[np.dtype(want).itemsize]).view(want)
    if np.dtype(want).kind == "f":
        return np.asarray(imm.value, dtype=want)
    if t in ("bf16", "bf16x2", "f16x2", "tf32"):
        want = UNSIGNED[np.dtype(want).itemsize]
    size = np.dtype(want).itemsize
    v = int(imm.value) & ((1 << (8 * size)) - 1)
    return np.asarray(v, dtype=UNSIGNED[size]).view(want)


def imm_bytes(imm: Imm, t: str) -> bytes:
    return np.asarray(imm_value(imm, t)).tobytes()
