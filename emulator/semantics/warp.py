"""Warp collectives as value functions over [nwarps, 32] arrays (axis 1 = lane id).

The engine passes, per warp, the lanes that EXECUTE the instruction (``active``: bool
[nwarps, 32]) and the instruction's ``membermask`` (uint32 [nwarps] or scalar). Lanes
outside ``active`` get unspecified (zero) results the engine should not write back.
Each function also returns what a checker needs to report misuse (a source lane that is not
executing, a lane executing but missing from membermask).

Masks as numpy: ``mask_to_lanes(uint32[nw]) -> bool[nw, 32]``, ``lanes_to_mask`` back.
"""

from __future__ import annotations

import numpy as np

from .integer import as_type

LANES = np.arange(32, dtype=np.uint32)


def mask_to_lanes(mask) -> np.ndarray:
    """uint32 bitmask per warp ([nw] or scalar) → bool [nw, 32] (bit i = lane i)."""
    m = np.atleast_1d(np.asarray(mask).astype(np.uint32))
    return ((m[:, None] >> LANES[None, :]) & np.uint32(1)).astype(bool)


def lanes_to_mask(lanes) -> np.ndarray:
    """bool [nw, 32] → uint32 bitmask per warp [nw]."""
    lanes = np.asarray(lanes, dtype=bool)
    return (
        (lanes.astype(np.uint64) << LANES.astype(np.uint64)[None, :]).sum(axis=1).astype(np.uint32)
    )


def activemask(active) -> np.ndarray:
    """``activemask.b32 d``: the executing lanes' bitmask, per warp [nw]."""
    return lanes_to_mask(active)


def _bcast(x, shape, dtype=np.uint32):
    return np.broadcast_to(np.asarray(x).astype(dtype), shape)


def shfl(mode: str, a, b, c, active, membermask=0xFFFFFFFF):
    """``shfl.sync.mode.b32 d|p, a, b, c, membermask`` for every lane.

    ``a``: values [nw, 32] (any 32-bit dtype); ``b`` lane/offset and ``c`` the packed clamp
    (``c = ((32 - width) << 8) | clamp``), scalars or [nw, 32]. The ISA's rule:
    segmask = c[12:8], maxLane = (lane & segmask) | (c[4:0] & ~segmask), minLane = lane &
    segmask; up: j = lane - b, p = j >= maxLane; down: j = lane + b, p = j <= maxLane; bfly:
    j = lane ^ b, p = j <= maxLane; idx: j = minLane | (b[4:0] & ~segmask), p = j <= maxLane.
    If not p, the lane reads its own a.

    Returns (d [nw, 32], p bool [nw, 32], bad_source bool [nw, 32]: the source lane j is not
    executing or not in membermask, where the ISA leaves d undefined — d is then the source
    lane's register as it stands, and the engine should report it)."""
    a = np.asarray(a)
    shape = a.shape
    lane = np.broadcast_to(LANES.astype(np.int64)[None, :], shape)
    bv = _bcast(b, shape).astype(np.int64) & 31
    cv = _bcast(c, shape).astype(np.int64)
    seg = (cv >> 8) & 31
    cval = cv & 31
    max_lane = (lane & seg) | (cval & ~seg & 31)
    min_lane = lane & seg
    if mode == "up":
        j = lane - bv
        p = j >= max_lane
    elif mode == "down":
        j = lane + bv
        p = j <= max_lane
    elif mode == "bfly":
        j = lane ^ bv
        p = j <= max_lane
    elif mode == "idx":
        j = min_lane | (bv & ~seg & 31)
        p = j <= max_lane
    else:
        raise ValueError(f"shfl mode {mode!r}")
    j = np.where(p, j, lane)
    d = np.take_along_axis(a, j, axis=1)
    member = mask_to_lanes(membermask)
    member = np.broadcast_to(member, shape)
    act = np.asarray(active, dtype=bool)
    src_ok = np.take_along_axis(act & member, j, axis=1)
    bad = act & ~src_ok
    return d, p & act, bad


def vote(mode: str, pred, active, membermask=0xFFFFFFFF):
    """``vote.sync.{all,any,uni}.pred`` → bool [nw, 32]; ``vote.sync.ballot.b32`` → uint32
    [nw, 32] (bit i set if lane i executes, is in membermask and has pred true).
    Participants are the executing lanes in membermask."""
    pred = np.asarray(pred, dtype=bool)
    part = np.asarray(active, dtype=bool) & np.broadcast_to(mask_to_lanes(membermask), pred.shape)
    t = pred & part
    if mode == "ballot":
        return np.broadcast_to(lanes_to_mask(t)[:, None], pred.shape).copy()
    if mode == "all":
        r = ~(part & ~pred).any(axis=1)
    elif mode == "any":
        r = t.any(axis=1)
    elif mode == "uni":
        r = ~(part & pred).any(axis=1) | ~(part & ~pred).any(axis=1)
    else:
        raise ValueError(f"vote mode {mode!r}")
    return np.broadcast_to(r[:, None], pred.shape).copy()


def match(mode: str, a, active, membermask=0xFFFFFFFF):
    """``match.sync.any.b32/.b64 d, a, membermask``: d = mask of participating lanes whose a
    equals this lane's; ``match.sync.all`` d = all participants' mask if every participant
    has the same a, else 0, and p says which. Returns (d uint32 [nw, 32], p bool [nw, 32])."""
    a = np.asarray(a)
    part = np.asarray(active, dtype=bool) & np.broadcast_to(mask_to_lanes(membermask), a.shape)
    eq = (a[:, :, None] == a[:, None, :]) & part[:, None, :]
    bitsel = (np.uint64(1) << LANES.astype(np.uint64))[None, None, :]
    same = (eq.astype(np.uint64) * bitsel).sum(axis=2).astype(np.uint32)
    if mode == "any":
        return np.where(part, same, 0).astype(np.uint32), part.copy()
    if mode != "all":
        raise ValueError(f"match mode {mode!r}")
    pm = lanes_to_mask(part)[:, None]
    allsame = same == pm
    uniform = (allsame | ~part).all(axis=1)[:, None]
    d = np.where(part & uniform, pm, 0).astype(np.uint32)
    return d, part & uniform


def redux(op: str, a, t: str, active, membermask=0xFFFFFFFF) -> np.ndarray:
    """``redux.sync.op.type d, a, membermask``: add/min/max over u32/s32 (add wraps),
    and/or/xor over b32, of the participating lanes; broadcast to them ([nw, 32])."""
    a = as_type(a, t)
    part = np.asarray(active, dtype=bool) & np.broadcast_to(mask_to_lanes(membermask), a.shape)
    if op == "add":
        r = np.where(part, a.astype(np.int64), 0).sum(axis=1)
        r = as_type(r, "u64").astype(a.dtype)
    elif op in ("min", "max"):
        info = np.iinfo(a.dtype)
        fill = info.max if op == "min" else info.min
        x = np.where(part, a, np.array(fill).astype(a.dtype))
        r = x.min(axis=1) if op == "min" else x.max(axis=1)
    elif op in ("and", "or", "xor"):
        u = a.astype(np.uint32)
        ufill = np.uint32(0xFFFFFFFF) if op == "and" else np.uint32(0)
        x = np.where(part, u, ufill)
        r = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op].reduce(
            x, axis=1
        )
        r = r.astype(a.dtype)
    else:
        raise ValueError(f"redux op {op!r}")
    return np.where(part, r[:, None], 0).astype(a.dtype)
