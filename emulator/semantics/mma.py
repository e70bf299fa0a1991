"""``mma.sync.aligned`` (one warp's matrix multiply-accumulate) and ``ldmatrix``, with the PTX
ISA's fragment layouts ("Matrix Fragments for mma.m16n8k16 with floating point type",
"... mma.m16n8k8", "... mma.m8n8k4"; groupID = laneid >> 2, threadID_in_group = laneid % 4).

Registers are passed per warp as arrays [nwarps, 32, nregs]: f16x2/bf16x2 fragments as
uint32 (element with the lower index in the low half), tf32 as uint32 (f32 bit patterns),
f32 as float32, f64 as float64. ``mma_sync`` returns D in the C layout.

Arithmetic: every product is exact and the K products plus C are summed in float64 and
rounded ONCE to the accumulator type (round to nearest). The ISA leaves the tensor core's
internal order and precision unspecified; the H200 may differ in the last bits of f32 D
(it does not round once), which the differential bench tolerates as a documented bound.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from .formats import decode, encode, join2, split2

LANE = np.arange(32)
GROUP = LANE >> 2  # groupID
TIG = LANE % 4  # threadID_in_group


@cache
def layout(shape: str, operand: str, etype: str) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) index arrays [32, n_elements] of each lane's fragment elements, in element
    order (a0, a1, ...), for ``operand`` "a", "b" or "c" of ``shape``/``etype``."""
    g, t = GROUP[:, None], TIG[:, None]
    if operand == "c":  # C/D: one layout per shape, whatever the element types
        if shape == "m8n8k4":
            i = np.arange(2)[None, :]
            return np.broadcast_to(g, (32, 2)).copy(), np.broadcast_to(t * 2 + i, (32, 2)).copy()
        i = np.arange(4)[None, :]
        return np.where(i < 2, g, g + 8), t * 2 + (i & 1)
    if shape == "m16n8k16" and etype in ("f16", "bf16"):
        i = np.arange(8 if operand == "a" else 4)[None, :]
        if operand == "a":
            row = np.where((i < 2) | ((i >= 4) & (i < 6)), g, g + 8)
            col = t * 2 + (i & 1) + np.where(i >= 4, 8, 0)
        elif operand == "b":
            row = t * 2 + (i & 1) + np.where(i >= 2, 8, 0)
            col = np.broadcast_to(g, row.shape)
        else:
            row = np.where(i < 2, g, g + 8)
            col = t * 2 + (i & 1)
        return np.broadcast_to(row, (32, i.size)).copy(), np.broadcast_to(col, (32, i.size)).copy()
    if shape == "m16n8k8" and etype in ("f16", "bf16"):
        i = np.arange(4 if operand in "ac" else 2)[None, :]
        if operand == "a":
            row = np.where(i < 2, g, g + 8)
            col = t * 2 + (i & 1)
        elif operand == "b":
            row = t * 2 + i
            col = np.broadcast_to(g, row.shape)
        else:
            row = np.where(i < 2, g, g + 8)
            col = t * 2 + (i & 1)
        return np.broadcast_to(row, (32, i.size)).copy(), np.broadcast_to(col, (32, i.size)).copy()
    if shape == "m16n8k8" and etype == "tf32":
        i = np.arange(4 if operand in "ac" else 2)[None, :]
        if operand == "a":
            row = np.where((i == 0) | (i == 2), g, g + 8)
            col = np.where(i < 2, t, t + 4)
        elif operand == "b":
            row = np.where(i == 0, t, t + 4)
            col = np.broadcast_to(g, row.shape)
        else:
            row = np.where(i < 2, g, g + 8)
            col = t * 2 + (i & 1)
        return np.broadcast_to(row, (32, i.size)).copy(), np.broadcast_to(col, (32, i.size)).copy()
    if etype in ("s8", "u8") and shape in ("m16n8k32", "m16n8k16"):
        # integer fragments: 4 bytes per .b32 register, lower k first (ISA "Matrix Fragments
        # for mma.m16n8k32" / "... mma.m16n8k16 with integer type")
        n_a, n_b = (16, 8) if shape == "m16n8k32" else (8, 4)
        i = np.arange(n_a if operand == "a" else n_b)[None, :]
        if operand == "a":
            if shape == "m16n8k32":
                row = np.where((i < 4) | ((i >= 8) & (i < 12)), g, g + 8)
                col = t * 4 + (i & 3) + np.where(i >= 8, 16, 0)
            else:
                row = np.where(i < 4, g, g + 8)
                col = t * 4 + (i & 3)
        else:
            row = t * 4 + (i & 3) + np.where(i >= 4, 16, 0)
            col = np.broadcast_to(g, row.shape)
        return np.broadcast_to(row, (32, i.size)).copy(), np.broadcast_to(col, (32, i.size)).copy()
    if shape == "m8n8k4" and etype == "f64":
        return (g.copy(), t.copy()) if operand == "a" else (t.copy(), g.copy())
    raise ValueError(f"no fragment layout for {shape} {operand} {etype}")


SHAPES = {
    "m16n8k32": (16, 8, 32),
    "m16n8k16": (16, 8, 16),
    "m16n8k8": (16, 8, 8),
    "m8n8k4": (8, 8, 4),
}


def _elements(regs: np.ndarray, etype: str) -> np.ndarray:
    """Registers [nw, 32, nregs] → element values float64 [nw, 32, nelem]."""
    regs = np.asarray(regs)
    if etype in ("f16", "bf16"):
        lo, hi = split2(regs)
        return np.stack([decode(lo, etype), decode(hi, etype)], axis=-1).reshape(
            *regs.shape[:2], -1
        )
    if etype == "tf32":
        bits = regs.astype(np.uint32) & np.uint32(0xFFFFE000)  # the low 13 bits are ignored
        return bits.view(np.float32).astype(np.float64)
    if etype == "f32":
        return regs.astype(np.float32).astype(np.float64)
    if etype == "f64":
        return regs.astype(np.float64)
    if etype in ("s8", "u8"):
        b = np.ascontiguousarray(regs.astype("<u4")).view(np.uint8).reshape(*regs.shape[:2], -1)
        return (b.view(np.int8) if etype == "s8" else b).astype(np.float64)  # exact small ints
    if etype == "s32":
        return regs.astype(np.int32).astype(np.float64)
    raise ValueError(f"mma element type {etype!r}")


def fragments_to_matrix(regs, shape: str, operand: str, etype: str) -> np.ndarray:
    """Registers [nw, 32, nregs] → the warp's matrix [nw, rows, cols] (float64)."""
    m, n, k = SHAPES[shape]
    dims = {"a": (m, k), "b": (k, n), "c": (m, n)}[operand]
    vals = _elements(regs, etype)
    row, col = layout(
        shape, operand, etype if operand != "c" or shape == "m8n8k4" else _ab(shape, etype)
    )
    out = np.zeros((vals.shape[0], *dims))
    out[:, row, col] = vals
    return out


def _ab(shape, etype):
    # the C/D layout is shared by the f16/bf16/tf32 variants of a shape
    return (
        "tf32"
        if (shape == "m16n8k8" and etype == "tf32")
        else ("f16" if shape != "m8n8k4" else "f64")
    )


def matrix_to_fragments(mat: np.ndarray, shape: str, operand: str, etype: str) -> np.ndarray:
    """Inverse of ``fragments_to_matrix``: [nw, rows, cols] float64 → registers [nw, 32,
    nregs] of ``etype`` (rounded to nearest; f16/bf16 pairs packed low element first)."""
    row, col = layout(shape, operand, etype)
    vals = mat[:, row, col]
    if etype in ("f16", "bf16"):
        bits = encode(vals, etype)
        return join2(bits[..., 0::2], bits[..., 1::2])
    if etype == "f32":
        return vals.astype(np.float32)
    if etype == "tf32":
        return vals.astype(np.float32).view(np.uint32)
    if etype in ("s8", "u8"):  # (tests build A/B fragments this way)
        b = vals.astype(np.int64).astype(np.int8 if etype == "s8" else np.uint8)
        return np.ascontiguousarray(b).view("<u4").astype(np.uint32)
    if etype == "s32":
        return vals.astype(np.int64).astype(np.int32)  # callers wrap or clamp first
    return vals.astype(np.float64)


def mma_sync(shape: str, a, b, c, atype: str, btype: str, ctype: str, dtype: str,
             satfinite: bool = False) -> np.ndarray:  # fmt: skip
    """``mma.sync.aligned.shape.row.col{.satfinite}.dtype.atype.btype.ctype d, a, b, c`` for
    every warp: D = A·B + C. Shapes/types: m16n8k16 (f16, bf16), m16n8k8 (f16, bf16, tf32)
    with f32 or (f16 A/B only) f16 accumulators; m8n8k4 f64; integer m16n8k32 and m16n8k16
    with s8/u8 A and B (each may differ) and s32 C/D: the sum wraps modulo 2**32, or with
    ``satfinite`` clamps to the s32 range. Returns D registers [nw, 32, nregs]."""
    if atype in ("s8", "u8"):
        A = fragments_to_matrix(a, shape, "a", atype).astype(np.int64)
        B = fragments_to_matrix(b, shape, "b", btype).astype(np.int64)
        C = fragments_to_matrix(c, shape, "c", "s32").astype(np.int64)
        D = np.einsum("wik,wkj->wij", A, B) + C  # exact in int64 (|sum| < 2**52)
        D = np.clip(D, -(2**31), 2**31 - 1) if satfinite else (D + 2**31) % 2**32 - 2**31
        return matrix_to_fragments(D.astype(np.float64), shape, "c", "s32")
    if atype != btype:
        raise ValueError("mma with different A and B float types is not implemented")
    A = fragments_to_matrix(a, shape, "a", atype)
    B = fragments_to_matrix(b, shape, "b", btype)
    C = fragments_to_matrix(c, shape, "c", ctype)
    D = np.einsum("wik,wkj->wij", A, B) + C  # float64: products of ≤ 11-bit significands exact
    return matrix_to_fragments(D, shape, "c", dtype)


# ----------------------------------------------------------------------------- ldmatrix


def ldmatrix_address_lanes(num: int) -> np.ndarray:
    """Lanes whose address operand is used by ``ldmatrix...m8n8.x{num}``: lanes 8*i .. 8*i+7
    give the 8 row addresses of matrix i (x1: lanes 0-7, x2: 0-15, x4: 0-31)."""
    return np.arange(8 * num)


def ldmatrix(rows, num: int, trans: bool = False) -> np.ndarray:
    """``ldmatrix.sync.aligned.m8n8.x{num}{.trans}.shared.b16 d, [addr]`` for every warp.

    ``rows``: uint16 [nw, 32, 8] — the eight b16 elements (16 bytes) the engine read at each
    lane's address (only lanes 0 .. 8*num-1 matter: lane 8*i + r holds row r of matrix i).
    Returns d uint32 [nw, 32, num]: register i of lane l holds matrix i's elements at row
    l >> 2, columns 2*(l % 4) and 2*(l % 4) + 1 (low half first); with .trans, the
    transposed matrix's (element [2*(l % 4) + j][l >> 2])."""
    rows = np.asarray(rows).astype(np.uint16)
    nw = rows.shape[0]
    out = np.zeros((nw, 32, num), dtype=np.uint32)
    r = GROUP
    c0 = 2 * TIG
    for i in range(num):
        mat = rows[:, 8 * i : 8 * i + 8, :]  # [nw, 8 rows, 8 cols]
        if trans:
            lo, hi = mat[:, c0, r], mat[:, c0 + 1, r]
        else:
            lo, hi = mat[:, r, c0], mat[:, r, c0 + 1]
        out[:, :, i] = join2(lo, hi)
    return out
