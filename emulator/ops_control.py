"""Control flow and block synchronisation: bra, ret/exit, trap, bar/barrier."""

from __future__ import annotations

import numpy as np

from . import errors as E
from .ops_common import handler, refuse


def _prep_bra(ins):
    if ins.target is None:
        refuse(ins, "an indirect branch (brx.idx) is not emulated")


@handler("bra", prepare=_prep_bra)
def _bra(w, ins, sel, pc):
    return [(ins.target, w.idx(sel))]


@handler("ret", "exit")
def _ret(w, ins, sel, pc):
    idx = w.idx(sel)
    w.sched.exit(idx)
    return []


@handler("trap")
def _trap(w, ins, sel, pc):
    idx = w.idx(sel)
    w.checks.add(
        E.TRAP, pc, "trap executed (the kernel aborts)", w, int(idx[0]), count=int(idx.size)
    )
    w.sched.result.trapped = True
    w.sched.done = True
    return []


def _prep_bar(ins):
    mods = set(ins.mods)
    if ins.op == "bar" and "warp" in mods:
        ins.info = ("warp", None)
        return
    if "red" in mods:  # bar.red.{popc.u32,and.pred,or.pred} d, a{, b}, {!}c
        op = next((m for m in ins.mods if m in ("popc", "and", "or")), None)
        if op is None or len(ins.operands) < 3:
            refuse(
                ins, "bar.red needs .popc, .and or .or, a destination, a barrier and a predicate"
            )
        ins.info = ("red", op)
        return
    wait = not ({"arrive"} & mods)
    ins.info = ("cta", wait)


@handler("bar", "barrier", prepare=_prep_bar)
def _bar(w, ins, sel, pc):
    kind, wait = ins.info
    idx = w.idx(sel)
    if kind == "warp":  # bar.warp.sync mask: a convergence point of the named lanes
        from .ops_warp import sync_wait

        ready = sync_wait(w, ins, sel, pc, ins.operands[0])
        return [(pc + 1, ready)]
    ops = ins.operands
    if kind == "red":  # the predicate is kept until the barrier releases with the reduction
        pred = np.broadcast_to(np.asarray(w.get(ops[-1], "pred", sel, pc)), idx.shape)
        w.sched.bar_pred[idx] = pred
        red_op = wait  # ("red", popc|and|or)
        w.sched.bar_red[_bar_id(w, ins, ops[1], sel, pc)] = (ops[0], red_op)
        ops, wait = ops[1:-1], True
    bar_id = 0
    if ops:
        bar_id = _bar_id(w, ins, ops[0], sel, pc)
    count = None
    if len(ops) > 1:
        c = w.get(ops[1], "u32", sel, pc)
        count = int(np.asarray(c).reshape(-1)[0])
    w.sched.barrier(pc, idx, bar_id, count, wait)
    return []


def _bar_id(w, ins, op, sel, pc) -> int:
    b = w.get(op, "u32", sel, pc)
    if np.ndim(b) and b.size and not (b == b[0]).all():
        refuse(ins, "a barrier id that differs between threads")
    return int(np.asarray(b).reshape(-1)[0]) if np.ndim(b) else int(b)
