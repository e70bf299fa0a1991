"""Control flow and block synchronisation: bra, ret/exit, trap, bar/barrier."""

from __future__ import annotations

import numpy as np

from . import errors as E
from .decode import Imm
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
    if "red" in mods:
        refuse(ins, "bar.red (barrier with reduction) is not emulated")
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
    bar_id = 0
    if ops:
        b = w.get(ops[0], "u32", sel, pc)
        if np.ndim(b) and b.size and not (b == b[0]).all():
            refuse(ins, "a barrier id that differs between threads")
        bar_id = int(np.asarray(b).reshape(-1)[0]) if np.ndim(b) else int(b)
    count = None
    if len(ops) > 1:
        c = w.get(ops[1], "u32", sel, pc)
        count = int(np.asarray(c).reshape(-1)[0])
    if type(ops[0] if ops else None) is Imm or True:
        w.sched.barrier(pc, idx, bar_id, count, wait)
    return []
