"""Tensor-core instructions: mma.sync (m16n8k16 f16/bf16 → f32) and ldmatrix, with the
fragment layouts of the PTX ISA (§9.7.14.5.8, §9.7.14.5.15). Both are warp-wide: the warp's
32 lanes run together (all 32 must be present)."""

from __future__ import annotations

import numpy as np

from .decode import Vec
from .ops_common import handler, refuse


def _warp_rows(w, idx):
    """Threads grouped into full warps: [nwarps, 32] thread indices, or None if a warp is partial."""
    if idx.size % 32:
        return None
    rows = idx.reshape(-1, 32)
    if not (w.lane[rows] == np.arange(32, dtype=np.uint32)).all():
        return None
    return rows


def _prep_ldmatrix(ins):
    if not {"m8n8"} <= set(ins.mods) or "b16" not in ins.mods:
        refuse(ins, "only ldmatrix .m8n8 .b16 is emulated")
    n = next((int(m[1]) for m in ins.mods if m in ("x1", "x2", "x4")), None)
    if n is None:
        refuse(ins, "ldmatrix needs .x1, .x2 or .x4")
    ins.info = (n, "trans" in ins.mods)


@handler("ldmatrix", prepare=_prep_ldmatrix)
def _ldmatrix(w, ins, sel, pc):
    from .access import load
    from .ops_mem import _space_and_addr

    nmat, trans = ins.info
    idx = w.idx(sel)
    rows = _warp_rows(w, idx)
    if rows is None:
        refuse(ins, "ldmatrix run by a partial warp")
    _sp, addr = _space_and_addr(w, ins, ins.operands[1], "shared", sel)
    addr = np.broadcast_to(np.asarray(addr, np.uint64), idx.shape)
    # lane 8*i + r gives the address of row r of matrix i; each row is 8 b16 values (16 bytes),
    # read as 4 words: one load per word over every warp's address lanes (not one per row)
    nw = rows.shape[0]
    k = 8 * nmat
    lanes_sel = rows[:, :k].reshape(-1)  # sorted: warps in order, lanes ascending
    a = addr.reshape(-1, 32)[:, :k].reshape(-1)
    mats = np.zeros((nw, nmat, 8, 8), dtype=np.uint16)
    for c in range(4):
        v = load(w, "shared", a + np.uint64(4 * c), np.uint32, 1, lanes_sel, pc)[0]
        v = v.reshape(nw, nmat, 8)
        mats[:, :, :, 2 * c] = (v & 0xFFFF).astype(np.uint16)
        mats[:, :, :, 2 * c + 1] = (v >> 16).astype(np.uint16)
    if trans:
        mats = mats.transpose(0, 1, 3, 2)
    lane = np.arange(32)
    gid, tq = lane // 4, lane % 4
    dst = ins.operands[0].items if type(ins.operands[0]) is Vec else (ins.operands[0],)
    for i, d in enumerate(dst[:nmat]):
        lo = mats[:, i, gid, 2 * tq]
        hi = mats[:, i, gid, 2 * tq + 1]
        val = (lo.astype(np.uint32) | (hi.astype(np.uint32) << 16)).reshape(-1)
        w.put(d, val, "b32", idx)


def _prep_mma(ins):
    mods = set(ins.mods)
    if "m16n8k16" not in mods or not ({"row", "col"} <= mods):
        refuse(ins, "only mma.sync.aligned.m16n8k16.row.col is emulated")
    types = [m for m in ins.mods if m in ("f32", "f16", "bf16")]
    if len(types) != 4 or types[1] != types[2] or types[1] not in ("f16", "bf16"):
        refuse(ins, "only f16/bf16 inputs are emulated for mma")
    ins.info = tuple(types)


def _unpack_half(u32, kind):
    u = u32.astype(np.uint32)
    lo, hi = (u & 0xFFFF).astype(np.uint16), (u >> 16).astype(np.uint16)
    if kind == "f16":
        return lo.view(np.float16).astype(np.float64), hi.view(np.float16).astype(np.float64)
    from .semantics import half

    return half.to_float64(lo, "bf16"), half.to_float64(hi, "bf16")


@handler("mma", prepare=_prep_mma)
def _mma(w, ins, sel, pc):
    dtype_d, atype, _bt, ctype = ins.info
    idx = w.idx(sel)
    rows = _warp_rows(w, idx)
    if rows is None:
        refuse(ins, "mma.sync run by a partial warp")
    d_ops, a_ops, b_ops, c_ops = (op.items for op in ins.operands)
    nw = rows.shape[0]
    lane = np.arange(32)
    g, t = lane // 4, lane % 4
    A = np.zeros((nw, 16, 16))
    B = np.zeros((nw, 16, 8))
    C = np.zeros((nw, 16, 8))

    def reg(op, kind):
        return np.broadcast_to(np.asarray(w.get(op, kind, idx, pc)), idx.shape).reshape(nw, 32)

    # A fragment: a0..a3, each two halves. ai for i in 0..3: row g (+8 for i odd), col 2t(+8 for i>=2)
    for i in range(4):
        lo, hi = _unpack_half(reg(a_ops[i], "b32"), atype)
        r = g + 8 * (i % 2)
        c = 2 * t + 8 * (i // 2)
        A[:, r, c] = lo
        A[:, r, c + 1] = hi
    for i in range(2):  # B fragment: b0,b1: rows k = 2t(+8 for b1) and +1, column n = g
        lo, hi = _unpack_half(reg(b_ops[i], "b32"), atype)
        k = 2 * t + 8 * i
        B[:, k, g] = lo
        B[:, k + 1, g] = hi
    for i in range(4):  # C/D: c0,c1 row g, cols 2t,2t+1; c2,c3 row g+8
        if ctype == "f32":
            v = reg(c_ops[i], "f32").astype(np.float64)
        else:
            refuse(ins, "mma with f16 accumulators is not emulated yet")
        C[:, g + 8 * (i // 2), 2 * t + (i % 2)] = v
    D = np.einsum("wik,wkj->wij", A, B) + C  # products exact in f64; one f64 sum
    for i in range(4):
        v = D[:, g + 8 * (i // 2), 2 * t + (i % 2)].astype(np.float32).reshape(-1)
        w.put(d_ops[i], v, "f32", idx)
