"""Warp-level instructions over lane arrays: shfl.sync, vote.sync, match.sync, redux.sync,
activemask, bar.warp.sync. Each waits (see simt.py) until the lanes its member mask names
have arrived, then exchanges values among the lanes that run it together."""

from __future__ import annotations

import numpy as np

from . import values as V
from .decode import Imm, Pair
from .ops_common import handler, last_type, refuse, specializer


def sync_wait(w, ins, sel, pc, mask_op) -> np.ndarray:
    """Threads of sel that may run now; the others are parked at pc until lanes arrive."""
    idx = w.idx(sel)
    mask = w.get(mask_op, "u32", sel, pc)
    ready, waiting = w.sched.warp_ready(pc, idx, mask)
    if waiting.size:
        w.sched.stall(pc, waiting)
    return ready


def whole_warps(w, idx) -> bool:
    """idx (sorted, unique) is made of complete warps, each its 32 lanes in order: then lane k
    of row r is idx[32 r + k] and nothing needs laying out. (Asked twice per step, by
    warp_ready and the instruction: the last answer is kept with the group it was for.)"""
    if idx.size == 0 or idx.size % 32 or w.block_threads % 32:
        return False
    if idx is w.all_idx:
        return True
    last = w.whole_warps_last
    if last is not None and last[0] is idx:
        return last[1]
    rows = idx.reshape(-1, 32)
    ok = bool(not (rows[:, 0] % 32).any() and (rows[:, 31] - rows[:, 0] == 31).all())
    w.whole_warps_last = (idx, ok)
    return ok


def _lane_table(w, idx, vals, fill=0):
    """values laid out as [warp, lane] (absent lanes = fill), and each thread's warp row."""
    if whole_warps(w, idx):
        nw = idx.size // 32
        table = np.ascontiguousarray(np.broadcast_to(vals, idx.shape)).reshape(nw, 32)
        row = np.repeat(np.arange(nw), 32)
        lane = np.tile(np.arange(32, dtype=np.int64), nw)
        return table, None, row, lane
    gw = w.gwarp[idx]
    if gw.size > 1 and not (gw[1:] < gw[:-1]).any():
        # idx is sorted (a thread group), so its warps come in runs: rows without a sort
        change = np.empty(gw.size, dtype=bool)
        change[0] = True
        np.not_equal(gw[1:], gw[:-1], out=change[1:])
        row = np.cumsum(change) - 1
        nrows = int(row[-1]) + 1
    else:
        uniq, row = np.unique(gw, return_inverse=True)
        nrows = uniq.size
    table = np.full((nrows, 32), fill, dtype=np.asarray(vals).dtype)
    present = np.zeros((nrows, 32), dtype=bool)
    lane = w.lane[idx].astype(np.int64)
    table[row, lane] = vals
    present[row, lane] = True
    return table, present, row, lane


def _permutation(w, mode: str, b: int, c: int, nw: int) -> tuple[np.ndarray, np.ndarray]:
    """(source position, predicate) of each lane of nw whole warps laid out one after another,
    for one b and c (kept by the wave: a kernel uses a few): a flat index, as a gather of
    [warps, 32] rows by a lane array costs several times more in numpy."""
    key = (mode, b, c, nw)
    got = w.lane_cache.get(key)
    if got is None:
        if len(w.lane_cache) >= 64:  # a bound on what a wave keeps (a kernel uses a few)
            w.lane_cache.clear()
        got = w.lane_cache[key] = _lanes(mode, b, c, nw)
    return got


def _source_lane(mode: str, lane, b, c):
    """The ISA's shfl.sync rule (PTX ISA, shfl.sync): each lane's source lane ``j`` and whether
    it lies inside the lane's segment (``ok``; outside, the lane keeps its own value). ``lane``,
    ``b`` (the lane operand) and ``c`` (clamp | segment mask << 8) are ints or int64 arrays of
    one shape: one warp's lanes for the cached permutation, every ready lane for the general
    case."""
    clamp = c & 0x1F
    segmask = (c >> 8) & 0x1F
    max_lane = (lane & segmask) | (clamp & ~segmask)
    if mode == "up":
        j = lane - b
        return j, j >= max_lane
    if mode == "down":
        j = lane + b
    elif mode == "bfly":
        j = lane ^ b
    else:
        j = (lane & segmask) | (b & ~segmask)
    return j, j <= max_lane


def _lanes(mode: str, b: int, c: int, nw: int) -> tuple[np.ndarray, np.ndarray]:
    """_shfl's rule below, worked out on one warp's lanes and laid out for nw warps."""
    lane = np.arange(32, dtype=np.int64)
    j, ok = _source_lane(mode, lane, b, c)
    src = np.where(ok, j, lane) & 31
    flat = (np.arange(nw, dtype=np.int64) * 32)[:, None] + src
    out = (flat.reshape(-1), np.tile(ok, nw))
    for a in out:
        a.flags.writeable = False
    return out


@handler("shfl", prepare=lambda ins: None)
def _shfl(w, ins, sel, pc):
    if "sync" not in ins.mods:
        refuse(ins, "shfl without .sync (removed after sm_70) is not emulated")
    mode = next((m for m in ins.mods if m in ("up", "down", "bfly", "idx")), None)
    if mode is None:
        refuse(ins, "shfl needs .up, .down, .bfly or .idx")
    ops = ins.operands
    ready = sync_wait(w, ins, sel, pc, ops[4])
    if ready.size == 0:
        return []
    rsel = ready
    dst = ops[0]
    pred_out = None
    if type(dst) is Pair:
        pred_out = dst.second
        dst = dst.first
    a0 = np.asarray(w.get(ops[1], "b32", rsel, pc))
    b0 = np.asarray(w.get(ops[2], "u32", rsel, pc))
    c0 = np.asarray(w.get(ops[3], "u32", rsel, pc))
    if b0.ndim == 0 and c0.ndim == 0 and whole_warps(w, ready):
        # every warp whole and one lane/clamp for all: the same lane permutation in each warp
        nw = ready.size // 32
        src, ok = _permutation(w, mode, int(b0), int(c0), nw)
        w.put(dst, a0 if a0.ndim == 0 else a0.take(src), "b32", rsel)
        if pred_out is not None:
            w.put(pred_out, ok, "pred", rsel)
        return [(pc + 1, ready)]
    a = np.broadcast_to(a0, ready.shape)
    b = np.broadcast_to(b0.astype(np.int64), ready.shape)
    c = np.broadcast_to(c0.astype(np.int64), ready.shape)
    table, present, row, lane = _lane_table(w, ready, a)
    j, ok = _source_lane(mode, lane, b, c)
    j = np.where(ok, j, lane) & 31
    val = table[row, j] if present is None else np.where(present[row, j], table[row, j], a)
    w.put(dst, val, "b32", rsel)
    if pred_out is not None:
        w.put(pred_out, ok, "pred", rsel)
    return [(pc + 1, ready)]


@specializer("shfl")
def _specialize_shfl(ins):
    """shfl.sync with an immediate lane, clamp and a full member mask (what compilers emit):
    when the group is whole warps, every lane may run (warp_ready's first case) and the
    exchange is the cached permutation; otherwise _shfl."""
    mode = next((m for m in ins.mods if m in ("up", "down", "bfly", "idx")), None)
    ops = ins.operands
    if "sync" not in ins.mods or mode is None or len(ops) < 5:
        return None
    if not all(type(o) is Imm for o in ops[2:5]):
        return None
    if int(V.imm_value(ops[4], "u32")) & 0xFFFFFFFF != 0xFFFFFFFF:
        return None
    b, c = int(V.imm_value(ops[2], "u32")), int(V.imm_value(ops[3], "u32"))
    dst, pred_out = (ops[0].first, ops[0].second) if type(ops[0]) is Pair else (ops[0], None)
    src_op = ops[1]

    def run(w, ins, sel, pc):
        idx = w.idx(sel)
        if w.sched.forced_sync == pc or not whole_warps(w, idx):
            return _shfl(w, ins, sel, pc)
        src, ok = _permutation(w, mode, b, c, idx.size // 32)
        a = np.asarray(w.get(src_op, "b32", sel, pc))
        w.put(dst, a if a.ndim == 0 else a.take(src), "b32", sel)
        if pred_out is not None:
            w.put(pred_out, ok, "pred", sel)
        return [(pc + 1, idx)]

    return run


@handler("vote")
def _vote(w, ins, sel, pc):
    if "sync" not in ins.mods:
        refuse(ins, "vote without .sync is not emulated")
    mode = next((m for m in ins.mods if m in ("all", "any", "uni", "ballot")), None)
    ops = ins.operands
    ready = sync_wait(w, ins, sel, pc, ops[2])
    if ready.size == 0:
        return []
    p = np.broadcast_to(np.asarray(w.get(ops[1], "pred", ready, pc)), ready.shape)
    mask = np.broadcast_to(
        np.asarray(w.get(ops[2], "u32", ready, pc)).astype(np.uint64), ready.shape
    )
    gw = w.gwarp[ready]
    lane = w.lane[ready].astype(np.uint64)
    bits = np.where(p, np.uint64(1) << lane, np.uint64(0))
    ballot_w = np.bincount(gw, weights=bits.astype(np.float64), minlength=w.nwarps).astype(
        np.uint64
    )
    here_w = np.bincount(
        gw, weights=(np.uint64(1) << lane).astype(np.float64), minlength=w.nwarps
    ).astype(np.uint64)
    ballot = ballot_w[gw] & mask & here_w[gw]
    members = mask & here_w[gw]
    if mode == "ballot":
        w.put(ops[0], ballot.astype(np.uint32), "b32", ready)
    elif mode == "any":
        w.put(ops[0], ballot != 0, "pred", ready)
    elif mode == "all":
        w.put(ops[0], ballot == members, "pred", ready)
    else:
        w.put(ops[0], (ballot == members) | (ballot == 0), "pred", ready)
    return [(pc + 1, ready)]


@handler("activemask")
def _activemask(w, ins, sel, pc):
    idx = w.idx(sel)
    gw = w.gwarp[idx]
    lane = w.lane[idx].astype(np.uint64)
    m = np.bincount(
        gw, weights=(np.uint64(1) << lane).astype(np.float64), minlength=w.nwarps
    ).astype(np.uint64)
    w.put(ins.operands[0], m[gw].astype(np.uint32), "b32", sel)


@handler("match")
def _match(w, ins, sel, pc):
    t = last_type(ins)
    ops = ins.operands
    ready = sync_wait(w, ins, sel, pc, ops[2])
    if ready.size == 0:
        return []
    a = np.broadcast_to(np.asarray(w.get(ops[1], t, ready, pc)), ready.shape)
    mask = np.broadcast_to(
        np.asarray(w.get(ops[2], "u32", ready, pc)).astype(np.uint64), ready.shape
    )
    table, present, row, lane = _lane_table(w, ready, a)
    if present is None:  # whole warps: every lane there
        present = np.ones(table.shape, dtype=bool)
    same = (table[row] == a[:, None]) & present[row]
    lane_bits = np.uint64(1) << np.arange(32, dtype=np.uint64)
    m = (same * lane_bits).sum(axis=1).astype(np.uint64) & mask
    dst = ops[0]
    if "any" in ins.mods:
        w.put(dst, m.astype(np.uint32), "b32", ready)
    else:
        allsame = present[row].sum(axis=1) == same.sum(axis=1)
        d = dst.first if type(dst) is Pair else dst
        w.put(d, np.where(allsame, m, 0).astype(np.uint32), "b32", ready)
        if type(dst) is Pair:
            w.put(dst.second, allsame, "pred", ready)
    return [(pc + 1, ready)]


@handler("redux")
def _redux(w, ins, sel, pc):
    t = last_type(ins)
    op = next(m for m in ins.mods if m in ("add", "min", "max", "and", "or", "xor"))
    ops = ins.operands
    ready = sync_wait(w, ins, sel, pc, ops[2])
    if ready.size == 0:
        return []
    a = np.broadcast_to(np.asarray(w.get(ops[1], t, ready, pc)), ready.shape)
    gw = w.gwarp[ready]
    uniq, row = np.unique(gw, return_inverse=True)
    dt = V.NP[t]
    r: np.ndarray
    if op == "add":
        acc = np.zeros(uniq.size, dtype=np.uint64)
        np.add.at(acc, row, a.astype(np.uint64))
        r = acc.astype(dt)
    else:
        ufunc = {"min": np.minimum, "max": np.maximum, "and": np.bitwise_and, "or": np.bitwise_or,
                 "xor": np.bitwise_xor}[op]  # fmt: skip
        init = {"min": np.iinfo(dt).max, "max": np.iinfo(dt).min, "and": ~dt(0), "or": 0, "xor": 0}[
            op
        ]
        acc = np.full(uniq.size, init, dtype=dt)
        ufunc.at(acc, row, a)
        r = acc
    w.put(ops[0], r[row], t, ready)
    return [(pc + 1, ready)]
