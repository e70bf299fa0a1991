"""Integer, bit, comparison, selection and move instructions (PTX ISA §9.7.1-9.7.9)."""

from __future__ import annotations

import numpy as np

from . import values as V
from .decode import Pair, Reg, Vec
from .ops_common import handler, last_type, refuse, types_of

U64 = np.uint64


def _prep_type(ins):
    ins.info = last_type(ins)
    if ("cc" in ins.mods or ins.op in ("addc", "subc", "madc")) and ins.info not in (
        "u32",
        "s32",
        "u64",
        "s64",
        "b32",
        "b64",
    ):
        refuse(ins, "carry flags (.cc) on this type are not emulated")


# ---- the carry flag (CC.CF): one per thread, written by .cc, read by addc/subc/madc


def _carry(w, sel):
    if getattr(w, "carry", None) is None:
        w.carry = np.zeros(w.N, dtype=np.uint8)
    return w.carry[sel]


def _set_carry(w, sel, cout):
    _carry(w, sel)
    w.carry[sel] = np.broadcast_to(np.asarray(cout, dtype=np.uint8), w.carry[sel].shape)


def _with_carry(w, ins, sel, pc, a, b, t, subtract: bool):
    """a ± b (± CF for addc/subc/madc); writes CF when the instruction has .cc."""
    from .semantics import integer

    cin = _carry(w, sel) if ins.op in ("addc", "subc", "madc") else None
    a, b = np.broadcast_arrays(np.atleast_1d(a), np.atleast_1d(b))
    fn = integer.sub_cc if subtract else integer.add_cc
    r, cout = fn(a, b, t, cin)
    if "cc" in ins.mods:
        _set_carry(w, sel, cout)
    if isinstance(sel, slice) and r.size == 1 and w.N != 1:
        r = np.broadcast_to(r, (w.N,)).copy()
    return r


def _bits(t: str) -> int:
    return np.dtype(V.NP[t]).itemsize * 8


def _sat32(x64):
    return np.clip(x64, -(2**31), 2**31 - 1).astype(np.int32)


@handler("add", "sub", "addc", "subc", prepare=_prep_type)
def _add_sub(w, ins, sel, pc):
    t = ins.info
    if t[0] == "f" or t in ("bf16", "bf16x2", "f16x2"):
        from .ops_float import arith

        return arith(w, ins, sel, pc)
    a = w.get(ins.operands[1], t, sel, pc)
    b = w.get(ins.operands[2], t, sel, pc)
    if "cc" in ins.mods or ins.op in ("addc", "subc"):
        r = _with_carry(w, ins, sel, pc, a, b, t, ins.op in ("sub", "subc"))
    elif "sat" in ins.mods and t == "s32":
        r = a.astype(np.int64) + b if ins.op == "add" else a.astype(np.int64) - b
        r = _sat32(r)
    else:
        r = a + b if ins.op == "add" else a - b
    w.put(ins.operands[0], r, t, sel)


def _wide(t: str) -> str:
    return {"s16": "s32", "u16": "u32", "s32": "s64", "u32": "u64"}[t]


def _mulhi(a, b, t):
    bits = _bits(t)
    if bits <= 32:
        big = np.int64 if V.is_signed(t) else np.uint64
        return ((a.astype(big) * b.astype(big)) >> bits).astype(V.NP[t])
    # 64-bit high half from 32-bit pieces
    ua, ub = a.astype(U64), b.astype(U64)
    m32 = U64(0xFFFFFFFF)
    a0, a1, b0, b1 = ua & m32, ua >> U64(32), ub & m32, ub >> U64(32)
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> U64(32)) + (p01 & m32) + (p10 & m32)
    hi = p11 + (p01 >> U64(32)) + (p10 >> U64(32)) + (mid >> U64(32))
    if V.is_signed(t):  # signed correction: subtract b (a<0) and a (b<0)
        hi = hi - np.where(a < 0, ub, U64(0)) - np.where(b < 0, ua, U64(0))
    return hi.view(V.NP[t]) if hi.ndim else np.asarray(hi).view(V.NP[t])


def _mul_core(w, ins, sel, pc, t):
    a = w.get(ins.operands[1], t, sel, pc)
    b = w.get(ins.operands[2], t, sel, pc)
    if "wide" in ins.mods:
        wt = _wide(t)
        return a.astype(V.NP[wt]) * b.astype(V.NP[wt]), wt
    if ins.op in ("mul24", "mad24"):  # the low 24 bits of each operand (semantics)
        from .semantics import integer

        mode = "hi" if "hi" in ins.mods else "lo"
        a1, b1 = (np.atleast_1d(x) for x in np.broadcast_arrays(a, b))
        r = np.asarray(integer.mul24(a1, b1, t, mode))
        return (r.reshape(()) if np.ndim(a) == 0 and np.ndim(b) == 0 else r), t
    if "hi" in ins.mods:
        return _mulhi(a, b, t), t
    return a * b, t


@handler("mul", "mul24", prepare=_prep_type)
def _mul(w, ins, sel, pc):
    t = ins.info
    if t[0] == "f" or t in ("bf16", "bf16x2", "f16x2"):
        from .ops_float import arith

        return arith(w, ins, sel, pc)
    r, rt = _mul_core(w, ins, sel, pc, t)
    w.put(ins.operands[0], np.asarray(r).astype(V.NP[rt], copy=False), rt, sel)


@handler("mad", "mad24", "madc", prepare=_prep_type)
def _mad(w, ins, sel, pc):
    t = ins.info
    if t[0] == "f" or t in ("bf16", "bf16x2", "f16x2"):
        from .ops_float import fma

        return fma(w, ins, sel, pc)
    r, rt = _mul_core(w, ins, sel, pc, t)
    c = w.get(ins.operands[3], rt, sel, pc)
    if "cc" in ins.mods or ins.op == "madc":
        r = _with_carry(w, ins, sel, pc, np.asarray(r).astype(V.NP[rt], copy=False), c, rt, False)
    elif "sat" in ins.mods and t == "s32":
        r = _sat32(np.asarray(r).astype(np.int64) + c)
    else:
        r = np.asarray(r).astype(V.NP[rt], copy=False) + c
    w.put(ins.operands[0], r, rt, sel)


@handler("div", "rem", prepare=_prep_type)
def _div(w, ins, sel, pc):
    t = ins.info
    if t[0] == "f":
        from .ops_float import arith

        return arith(w, ins, sel, pc)
    from .semantics import integer

    raw = (w.get(ins.operands[1], t, sel, pc), w.get(ins.operands[2], t, sel, pc))
    fn = integer.div if ins.op == "div" else integer.rem  # b == 0: all ones, as the H200
    _put_lifted(w, ins, sel, t, fn, raw, t)


def _put_lifted(w, ins, sel, t, fn, raw, *args):
    """A semantics function over operands lifted to 1-D; 0-d again when all were uniform."""
    lifted = [np.atleast_1d(x) for x in np.broadcast_arrays(*raw)]
    r = np.asarray(fn(*lifted, *args))
    w.put(ins.operands[0], r.reshape(()) if all(np.ndim(x) == 0 for x in raw) else r, t, sel)


@handler("sad", prepare=_prep_type)
def _sad(w, ins, sel, pc):
    from .semantics import integer

    t = ins.info
    raw = tuple(w.get(ins.operands[i], t, sel, pc) for i in (1, 2, 3))
    _put_lifted(w, ins, sel, t, integer.sad, raw, t)


def _prep_dp(ins):
    ts = [m for m in ins.mods if m in ("u32", "s32")]
    if len(ts) != 2:
        refuse(ins, f"{ins.op} needs two types (.u32/.s32)")
    ins.info = tuple(ts)


@handler("dp4a", "dp2a", prepare=_prep_dp)
def _dp(w, ins, sel, pc):
    from .semantics import integer

    at, bt = ins.info
    rt = "s32" if "s32" in (at, bt) else "u32"
    raw = (w.get(ins.operands[1], at, sel, pc), w.get(ins.operands[2], bt, sel, pc),
           w.get(ins.operands[3], rt, sel, pc))  # fmt: skip
    if ins.op == "dp4a":
        _put_lifted(w, ins, sel, rt, integer.dp4a, raw, at, bt)
    else:
        half = "hi" if "hi" in ins.mods else "lo"
        _put_lifted(w, ins, sel, rt, lambda a, b, c: integer.dp2a(a, b, c, at, bt, half), raw)


@handler("abs", "neg", "not", "cnot", "popc", "clz", "brev", "bfind", prepare=_prep_type)
def _unary(w, ins, sel, pc):
    t = ins.info
    if t[0] == "f" or t in ("bf16", "bf16x2", "f16x2"):
        from .ops_float import unary

        return unary(w, ins, sel, pc)
    a = w.get(ins.operands[1], t, sel, pc)
    op = ins.op
    if op == "abs":
        r = np.abs(a)
    elif op == "neg":
        r = (np.asarray(0).astype(a.dtype) - a) if a.dtype != np.bool_ else a
    elif op == "not":
        r = ~a
    elif op == "cnot":
        r = (a == 0).astype(a.dtype)
    else:
        bits = _bits(t)
        u = a.astype(V.UNSIGNED[bits // 8], copy=False) if a.dtype.kind != "u" else a
        u = np.asarray(u)
        if op == "popc":
            r = np.bitwise_count(u).astype(np.uint32)
        elif op == "brev":
            r = _brev(u, bits)
        else:
            x = u
            if op == "bfind" and V.is_signed(t):
                x = np.where(np.asarray(a) < 0, ~u, u)
            lead = _clz(x, bits)
            if op == "clz":
                r = lead.astype(np.uint32)
            else:
                pos = (bits - 1 - lead).astype(np.int64)
                r = np.where(
                    x == 0, 0xFFFFFFFF, pos if "shiftamt" not in ins.mods else bits - 1 - pos
                )
                r = r.astype(np.uint32)
        w.put(ins.operands[0], r, "u32" if op in ("popc", "clz", "bfind") else t, sel)
        return
    w.put(ins.operands[0], r, t, sel)


def _clz(u, bits):
    x = u.astype(np.uint64)
    n = np.zeros(x.shape, dtype=np.int64)
    for s in (32, 16, 8, 4, 2, 1):
        if s >= bits:
            continue
        top = x >> U64(bits - s) == 0
        n = n + np.where(top, s, 0)
        x = np.where(top, x << U64(s), x) & U64(
            (1 << bits) - 1 if bits < 64 else 0xFFFFFFFFFFFFFFFF
        )
    n = n + np.where(x >> U64(bits - 1) == 0, 1, 0)
    return n


def _brev(u, bits):
    x = u.astype(np.uint64)
    r = np.zeros_like(x)
    for i in range(bits):
        r |= ((x >> U64(i)) & U64(1)) << U64(bits - 1 - i)
    return r.astype(V.UNSIGNED[bits // 8])


@handler("and", "or", "xor", prepare=_prep_type)
def _logic(w, ins, sel, pc):
    t = ins.info
    a = w.get(ins.operands[1], t, sel, pc)
    b = w.get(ins.operands[2], t, sel, pc)
    r = a & b if ins.op == "and" else (a | b if ins.op == "or" else a ^ b)
    w.put(ins.operands[0], r, t, sel)


@handler("min", "max", prepare=_prep_type)
def _minmax(w, ins, sel, pc):
    t = ins.info
    if t[0] == "f" or t in ("bf16", "bf16x2", "f16x2"):
        from .ops_float import minmax

        return minmax(w, ins, sel, pc)
    a = w.get(ins.operands[1], t, sel, pc)
    b = w.get(ins.operands[2], t, sel, pc)
    w.put(ins.operands[0], np.minimum(a, b) if ins.op == "min" else np.maximum(a, b), t, sel)


@handler("shl", "shr", prepare=_prep_type)
def _shift(w, ins, sel, pc):
    t = ins.info
    bits = _bits(t)
    a = w.get(ins.operands[1], t, sel, pc)
    s = w.get(ins.operands[2], "u32", sel, pc).astype(np.uint32)
    big = s >= bits
    sc = np.minimum(s, bits - 1).astype(a.dtype if a.dtype.kind == "u" else V.UNSIGNED[bits // 8])
    if ins.op == "shl":
        u = a.astype(V.UNSIGNED[bits // 8], copy=False) if a.dtype.kind != "u" else a
        r = np.where(big, 0, u << sc).astype(u.dtype)
        w.put(ins.operands[0], r, t if t[0] != "s" else "b" + t[1:], sel)
        return
    if V.is_signed(t):
        r = a >> sc.astype(a.dtype)  # arithmetic; >= width fills with the sign
        r = np.where(big, np.where(a < 0, -1, 0), r).astype(a.dtype)
    else:
        r = np.where(big, 0, a >> sc).astype(a.dtype)
    w.put(ins.operands[0], r, t, sel)


@handler("shf", prepare=_prep_type)
def _shf(w, ins, sel, pc):
    lo = w.get(ins.operands[1], "u32", sel, pc).astype(U64)
    hi = w.get(ins.operands[2], "u32", sel, pc).astype(U64)
    n = w.get(ins.operands[3], "u32", sel, pc).astype(U64)
    n = np.minimum(n, U64(32)) if "clamp" in ins.mods else n & U64(31)
    both = (hi << U64(32)) | lo
    shifted = (both << n) >> U64(32) if "l" in ins.mods else both >> n  # shf.l: the high word
    r = shifted & U64(0xFFFFFFFF)
    w.put(ins.operands[0], r.astype(np.uint32), "b32", sel)


@handler("bfe", prepare=_prep_type)
def _bfe(w, ins, sel, pc):
    t = ins.info
    bits = _bits(t)
    a = w.get(ins.operands[1], t, sel, pc)
    pos = w.get(ins.operands[2], "u32", sel, pc).astype(np.int64) & 0xFF
    ln = w.get(ins.operands[3], "u32", sel, pc).astype(np.int64) & 0xFF
    u = np.asarray(a).astype(np.uint64) & U64((1 << bits) - 1 if bits < 64 else 2**64 - 1)
    end = np.minimum(pos + ln, bits)
    width = np.maximum(end - pos, 0)
    shifted = u >> np.minimum(pos, 63).astype(U64)
    shifted = np.where(pos >= bits, U64(0), shifted)
    mask = np.where(
        width >= 64, U64(2**64 - 1), (U64(1) << np.minimum(width, 63).astype(U64)) - U64(1)
    )
    field = shifted & mask
    if V.is_signed(t):
        sbit_pos = np.where(ln == 0, 0, np.minimum(pos + ln - 1, bits - 1))
        sign = ((u >> sbit_pos.astype(U64)) & U64(1)) == 1
        sign = sign & (ln != 0)
        field = np.where(sign, field | ~mask, field)
    r = np.where(ln == 0, U64(0), field)
    w.put(ins.operands[0], r.astype(V.UNSIGNED[bits // 8]), "b" + t[1:], sel)


@handler("bfi", prepare=_prep_type)
def _bfi(w, ins, sel, pc):
    t = ins.info
    bits = _bits(t)
    a = np.asarray(w.get(ins.operands[1], t, sel, pc)).astype(U64)
    b = np.asarray(w.get(ins.operands[2], t, sel, pc)).astype(U64)
    pos = w.get(ins.operands[3], "u32", sel, pc).astype(np.int64) & 0xFF
    ln = w.get(ins.operands[4], "u32", sel, pc).astype(np.int64) & 0xFF
    width = np.clip(np.minimum(pos + ln, bits) - pos, 0, 64)
    mask = np.where(
        width >= 64, U64(2**64 - 1), (U64(1) << np.minimum(width, 63).astype(U64)) - U64(1)
    )
    p = np.minimum(pos, 63).astype(U64)
    r = np.where((ln == 0) | (pos >= bits), b, (b & ~(mask << p)) | ((a & mask) << p))
    w.put(ins.operands[0], r.astype(V.UNSIGNED[bits // 8]), t, sel)


@handler("prmt", prepare=_prep_type)
def _prmt(w, ins, sel, pc):
    a = w.get(ins.operands[1], "u32", sel, pc).astype(U64)
    b = w.get(ins.operands[2], "u32", sel, pc).astype(U64)
    c = w.get(ins.operands[3], "u32", sel, pc).astype(U64)
    both = (b << U64(32)) | a
    mode = [m for m in ins.mods if m in ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")]
    if mode:  # the ISA's fixed tables, from emulator/semantics
        from .semantics import bits

        raw = (a, b, c)
        xa, xb, xc = (np.atleast_1d(x) for x in np.broadcast_arrays(*raw))
        r = bits.prmt(xa, xb, xc, mode=mode[0])
        r = np.asarray(r).astype(np.uint32)
        w.put(
            ins.operands[0], r.reshape(()) if all(np.ndim(x) == 0 for x in raw) else r, "b32", sel
        )
        return
    r = np.zeros(np.broadcast(a, b, c).shape, dtype=U64)
    for k in range(4):
        sel_k = (c >> U64(4 * k)) & U64(0xF)
        byte = (both >> ((sel_k & U64(7)) * U64(8))) & U64(0xFF)
        byte = np.where(sel_k & U64(8), np.where(byte & U64(0x80), U64(0xFF), U64(0)), byte)
        r |= byte << U64(8 * k)
    w.put(ins.operands[0], r.astype(np.uint32), "b32", sel)


@handler("lop3", prepare=_prep_type)
def _lop3(w, ins, sel, pc):
    t = ins.info
    a = w.get(ins.operands[1], t, sel, pc)
    b = w.get(ins.operands[2], t, sel, pc)
    c = w.get(ins.operands[3], t, sel, pc)
    lut = int(w.get(ins.operands[4], "u32", sel, pc))
    r = np.zeros(np.broadcast(a, b, c).shape, dtype=np.asarray(a).dtype)
    for k in range(8):
        if lut >> k & 1:
            ta = a if k & 4 else ~a
            tb = b if k & 2 else ~b
            tc = c if k & 1 else ~c
            r = r | (ta & tb & tc)
    w.put(ins.operands[0], r, t, sel)


# ---- comparisons and selection

_CMP_INT = {
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
    "ge": np.greater_equal, "lo": np.less, "ls": np.less_equal, "hi": np.greater,
    "hs": np.greater_equal,
}  # fmt: skip


def compare(cmp: str, a, b, t: str):
    """Integer comparison (lo/ls/hi/hs compare as unsigned)."""
    if cmp in ("lo", "ls", "hi", "hs") and V.is_signed(t):
        a, b = a.astype(V.UNSIGNED[a.dtype.itemsize]), b.astype(V.UNSIGNED[a.dtype.itemsize])
    return _CMP_INT[cmp](a, b)


_FLOATS = ("f32", "f64", "f16", "bf16", "f16x2", "bf16x2")


def _compare_operands(w, ins, cmp, t, sel, pc):
    if t in _FLOATS:
        from .ops_float import fsetp

        return fsetp(w, ins, cmp, t, sel, pc, "ftz" in ins.mods)
    a = w.get(ins.operands[1], t, sel, pc)
    b = w.get(ins.operands[2], t, sel, pc)
    return compare(cmp, a, b, t)


def _prep_setp(ins):
    ts = types_of(ins)
    if not ts:
        refuse(ins, "setp without a type")
    cmp = [m for m in ins.mods if m not in ts and m not in ("ftz", "and", "or", "xor")]
    if len(cmp) != 1:
        refuse(ins, "setp needs one comparison")
    bop = next((m for m in ins.mods if m in ("and", "or", "xor")), None)
    ins.info = (cmp[0], ts[-1], bop)


def _bool_op(bop, x, y):
    return x & y if bop == "and" else (x | y if bop == "or" else x ^ y)


@handler("setp", prepare=_prep_setp)
def _setp(w, ins, sel, pc):
    cmp, t, bop = ins.info
    r = _compare_operands(w, ins, cmp, t, sel, pc)
    dst = ins.operands[0]
    c = w.get(ins.operands[3], "pred", sel, pc) if bop else None
    if t in ("f16x2", "bf16x2"):  # setp.f16x2 p|q: element 0's and element 1's result
        p, q = r
        if bop:
            p, q = _bool_op(bop, p, c), _bool_op(bop, q, c)
    elif bop:
        p, q = _bool_op(bop, r, c), _bool_op(bop, ~r, c)
    else:
        p, q = r, ~r
    if type(dst) is Pair:
        w.put(dst.first, p, "pred", sel)
        w.put(dst.second, q, "pred", sel)
    else:
        w.put(dst, p, "pred", sel)


@handler("set", prepare=_prep_setp)
def _set(w, ins, sel, pc):
    cmp, _t, bop = ins.info
    ts = types_of(ins)
    dt, st = ts[0], ts[-1]
    r = _compare_operands(w, ins, cmp, st, sel, pc)
    if bop:
        r = _bool_op(bop, r, w.get(ins.operands[3], "pred", sel, pc))
    if dt == "f32":
        out = np.where(r, np.float32(1.0), np.float32(0.0))
    else:
        out = np.where(
            r, np.asarray(-1).astype(V.NP[dt]) if V.is_signed(dt) else V.NP[dt](~V.NP[dt](0)), 0
        ).astype(V.NP[dt])
    w.put(ins.operands[0], out, dt, sel)


@handler("selp", prepare=_prep_type)
def _selp(w, ins, sel, pc):
    t = ins.info
    a = w.get(ins.operands[1], t, sel, pc)
    b = w.get(ins.operands[2], t, sel, pc)
    p = w.get(ins.operands[3], "pred", sel, pc)
    w.put(ins.operands[0], np.where(p, a, b), t, sel)


@handler("slct", prepare=_prep_type)
def _slct(w, ins, sel, pc):
    ts = types_of(ins)
    dt, ct = ts[0], ts[-1]
    a = w.get(ins.operands[1], dt, sel, pc)
    b = w.get(ins.operands[2], dt, sel, pc)
    c = w.get(ins.operands[3], ct, sel, pc)
    w.put(ins.operands[0], np.where(c >= 0, a, b), dt, sel)


# ---- moves


@handler("mov", prepare=_prep_type)
def _mov(w, ins, sel, pc):
    t = ins.info
    dst, src = ins.operands[0], ins.operands[1]
    if type(src) is Vec:  # pack: mov.b64 %rd, {%r1, %r2} (first element in the low bits)
        parts = src.items
        pbits = _bits(t) // len(parts)
        ptype = "b" + str(pbits)
        acc = None
        for k, p in enumerate(parts):
            v = np.asarray(w.get(p, ptype, sel, pc)).astype(np.uint64) << U64(pbits * k)
            acc = v if acc is None else acc | v
        assert acc is not None  # a vector has elements (pbits divided by their count above)
        w.put(dst, acc.astype(V.UNSIGNED[_bits(t) // 8]), t, sel)
        return
    if type(dst) is Vec:  # unpack
        parts = dst.items
        pbits = _bits(t) // len(parts)
        v = np.asarray(w.get(src, t, sel, pc)).astype(np.uint64)
        for k, p in enumerate(parts):
            piece = (v >> U64(pbits * k)) & U64((1 << pbits) - 1)
            w.put(p, piece.astype(V.UNSIGNED[pbits // 8]), "b" + str(pbits), sel)
        return
    if type(src) is Reg and type(dst) is Reg and t != "pred":
        w.put(
            dst,
            w.get(src, "b" + str(_bits(t)) if t not in ("pred",) else t, sel, pc),
            "b" + str(_bits(t)),
            sel,
        )
        return
    w.put(dst, w.get(src, t, sel, pc), t, sel)
