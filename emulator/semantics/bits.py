"""Bit instructions: shl/shr, shf, popc, clz, bfind, brev, bfe, bfi, prmt, lop3 — PTX ISA
semantics on numpy arrays (any integer dtype in; the PTX type's dtype out, see
``integer.dtype_of``). Shift amounts and bit-field positions are unsigned 32-bit operands.
"""

from __future__ import annotations

import numpy as np

from .integer import as_type, dtype_of, signed, width


def shl(a, n, t: str) -> np.ndarray:
    """``shl.b{16,32,64}``: a << n; an amount >= width gives 0 (the ISA clamps it to width)."""
    a = as_type(a, "u" + t[1:])
    n = as_type(n, "u32").astype(np.uint64)
    w = width(t)
    nn = np.minimum(n, w - 1).astype(a.dtype)
    r = np.where(n >= w, 0, a << nn)
    return r.astype(dtype_of(t))


def shr(a, n, t: str) -> np.ndarray:
    """``shr.{b,u,s}{16,32,64}``: a >> n; signed types fill with the sign bit. Amounts >=
    width are clamped to width: 0 (unsigned) or all sign bits (signed)."""
    a = as_type(a, t)
    n = as_type(n, "u32").astype(np.uint64)
    w = width(t)
    nn = np.minimum(n, w - 1).astype(a.dtype)
    if signed(t):
        return (a >> nn).astype(a.dtype)  # w-1 already gives all sign bits
    return np.where(n >= w, 0, a >> nn).astype(a.dtype)


def shf(a, b, n, direction: str, mode: str) -> np.ndarray:
    """``shf.{l,r}.{clamp,wrap}.b32 d, a, b, n``: funnel shift of the 64-bit {b:a} (b high).
    ``clamp``: amount min(n, 32); ``wrap``: n & 31. ``l``: the high 32 bits of {b:a} << n;
    ``r``: the low 32 bits of {b:a} >> n."""
    a = as_type(a, "u32").astype(np.uint64)
    b = as_type(b, "u32").astype(np.uint64)
    n = as_type(n, "u32").astype(np.uint64)
    n = np.minimum(n, 32) if mode == "clamp" else (n & np.uint64(31))
    both = (b << np.uint64(32)) | a
    r = ((both << n) >> np.uint64(32)) if direction == "l" else (both >> n)
    return (r & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def popc(a, t: str) -> np.ndarray:
    """``popc.b{32,64}``: number of 1 bits, as u32."""
    a = as_type(a, "u" + t[1:])
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(a).astype(np.uint32)
    x = a.astype(np.uint64)
    c = np.zeros(x.shape, dtype=np.uint32)
    for i in range(width(t)):
        c += ((x >> np.uint64(i)) & np.uint64(1)).astype(np.uint32)
    return c


def clz(a, t: str) -> np.ndarray:
    """``clz.b{32,64}``: leading zero bits (width for 0), as u32."""
    w = width(t)
    pos = _msb(as_type(a, "u" + t[1:]))
    return np.where(pos < 0, w, w - 1 - pos).astype(np.uint32)


def _msb(x) -> np.ndarray:
    """Index of the highest 1 bit of unsigned x, -1 for 0 (exact via frexp on halves)."""
    x = x.astype(np.uint64)
    hi = (x >> np.uint64(32)).astype(np.float64)
    lo = (x & np.uint64(0xFFFFFFFF)).astype(np.float64)
    _, ehi = np.frexp(hi)
    _, elo = np.frexp(lo)
    return np.where(hi > 0, ehi - 1 + 32, np.where(lo > 0, elo - 1, -1)).astype(np.int64)


def bfind(a, t: str, shiftamt: bool = False) -> np.ndarray:
    """``bfind{.shiftamt}.{u,s}{32,64}``: bit position of the most significant 1 (unsigned) or
    most significant non-sign bit (signed); 0xffffffff when there is none. ``.shiftamt``
    returns width-1-pos instead (the left shift that normalises a), 0xffffffff when none."""
    w = width(t)
    a = as_type(a, t)
    u = as_type(a, "u" + t[1:])
    if signed(t):
        u = np.where(a < 0, ~u, u)
    pos = _msb(u)
    none = pos < 0
    r = np.where(shiftamt, w - 1 - pos, pos)
    return np.where(none, 0xFFFFFFFF, r).astype(np.uint32)


def brev(a, t: str) -> np.ndarray:
    """``brev.b{32,64}``: bit reversal."""
    w = width(t)
    x = as_type(a, "u" + t[1:])
    if w == 32:
        b = x.astype(">u4").view(np.uint8).reshape(x.shape + (4,))
        rb = np.unpackbits(b, axis=-1, bitorder="big")[..., ::-1]
        return (
            np.packbits(rb, axis=-1, bitorder="big").view(">u4").reshape(x.shape).astype(np.uint32)
        )
    b = x.astype(">u8").view(np.uint8).reshape(x.shape + (8,))
    rb = np.unpackbits(b, axis=-1, bitorder="big")[..., ::-1]
    return np.packbits(rb, axis=-1, bitorder="big").view(">u8").reshape(x.shape).astype(np.uint64)


def bfe(a, pos, length, t: str) -> np.ndarray:
    """``bfe.{u,s}{32,64} d, a, pos, len``: extract len bits from pos (pos, len = low 8 bits of
    their operands). Bits beyond the register read as the sign bit source; the signed forms
    sign-extend from bit min(pos+len-1, msb) of a (len 0 → 0)."""
    w = width(t)
    ut = "u" + t[1:]
    ua = as_type(a, ut).astype(np.uint64)
    p = (as_type(pos, "u32") & np.uint32(0xFF)).astype(np.int64)
    ln = (as_type(length, "u32") & np.uint32(0xFF)).astype(np.int64)
    msb = w - 1
    # number of real bits taken from a: positions pos .. min(pos+len-1, msb)
    take = np.clip(np.minimum(ln, msb + 1 - p), 0, w)
    pshift = np.minimum(p, 63).astype(np.uint64)
    field = np.where(p > msb, np.uint64(0), ua >> pshift)
    mask = np.where(
        take >= 64, np.uint64(2**64 - 1), (np.uint64(1) << take.astype(np.uint64)) - np.uint64(1)
    )
    d: np.ndarray = field & mask
    if signed(t):
        sbit_pos = np.minimum(p + ln - 1, msb)
        sbit = np.where(
            ln == 0, 0, (ua >> np.maximum(sbit_pos, 0).astype(np.uint64)) & np.uint64(1)
        )
        # bits from position `take` upward (up to width) are the sign bit
        fill = np.where(take >= w, np.uint64(0), ~mask)
        d = np.where(sbit == 1, d | fill, d)
    if w == 32:
        d = d & np.uint64(0xFFFFFFFF)
    return d.astype(dtype_of(ut)).astype(dtype_of(t))


def bfi(a, b, pos, length, t: str) -> np.ndarray:
    """``bfi.b{32,64} f, a, b, pos, len``: b with len bits of a inserted at pos (pos, len =
    low 8 bits; bits past the register's msb are dropped)."""
    w = width(t)
    ut = "u" + t[1:]
    ua = as_type(a, ut).astype(np.uint64)
    ub = as_type(b, ut).astype(np.uint64)
    p = (as_type(pos, "u32") & np.uint32(0xFF)).astype(np.int64)
    ln = (as_type(length, "u32") & np.uint32(0xFF)).astype(np.int64)
    take = np.clip(np.minimum(ln, w - p), 0, w)
    mask = np.where(
        take >= 64, np.uint64(2**64 - 1), (np.uint64(1) << take.astype(np.uint64)) - np.uint64(1)
    )
    ps = np.minimum(p, 63).astype(np.uint64)
    ins = np.where(take == 0, ub, (ub & ~(mask << ps)) | ((ua & mask) << ps))
    if w == 32:
        ins = ins & np.uint64(0xFFFFFFFF)
    return ins.astype(dtype_of(ut))


# prmt modes: for selector c[1:0], the source byte index for d.b0, d.b1, d.b2, d.b3
_PRMT_MODES = {
    "f4e": [[0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5], [3, 4, 5, 6]],
    "b4e": [[0, 7, 6, 5], [1, 0, 7, 6], [2, 1, 0, 7], [3, 2, 1, 0]],
    "rc8": [[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]],
    "ecl": [[0, 1, 2, 3], [1, 1, 2, 3], [2, 2, 2, 3], [3, 3, 3, 3]],
    "ecr": [[0, 0, 0, 0], [0, 1, 1, 1], [0, 1, 2, 2], [0, 1, 2, 3]],
    "rc16": [[0, 1, 0, 1], [2, 3, 2, 3], [0, 1, 0, 1], [2, 3, 2, 3]],
}


def prmt(a, b, c, mode: str | None = None) -> np.ndarray:
    """``prmt.b32{.mode} d, a, b, c``: pick bytes of the 8-byte {b:a} (a = bytes 0-3, b =
    bytes 4-7). Default mode: nibble i of c (i = 0..3) selects d's byte i: its low 3 bits
    the source byte, its bit 3 "replicate the sign": the selected byte's msb in all 8 bits.
    Modes f4e b4e rc8 ecl ecr rc16 use c[1:0] and the ISA's fixed tables."""
    a, b, c = np.broadcast_arrays(as_type(a, "u32"), as_type(b, "u32"), as_type(c, "u32"))
    shape = a.shape
    # the 8 source bytes of every lane, byte 0 = a's least significant (little-endian view)
    src = np.stack([a.ravel(), b.ravel()], axis=-1).astype("<u4").view(np.uint8).reshape(-1, 8)
    cc = c.ravel()
    if mode is None:
        nib = (cc[:, None] >> np.array([0, 4, 8, 12], dtype=np.uint32)) & np.uint32(0xF)
        sel = (nib & np.uint32(7)).astype(np.intp)
        rep = (nib & np.uint32(8)) != 0
    else:
        table = np.array(_PRMT_MODES[mode], dtype=np.intp)  # [selector, output byte]
        sel = table[(cc & np.uint32(3)).astype(np.intp)]
        rep = np.zeros(sel.shape, dtype=bool)
    out = np.take_along_axis(src, sel, axis=1)
    out = np.where(rep, np.where(out & 0x80, 0xFF, 0), out).astype(np.uint8)
    return np.ascontiguousarray(out).view("<u4").reshape(shape).astype(np.uint32)


def lop3(a, b, c, lut: int, t: str = "b32") -> np.ndarray:
    """``lop3.b32 d, a, b, c, immLut``: bitwise F(a, b, c) where immLut = F(0xF0, 0xCC, 0xAA),
    i.e. bit (4*a_bit + 2*b_bit + c_bit) of immLut is the result bit."""
    ut = "u" + t[1:]
    a, b, c = as_type(a, ut), as_type(b, ut), as_type(c, ut)
    d = np.zeros_like(a)
    for i in range(8):
        if (lut >> i) & 1:
            d |= (a if i & 4 else ~a) & (b if i & 2 else ~b) & (c if i & 1 else ~c)
    return d
