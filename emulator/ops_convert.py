"""cvt: every conversion the ISA allows, computed by emulator/semantics/cvt.py (integer widths
with .sat, integer ↔ float and float ↔ float with every rounding modifier, .ftz/.sat/.relu,
packed f16x2/bf16x2 from two f32). Operands of f16/bf16 types travel as bit patterns."""

from __future__ import annotations

import numpy as np

from .ops_common import handler, refuse, types_of
from .semantics import cvt as C

_ROUNDING = ("rn", "rz", "rm", "rp", "rna", "rni", "rzi", "rmi", "rpi")
_HALF = ("f16", "bf16")
_PACKED = ("f16x2", "bf16x2", "e4m3x2", "e5m2x2")


def _prep_cvt(ins):
    ts = [m for m in ins.mods if m in ("e4m3x2", "e5m2x2")] + types_of(ins)  # fp8 pairs first
    if len(ts) != 2:
        refuse(ins, "cvt needs a destination and a source type")
    dst, src = ts
    if src in _PACKED or src in ("e4m3x2", "e5m2x2"):
        refuse(ins, f"cvt from .{src} is not emulated")
    rnd = next((m for m in ins.mods if m in _ROUNDING), None)
    ins.info = (dst, src, rnd, "ftz" in ins.mods, "sat" in ins.mods, "relu" in ins.mods,
                "satfinite" in ins.mods)  # fmt: skip


def _read(w, op, t, sel, pc):
    return np.asarray(w.get(op, "b16" if t in _HALF else t, sel, pc))


@handler("cvt", prepare=_prep_cvt)
def _cvt(w, ins, sel, pc):
    dst, src, rnd, ftz, sat, relu, satfinite = ins.info
    ops = ins.operands
    if dst in _PACKED:  # cvt.rn.f16x2.f32 d, a, b: a → the upper half, b → the lower
        raw = (_read(w, ops[1], src, sel, pc), _read(w, ops[2], src, sel, pc))
        a, b = (np.atleast_1d(x) for x in np.broadcast_arrays(*raw))
        r = C.cvt_pack_x2(a, b, dst, src, rnd or "rn", relu, satfinite)
        if all(np.ndim(x) == 0 for x in raw):
            r = np.asarray(r).reshape(())
        w.put(ops[0], r, "b32" if dst in ("f16x2", "bf16x2") else "b16", sel)
        return
    x = _read(w, ops[1], src, sel, pc)
    r = np.asarray(C.cvt(np.atleast_1d(x), dst, src, rnd, ftz, sat, relu, satfinite))
    if x.ndim == 0:
        r = r.reshape(())
    w.put(ops[0], r, "b16" if dst in _HALF else dst, sel)
