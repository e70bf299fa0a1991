"""Shared pieces of the instruction handlers: the type an instruction names, its registry."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

import numpy as np

from .decode import Instr
from .errors import Refused

TYPES = (
    "pred", "b8", "u8", "s8", "b16", "u16", "s16", "f16", "bf16", "b32", "u32", "s32", "f32",
    "f16x2", "bf16x2", "tf32", "b64", "u64", "s64", "f64", "b128",
)  # fmt: skip

# handler(w, ins, sel, pc) runs an instruction; prepare(ins) checks it once, at load;
# specialize(ins) may return a handler made for that one instruction (its operands and
# modifiers read once, at load: the common case without the general handler's decisions on
# every step), or None for the general one
HANDLERS: dict[str, Callable[..., Any]] = {}
PREPARE: dict[str, Callable[[Instr], object]] = {}
SPECIALIZE: dict[str, Callable[[Instr], Callable[..., Any] | None]] = {}


def specializer(*names: str):
    def deco(fn):
        for n in names:
            SPECIALIZE[n] = fn
        return fn

    return deco


def handler(*names: str, prepare=None):
    def deco(fn):
        for n in names:
            HANDLERS[n] = fn
            if prepare is not None:
                PREPARE[n] = prepare
        return fn

    return deco


def types_of(ins: Instr) -> list[str]:
    return [m for m in ins.mods if m in TYPES]


def last_type(ins: Instr) -> str:
    ts = types_of(ins)
    if not ts:
        raise Refused(ins.text, ins.line, "the instruction names no type")
    return ts[-1]


def refuse(ins: Instr, why: str) -> NoReturn:
    raise Refused(ins.text, ins.line, why)


def full(w, sel, val):
    """val broadcast to one value per thread of sel (an array, never 0-d)."""
    n = w.N if isinstance(sel, slice) else sel.size
    val = np.asarray(val)
    return np.broadcast_to(val, (n,)) if val.ndim == 0 else val


def count(w, sel) -> int:
    return w.N if isinstance(sel, slice) else int(sel.size)
