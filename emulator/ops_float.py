"""Floating-point instructions: f32/f64 arithmetic with .rn (numpy is IEEE round-to-nearest-even
per operation), fma with one rounding, .ftz and .sat, f16/bf16 and packed f16x2/bf16x2, and the
.approx functions.

Correct rounding where the ISA requires it: ``fma.rn.f32`` and f16 operations compute exactly in
float64 (a product of two f32 is exact there) and round once, by round-to-odd in f64 followed
by the cast (which is a correct single rounding because f64 keeps more than two extra bits).
The .approx functions return the correctly rounded value of the function, which lies within the
ISA's stated error bound of what the GPU returns (see emulator/README.md for the bounds)."""

from __future__ import annotations

import numpy as np

from . import values as V
from .ops_common import handler, last_type, refuse, types_of

F32, F64, F16 = np.float32, np.float64, np.float16
TINY32 = np.float32(np.finfo(np.float32).tiny)


def _ftz(x):
    if x.dtype != F32:
        return x
    return np.where(np.abs(x) < TINY32, np.copysign(F32(0), x), x).astype(F32)


def round_odd_f64(s, err):
    """s + err (err the exact remainder of s) rounded to odd in f64: if inexact and s's last
    mantissa bit is even, step one ulp toward the true value. Casting the result to a narrower
    type then rounds correctly (no double-rounding error)."""
    s = np.asarray(s, dtype=F64)
    err = np.asarray(err, dtype=F64)
    bits = s.view(np.int64) if s.ndim else s.reshape(1).view(np.int64)
    even = (bits & 1) == 0
    fix = (err != 0) & even & np.isfinite(s)
    if not np.any(fix):
        return s
    toward = np.where(err > 0, np.inf, -np.inf)
    return np.where(fix, np.nextafter(s, toward), s).reshape(s.shape)


def _two_sum(a, b):
    s = a + b
    bb = s - a
    err = (a - (s - bb)) + (b - bb)
    return s, err


def _to(x64, t):
    return np.asarray(x64).astype(V.NP[t] if t not in ("bf16",) else F32)


# ---- packed and half types


def _halves(u32):
    u = np.asarray(u32).astype(np.uint32)
    return (u & 0xFFFF).astype(np.uint16), (u >> 16).astype(np.uint16)


def _pack(lo16, hi16):
    return (np.asarray(lo16).astype(np.uint32) | (np.asarray(hi16).astype(np.uint32) << 16)).astype(
        np.uint32
    )


def bf16_to_f32(u16):
    return (
        (np.asarray(u16).astype(np.uint32) << 16).view(F32)
        if np.ndim(u16)
        else (np.asarray(np.uint32(int(u16) << 16)).view(F32))
    )


def f64_to_bf16(x64):
    """Round f64 to bf16 (round to nearest even, via round-to-odd f32 then a 16-bit round)."""
    x64 = np.asarray(x64, dtype=F64)
    f = x64.astype(F32)
    err = x64 - f.astype(F64)
    bits = (
        np.asarray(f).view(np.uint32).copy()
        if f.ndim
        else np.asarray(f).reshape(1).view(np.uint32).copy()
    )
    inexact = (
        (err.reshape(bits.shape) != 0) & ((bits & 1) == 0) & np.isfinite(f.reshape(bits.shape))
    )
    bits = np.where(
        inexact,
        bits
        + np.where((err.reshape(bits.shape) > 0) == (f.reshape(bits.shape) >= 0), 1, -1).astype(
            np.uint32
        ),
        bits,
    )
    nan = np.isnan(f.reshape(bits.shape))
    r = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    r = np.where(nan, np.uint16(0x7FFF), r)
    return r.reshape(np.shape(x64))


def _load(w, op, t, sel, pc):
    """A float operand as f64 values (and for x2 types, a pair of f64 arrays)."""
    if t == "f16x2":
        lo, hi = _halves(w.get(op, "b32", sel, pc))
        return lo.view(F16).astype(F64), hi.view(F16).astype(F64)
    if t == "bf16x2":
        lo, hi = _halves(w.get(op, "b32", sel, pc))
        return bf16_to_f32(lo).astype(F64), bf16_to_f32(hi).astype(F64)
    if t == "bf16":
        return bf16_to_f32(w.get(op, "b16", sel, pc)).astype(F64)
    if t == "f16":
        return w.get(op, t, sel, pc).astype(F64)
    return w.get(op, t, sel, pc)


def _round(x64, t, err=None):
    if err is not None:
        x64 = round_odd_f64(x64, err)
    if t == "bf16":
        return f64_to_bf16(x64)
    return np.asarray(x64).astype(V.NP[t])


def _store(w, ins, sel, vals, t):
    if t in ("f16x2", "bf16x2"):
        lo, hi = vals
        half = "f16" if t == "f16x2" else "bf16"
        lo, hi = _finish(ins, lo, half), _finish(ins, hi, half)
        if half == "f16":
            lo, hi = lo.view(np.uint16), hi.view(np.uint16)
        w.put(ins.operands[0], _pack(lo, hi), "b32", sel)
        return
    r = _finish(ins, vals, t)
    if t == "bf16":
        w.put(ins.operands[0], r, "b16", sel)
    else:
        w.put(ins.operands[0], r, t, sel)


def _finish(ins, r, t):
    r = np.asarray(r)
    if "sat" in ins.mods:
        if t == "bf16":
            f = bf16_to_f32(r)
            f = np.where(np.isnan(f), 0, np.clip(f, 0, 1))
            return f64_to_bf16(f)
        r = np.where(np.isnan(r), 0, np.clip(r, 0, 1)).astype(r.dtype)
    if "ftz" in ins.mods:
        r = _ftz(r)
    return r


def _pairwise(fn, a, b, t, two=False):
    if t in ("f16x2", "bf16x2"):
        return tuple(fn(x, y) for x, y in zip(a, b, strict=True))
    return fn(a, b)


def arith(w, ins, sel, pc):
    """add/sub/mul/div on float types."""
    t = last_type(ins)
    op = ins.op
    mode = next((m for m in ins.mods if m in ("rn", "rz", "rm", "rp")), "rn")
    if mode != "rn":
        refuse(ins, f"rounding mode .{mode} is not emulated yet")
    a = _load(w, ins.operands[1], t, sel, pc)
    b = _load(w, ins.operands[2], t, sel, pc)
    if "ftz" in ins.mods:
        a, b = _ftz(a), _ftz(b)
    if t in ("f32", "f64") and op != "div":
        r = a + b if op == "add" else (a - b if op == "sub" else a * b)
        return _store(w, ins, sel, r, t)
    if t in ("f32", "f64"):  # div
        if "approx" in ins.mods or "full" in ins.mods:
            r = (a.astype(F64) / b.astype(F64)).astype(V.NP[t])
        elif t == "f32":
            with np.errstate(all="ignore"):
                q = a.astype(F64) / b.astype(F64)
            r = _round(q, t, _div_residual(q, a.astype(F64), b.astype(F64)))
        else:
            r = a / b
        return _store(w, ins, sel, r, t)

    def f(x, y):  # half types: exact in f64, one rounding
        if op == "add":
            s = x + y
        elif op == "sub":
            s = x - y
        else:
            s = x * y
        return _round(s, "f16" if t in ("f16", "f16x2") else "bf16")

    return _store(w, ins, sel, _pairwise(f, a, b, t), t)


def _div_residual(q, a, b):
    """Sign of a/b - q, exactly (Dekker's product), for a correct single rounding."""
    with np.errstate(all="ignore"):
        p = q * b
        split = 134217729.0
        c = split * q
        qh = c - (c - q)
        ql = q - qh
        c2 = split * b
        bh = c2 - (c2 - b)
        bl = b - bh
        pe = ((qh * bh - p) + qh * bl + ql * bh) + ql * bl
        rem = (a - p) - pe
        return np.where(np.isfinite(q), np.sign(rem) * np.sign(b), 0.0)


def fma(w, ins, sel, pc):
    t = last_type(ins)
    mode = next((m for m in ins.mods if m in ("rn", "rz", "rm", "rp")), "rn")
    if mode != "rn":
        refuse(ins, f"rounding mode .{mode} is not emulated yet")
    a = _load(w, ins.operands[1], t, sel, pc)
    b = _load(w, ins.operands[2], t, sel, pc)
    c = _load(w, ins.operands[3], t, sel, pc)
    if "ftz" in ins.mods:
        a, b, c = _ftz(a), _ftz(b), _ftz(c)
    if t == "f64":
        return _store(w, ins, sel, _fma64(a, b, c), t)
    if t in ("f16x2", "bf16x2"):
        half = "f16" if t == "f16x2" else "bf16"
        r = tuple(_fma_small(x, y, z, half) for x, y, z in zip(a, b, c, strict=True))
        return _store(w, ins, sel, r, t)
    r = _fma_small(np.asarray(a, F64), np.asarray(b, F64), np.asarray(c, F64), t)
    return _store(w, ins, sel, r, t)


def _fma_small(a, b, c, t):
    with np.errstate(all="ignore"):
        p = a * b  # exact: 24+24 bits fit in 53
        s, err = _two_sum(p, c)
    return _round(s, t, np.where(np.isfinite(s), err, 0.0))


def _fma64(a, b, c):
    # float64 fma: numpy has no fused op; a*b+c with two roundings (documented limit)
    return a * b + c


_UNARY_APPROX = {
    "rcp": lambda x: 1.0 / x,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "ex2": np.exp2,
    "lg2": np.log2,
    "sin": np.sin,
    "cos": np.cos,
    "tanh": np.tanh,
}


def unary(w, ins, sel, pc):
    t = last_type(ins)
    op = ins.op
    a = _load(w, ins.operands[1], t, sel, pc)

    def f(x):
        x = np.asarray(x)
        if "ftz" in ins.mods:
            x = _ftz(x)
        with np.errstate(all="ignore"):
            x64 = x.astype(F64)
            if op == "abs":
                r = np.abs(x64)
            elif op == "neg":
                r = -x64
            elif op in ("rcp", "sqrt") and "rn" in ins.mods and t == "f32":
                q = _UNARY_APPROX[op](x64)
                if op == "rcp":
                    err = _div_residual(q, np.ones_like(x64), x64)
                else:
                    err = _sqrt_residual(q, x64)
                return _round(q, t, err)
            else:
                r = _UNARY_APPROX[op](x64)
        if t in ("f16", "f16x2"):
            return r.astype(F16)
        if t in ("bf16", "bf16x2"):
            return f64_to_bf16(r)
        return r.astype(V.NP[t])

    if t in ("f16x2", "bf16x2"):
        return _store(w, ins, sel, (f(a[0]), f(a[1])), t)
    if t == "bf16" and op in ("abs", "neg"):
        bits = w.get(ins.operands[1], "b16", sel, pc)
        r = bits & np.uint16(0x7FFF) if op == "abs" else bits ^ np.uint16(0x8000)
        return w.put(ins.operands[0], r, "b16", sel)
    return _store(w, ins, sel, f(a), t)


def _sqrt_residual(q, x):
    with np.errstate(all="ignore"):
        split = 134217729.0
        p = q * q
        c = split * q
        qh = c - (c - q)
        ql = q - qh
        pe = ((qh * qh - p) + 2 * qh * ql) + ql * ql
        rem = (x - p) - pe
        return np.where(np.isfinite(q) & (x > 0), np.sign(rem), 0.0)


for _n in ("rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos", "tanh"):
    handler(_n)(unary)
handler("fma")(fma)


def minmax(w, ins, sel, pc):
    t = last_type(ins)
    a = _load(w, ins.operands[1], t, sel, pc)
    b = _load(w, ins.operands[2], t, sel, pc)
    nan = "NaN" in ins.mods

    def f(x, y):
        x, y = np.asarray(x), np.asarray(y)
        if "ftz" in ins.mods:
            x, y = _ftz(x), _ftz(y)
        if nan:
            r = np.minimum(x, y) if ins.op == "min" else np.maximum(x, y)
        else:
            r = np.fmin(x, y) if ins.op == "min" else np.fmax(x, y)
            # -0.0 < +0.0 for min/max
            z = (x == 0) & (y == 0)
            if np.any(z):
                sx = np.signbit(x)
                sy = np.signbit(y)
                pick = (sx | sy) if ins.op == "min" else (sx & sy)
                r = np.where(z, np.where(pick, -0.0, 0.0).astype(r.dtype), r)
        if t in ("f16", "f16x2"):
            return r.astype(F16)
        if t in ("bf16", "bf16x2"):
            return f64_to_bf16(r)
        return r

    if t in ("f16x2", "bf16x2"):
        return _store(w, ins, sel, (f(a[0], b[0]), f(a[1], b[1])), t)
    return _store(w, ins, sel, f(a, b), t)


_FCMP = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: (a != b) & ~np.isnan(a) & ~np.isnan(b),
    "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
    "equ": lambda a, b: (a == b) | np.isnan(a) | np.isnan(b),
    "neu": lambda a, b: (a != b),
    "ltu": lambda a, b: ~(a >= b), "leu": lambda a, b: ~(a > b),
    "gtu": lambda a, b: ~(a <= b), "geu": lambda a, b: ~(a < b),
    "num": lambda a, b: ~np.isnan(a) & ~np.isnan(b),
    "nan": lambda a, b: np.isnan(a) | np.isnan(b),
}  # fmt: skip


def fcompare(cmp, a, b):
    with np.errstate(invalid="ignore"):
        return np.asarray(_FCMP[cmp](a, b))


def setp_x2(w, ins, sel, pc):
    cmp, t, bop = ins.info
    a = _load(w, ins.operands[1], t, sel, pc)
    b = _load(w, ins.operands[2], t, sel, pc)
    lo, hi = fcompare(cmp, a[0], b[0]), fcompare(cmp, a[1], b[1])
    dst = ins.operands[0]
    w.put(dst.first, lo, "pred", sel)
    w.put(dst.second, hi, "pred", sel)


@handler("testp")
def _testp(w, ins, sel, pc):
    t = types_of(ins)[-1]
    a = w.get(ins.operands[1], t, sel, pc)
    kind = next(
        m
        for m in ins.mods
        if m in ("finite", "infinite", "number", "notanumber", "normal", "subnormal")
    )
    fin = np.finfo(V.NP[t]).tiny
    r = {
        "finite": np.isfinite(a), "infinite": np.isinf(a), "number": ~np.isnan(a),
        "notanumber": np.isnan(a), "normal": np.isfinite(a) & (np.abs(a) >= fin),
        "subnormal": (a != 0) & (np.abs(a) < fin),
    }[kind]  # fmt: skip
    w.put(ins.operands[0], r, "pred", sel)


@handler("copysign")
def _copysign(w, ins, sel, pc):
    t = types_of(ins)[-1]
    a = w.get(ins.operands[1], t, sel, pc)
    b = w.get(ins.operands[2], t, sel, pc)
    w.put(ins.operands[0], np.copysign(b, a), t, sel)
