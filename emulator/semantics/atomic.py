"""``atom`` / ``red`` value kernels: given the value in memory (``old``) and the operand(s),
the value to store. The thread's ``atom`` result is ``old`` itself; the engine serialises
lanes that hit the same address (in any order the ISA allows) and calls this per round, so
everything here is elementwise over lanes.

Types: integers as in ``integer`` ("u32" "s32" "u64" "s64" "b32" "b64"), "f32"/"f64" as
float arrays, "f16"/"bf16" as uint16 patterns, "f16x2"/"bf16x2" as uint32.
Rules (PTX ISA, atom): add wraps for integers; ``atom.add.f32`` rounds to nearest even and
flushes subnormal inputs and results to sign-preserving zero; ``.f64`` add rounds to nearest;
``.noftz`` f16/bf16 adds round to nearest and keep subnormals; inc/dec (u32 only):
inc: old >= b ? 0 : old + 1; dec: (old == 0 || old > b) ? b : old - 1; cas: old == b ? c : old.
"""

from __future__ import annotations

import numpy as np

from . import fp, half
from .integer import as_type, dtype_of

_FLOAT = ("f32", "f64")
_HALF = ("f16", "bf16", "f16x2", "bf16x2")


def atom_op(op: str, old, b, t: str, c=None) -> np.ndarray:
    """The new memory value of ``atom.op.t`` / ``red.op.t`` (``c`` is cas's new value)."""
    if t in _FLOAT:
        dt = np.float32 if t == "f32" else np.float64
        fx, fy = np.asarray(old, dtype=dt), np.asarray(b, dtype=dt)
        if op == "add":
            return fp.add(fx, fy, "rn", ftz=(t == "f32"))
        if op == "min":
            return fp.fmin(fx, fy)
        if op == "max":
            return fp.fmax(fx, fy)
        if op == "exch":
            return np.broadcast_to(fy, np.broadcast_shapes(fx.shape, fy.shape)).astype(dt)
        if op == "cas":
            xb, yb = fx.view(f"u{fx.itemsize}"), fy.view(f"u{fy.itemsize}")  # compare bits
            return np.where(xb == yb, np.asarray(c, dtype=dt), fx)
        raise ValueError(f"atom.{op}.{t} does not exist")
    if t in _HALF:
        if op == "add":
            return half.add(old, b, t)
        if op == "min":
            return half.hmin(old, b, t)
        if op == "max":
            return half.hmax(old, b, t)
        if op == "exch":
            return np.asarray(b)
        if op == "cas":
            return np.where(np.asarray(old) == np.asarray(b), np.asarray(c), np.asarray(old))
        raise ValueError(f"atom.{op}.{t} does not exist")
    x, y = as_type(old, t), as_type(b, t)
    dt = dtype_of(t)
    if op == "add":
        return (x + y).astype(dt)
    if op == "min":
        return np.minimum(x, y)
    if op == "max":
        return np.maximum(x, y)
    if op == "and":
        return x & y
    if op == "or":
        return x | y
    if op == "xor":
        return x ^ y
    if op == "exch":
        return np.broadcast_to(y, np.broadcast_shapes(x.shape, y.shape)).astype(dt)
    if op == "cas":
        return np.where(x == y, as_type(c, t), x).astype(dt)
    if op == "inc":
        return np.where(x >= y, 0, x + 1).astype(dt)
    if op == "dec":
        return np.where((x == 0) | (x > y), y, x - 1).astype(dt)
    raise ValueError(f"atom.{op}.{t} does not exist")
