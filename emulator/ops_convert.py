"""cvt: between integer widths (with .sat), integer ↔ float with the ISA's rounding modifiers,
float ↔ float (f64/f32/f16/bf16, packed f16x2/bf16x2 from two f32)."""

from __future__ import annotations

import numpy as np

from . import values as V
from .ops_common import handler, refuse, types_of
from .ops_float import _ftz, bf16_to_f32, f64_to_bf16, round_odd_f64

F64 = np.float64

_INT_ROUND = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}


def _prep_cvt(ins):
    ts = types_of(ins)
    if len(ts) != 2:
        refuse(ins, "cvt needs a destination and a source type")
    ins.info = (ts[0], ts[1])
    if ts[0] in ("e4m3x2", "e5m2x2", "tf32") or ts[1] in ("tf32",):
        refuse(ins, f"cvt to/from .{ts[0]} is not emulated")


def _read_float(w, op, t, sel, pc):
    if t == "bf16":
        return bf16_to_f32(w.get(op, "b16", sel, pc)).astype(F64)
    return np.asarray(w.get(op, t, sel, pc)).astype(F64)


def _to_float(x64, dt, mode):
    if mode not in (None, "rn"):
        refuse_mode(mode)
    if dt == "bf16":
        return f64_to_bf16(x64)
    return np.asarray(x64).astype(V.NP[dt])


def refuse_mode(mode):
    raise ValueError(f"rounding mode .{mode}")


@handler("cvt", prepare=_prep_cvt)
def _cvt(w, ins, sel, pc):
    dt, st = ins.info
    mods = ins.mods
    mode = next(
        (m for m in mods if m in ("rn", "rz", "rm", "rp", "rna", "rni", "rzi", "rmi", "rpi")), None
    )
    sat = "sat" in mods
    ops = ins.operands
    if dt in ("f16x2", "bf16x2"):  # cvt.rn.f16x2.f32 d, a, b: a → upper half, b → lower half
        a = _read_float(w, ops[1], st, sel, pc)
        b = _read_float(w, ops[2], st, sel, pc)
        half = "f16" if dt == "f16x2" else "bf16"
        hi, lo = _narrow(a, half, ins, sat), _narrow(b, half, ins, sat)
        r = lo.astype(np.uint32) | (hi.astype(np.uint32) << 16)
        w.put(ops[0], r.astype(np.uint32), "b32", sel)
        return
    dfloat = dt in ("f16", "f32", "f64", "bf16")
    sfloat = st in ("f16", "f32", "f64", "bf16")
    if not dfloat and not sfloat:  # integer widths
        a = w.get(ops[1], st, sel, pc)
        if sat:
            info = np.iinfo(V.NP[dt])
            a = np.clip(
                np.asarray(a).astype(np.float64 if a.dtype.itemsize == 8 else np.int64),
                info.min,
                info.max,
            )
            if np.asarray(w.get(ops[1], st, sel, pc)).dtype.itemsize == 8:
                a = _clip64(w.get(ops[1], st, sel, pc), dt)
        w.put(ops[0], np.asarray(a).astype(V.NP[dt]), dt, sel)
        return
    if sfloat and not dfloat:  # float → int
        x = _read_float(w, ops[1], st, sel, pc)
        if "ftz" in mods and st == "f32":
            x = _ftz(x.astype(np.float32)).astype(F64)
        rnd = _INT_ROUND.get(mode or "rzi")
        if rnd is None:
            refuse(ins, f"cvt float→int with .{mode}")
        with np.errstate(all="ignore"):
            r = rnd(x)
            info = np.iinfo(V.NP[dt])
            r = np.where(np.isnan(r), 0, np.clip(r, info.min, info.max))
            out = r.astype(np.float64)
            if info.bits == 64:
                res = np.where(
                    out >= 2.0**63,
                    np.asarray(info.max),
                    out.astype(np.int64) if info.min < 0 else 0,
                )
                if info.min >= 0:
                    res = np.where(out >= 2.0**63, (out - 2.0**63).astype(np.uint64) + np.uint64(2**63),
                                   out.astype(np.int64).astype(np.uint64))  # fmt: skip
                out = res
        w.put(ops[0], np.asarray(out).astype(V.NP[dt]), dt, sel)
        return
    if not sfloat and dfloat:  # int → float
        a = w.get(ops[1], st, sel, pc)
        if mode not in (None, "rn"):
            refuse(ins, f"cvt int→float with .{mode} is not emulated yet")
        a = np.asarray(a)
        if a.dtype.itemsize == 8 and dt in ("f32", "f16", "bf16"):
            hi = a.astype(np.float64)  # double rounding risk for >2^53: round via f64 odd
            err = (a - hi.astype(a.dtype)).astype(np.float64) if True else 0
            x = round_odd_f64(hi, err)
        else:
            x = a.astype(F64)
        r = _narrow(x, dt, ins, sat) if dt != "f64" else x
        w.put(ops[0], r, dt if dt != "bf16" else "b16", sel)
        return
    # float → float
    x = _read_float(w, ops[1], st, sel, pc)
    if "ftz" in mods:
        x = _ftz(x.astype(np.float32)).astype(F64) if st == "f32" else x
    if mode in ("rni", "rzi", "rmi", "rpi"):
        x = _INT_ROUND[mode](x)
        r = x.astype(V.NP[dt]) if dt != "bf16" else f64_to_bf16(x)
    elif mode not in (None, "rn") and V.nbytes(dt if dt != "bf16" else "b16") < V.nbytes(
        st if st != "bf16" else "b16"
    ):
        refuse(ins, f"cvt with .{mode} is not emulated yet")
    else:
        r = _narrow(x, dt, ins, sat)
    if "ftz" in mods and dt == "f32":
        r = _ftz(np.asarray(r))
    if sat:
        r = _sat(r, dt)
    w.put(ops[0], r, dt if dt != "bf16" else "b16", sel)


def _narrow(x64, dt, ins, sat):
    x64 = np.asarray(x64, F64)
    if sat:
        x64 = np.where(np.isnan(x64), 0.0, np.clip(x64, 0.0, 1.0))
    if dt == "bf16":
        return f64_to_bf16(x64)
    if dt in ("f16",):
        return (
            x64.astype(np.float16).view(np.uint16)
            if x64.ndim
            else np.asarray(x64.astype(np.float16)).reshape(()).view(np.uint16)
        )
    return x64.astype(V.NP[dt])


def _sat(r, dt):
    if dt == "bf16" or dt == "f16":
        return r
    r = np.asarray(r)
    return np.where(np.isnan(r), 0, np.clip(r, 0, 1)).astype(r.dtype)


def _clip64(a, dt):
    a = np.asarray(a)
    info = np.iinfo(V.NP[dt])
    if a.dtype == np.uint64:
        return np.minimum(a, np.uint64(max(info.max, 0))).astype(V.NP[dt])
    return np.clip(a, info.min, min(info.max, np.iinfo(np.int64).max)).astype(V.NP[dt])
