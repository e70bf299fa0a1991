"""Floating-point instructions, computed by the value functions of emulator/semantics (every
rounding mode, .ftz/.sat/.relu, the H200's NaN results, f16/bf16 and packed x2 types, the
.approx functions within the ISA's bounds — see emulator/semantics/README.md). This module
only reads operands, picks the function and writes the result.

f32/f64 operands are passed as float32/float64 arrays; f16/bf16 (and x2) as bit patterns."""

from __future__ import annotations

import numpy as np

from .ops_common import handler, last_type, refuse, specializer
from .semantics import approx, fp, half

HALF = ("f16", "bf16", "f16x2", "bf16x2")
_RND = ("rn", "rz", "rm", "rp")


def _rnd(ins, default="rn"):
    return next((m for m in ins.mods if m in _RND), default)


def _bits_type(t: str) -> str:
    return "b32" if t.endswith("x2") else "b16"


def _read(w, op, t, sel, pc):
    return np.asarray(w.get(op, _bits_type(t) if t in HALF else t, sel, pc))


def _write(w, ins, r, t, sel, like=None):
    r = np.asarray(r)
    if like is not None and all(np.ndim(x) == 0 for x in like):
        r = r.reshape(())
    w.put(ins.operands[0], r, _bits_type(t) if t in HALF else t, sel)


def _flags(ins):
    m = ins.mods
    return "ftz" in m, "sat" in m, "relu" in m


def _shape(*arrays):
    """Operands broadcast to one shape, at least 1-D (the value functions index lanes)."""
    return [np.atleast_1d(a) for a in np.broadcast_arrays(*arrays)]


def lower(r, like):
    """A value function's result back to 0-d when every operand was uniform (0-d)."""
    if np.ndim(like) == 0:
        return (
            tuple(np.asarray(x).reshape(()) for x in r)
            if isinstance(r, tuple)
            else (np.asarray(r).reshape(()))
        )
    return r


def arith(w, ins, sel, pc):
    """add/sub/mul/div on float types."""
    t = last_type(ins)
    ftz, sat, _relu = _flags(ins)
    raw = (_read(w, ins.operands[1], t, sel, pc), _read(w, ins.operands[2], t, sel, pc))
    a, b = _shape(*raw)
    op = ins.op
    if t in HALF:
        if op == "div":
            refuse(ins, f"div.{t} does not exist")
        hfn = {"add": half.add, "sub": half.sub, "mul": half.mul}[op]
        return _write(w, ins, hfn(a, b, t, _rnd(ins), ftz, sat), t, sel, raw)
    if op == "div":
        rnd = next((m for m in ins.mods if m in _RND + ("full", "approx")), "rn")
        return _write(w, ins, fp.div(a, b, rnd, ftz), t, sel, raw)
    fn = {"add": fp.add, "sub": fp.sub, "mul": fp.mul}[op]
    return _write(w, ins, fn(a, b, _rnd(ins), ftz, sat), t, sel, raw)


_UFUNC = {"add": np.add, "sub": np.subtract, "mul": np.multiply}
_FP = {"add": fp.add, "sub": fp.sub, "mul": fp.mul}


@specializer("add", "sub", "mul")
def _specialize_arith(ins):
    """add/sub/mul.f32/.f64 rounded to nearest, without .ftz/.sat: numpy's own IEEE operation
    is the value (what fp.add/sub/mul compute for them); a NaN result takes the full path for
    its NaN rule. The operands and the function are looked up once, here."""
    t = ins.info  # ops_int._prep_type: the instruction's type
    if t not in ("f32", "f64") or ins.op not in _UFUNC or not set(ins.mods) <= {"rn", t}:
        return None
    ufunc, slow = _UFUNC[ins.op], _FP[ins.op]
    dst, x, y = ins.operands[0], ins.operands[1], ins.operands[2]

    def run(w, ins, sel, pc):
        a = np.asarray(w.get(x, t, sel, pc))
        b = np.asarray(w.get(y, t, sel, pc))
        r = ufunc(a, b)
        if np.isnan(r).any():  # the H200's NaN results
            sa, sb = _shape(a, b)
            return _write(w, ins, slow(sa, sb, "rn", False, False), t, sel, (a, b))
        w.put(dst, r, t, sel)
        return None

    return run


@specializer("min", "max")
def _specialize_minmax(ins):
    """min/max.f32/.f64 without .ftz/.NaN/.relu: numpy's fmin/fmax (a NaN operand gives the
    other one, as PTX says) wherever the result is neither zero (the +0 > -0 rule) nor NaN
    (both operands NaN); such a result takes the full path (fp.fmin/fmax)."""
    t = ins.info  # ops_int._prep_type
    if t not in ("f32", "f64") or not set(ins.mods) <= {t}:
        return None
    fast, slow = (np.fmin, fp.fmin) if ins.op == "min" else (np.fmax, fp.fmax)
    dst, x, y = ins.operands[0], ins.operands[1], ins.operands[2]

    def run(w, ins, sel, pc):
        a = np.asarray(w.get(x, t, sel, pc))
        b = np.asarray(w.get(y, t, sel, pc))
        r = fast(a, b)
        if not r.all() or np.isnan(r).any():  # a zero (its sign) or a NaN: the full rule
            sa, sb = _shape(a, b)
            return _write(w, ins, slow(sa, sb, False, False), t, sel, (a, b))
        w.put(dst, r, t, sel)
        return None

    return run


def fma(w, ins, sel, pc):
    t = last_type(ins)
    ftz, sat, relu = _flags(ins)
    ops = [_read(w, ins.operands[i], t, sel, pc) for i in (1, 2, 3)]
    raw = ops
    a, b, c = _shape(*ops)
    if t in HALF:
        return _write(w, ins, half.fma(a, b, c, t, _rnd(ins), ftz, sat, relu), t, sel, raw)
    return _write(w, ins, fp.fma(a, b, c, _rnd(ins), ftz, sat), t, sel, raw)


handler("fma")(fma)


def unary(w, ins, sel, pc):
    t = last_type(ins)
    ftz, _sat, _relu = _flags(ins)
    raw = (_read(w, ins.operands[1], t, sel, pc),)
    a = np.atleast_1d(raw[0])
    op = ins.op
    is_approx = "approx" in ins.mods
    if op in ("abs", "neg"):
        if t in HALF:
            r = (half.habs if op == "abs" else half.hneg)(a, t, ftz)
        else:
            r = (fp.fabs if op == "abs" else fp.fneg)(a, ftz)
    elif op == "rcp":
        r = approx.rcp_approx(a, t, ftz) if is_approx else fp.rcp(a, _rnd(ins), ftz)
    elif op == "sqrt":
        r = approx.sqrt_approx(a, ftz) if is_approx else fp.sqrt(a, _rnd(ins), ftz)
    elif op == "rsqrt":
        r = approx.rsqrt(a, t, ftz)
    elif op == "ex2":
        r = approx.ex2(a, t, ftz)
    elif op == "tanh":
        r = approx.tanh(a, t)
    elif op in ("lg2", "sin", "cos"):
        if t != "f32":
            refuse(ins, f"{op}.{t} is not emulated")
        r = {"lg2": approx.lg2, "sin": approx.sin, "cos": approx.cos}[op](a, ftz)
    else:
        refuse(ins, f"{op} is not emulated")
    return _write(w, ins, r, t, sel, raw)


for _n in ("rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos", "tanh"):
    handler(_n)(unary)


def minmax(w, ins, sel, pc):
    t = last_type(ins)
    ftz, _sat, relu = _flags(ins)
    raw = (_read(w, ins.operands[1], t, sel, pc), _read(w, ins.operands[2], t, sel, pc))
    a, b = _shape(*raw)
    nan = "NaN" in ins.mods
    if t in HALF:
        hfn = half.hmin if ins.op == "min" else half.hmax
        return _write(w, ins, hfn(a, b, t, ftz, nan, relu), t, sel, raw)
    fn = fp.fmin if ins.op == "min" else fp.fmax
    return _write(w, ins, fn(a, b, ftz, nan), t, sel, raw)


def fsetp(w, ins, cmp, t, sel, pc, ftz):
    """The comparison of setp/set on float operands: a bool array (x2 types: a pair)."""
    raw = (_read(w, ins.operands[1], t, sel, pc), _read(w, ins.operands[2], t, sel, pc))
    a, b = _shape(*raw)
    if t in HALF:
        return lower(half.setp(cmp, a, b, t, ftz), raw[0] if np.ndim(raw[1]) == 0 else raw[1])
    return lower(fp.setp(cmp, a, b, ftz), raw[0] if np.ndim(raw[1]) == 0 else raw[1])


@handler("testp")
def _testp(w, ins, sel, pc):
    t = last_type(ins)
    op = next(
        m
        for m in ins.mods
        if m in ("finite", "infinite", "number", "notanumber", "normal", "subnormal")
    )
    a = _read(w, ins.operands[1], t, sel, pc)
    w.put(ins.operands[0], lower(fp.testp(op, np.atleast_1d(a)), a), "pred", sel)


@handler("copysign")
def _copysign(w, ins, sel, pc):
    t = last_type(ins)
    raw = (_read(w, ins.operands[1], t, sel, pc), _read(w, ins.operands[2], t, sel, pc))
    a, b = _shape(*raw)
    _write(w, ins, fp.copysign(a, b), t, sel, raw)
