"""Memory instructions: ld/st (vector, every state space, cache and ordering modifiers accepted),
cvta, atom/red with a valid serial order for lanes that hit the same address, cp.async and its
groups, fences."""

from __future__ import annotations

import numpy as np

from . import values as V
from .access import _coalesced, load, resolve_flat, store
from .decode import Addr, Reg, Sym, Vec
from .ops_common import handler, last_type, refuse, types_of
from .state import LOCAL_WINDOW, SHARED_WINDOW

SPACES = ("global", "shared", "local", "param", "const")


def space_of(ins) -> str:
    for m in ins.mods:
        base = m.split("::")[0]
        if base in SPACES:
            return base
    return "generic"


def _vec(ins) -> int:
    for m in ins.mods:
        if m in ("v2", "v4", "v8"):
            return int(m[1])
    return 1


def _prep_ld(ins):
    t = last_type(ins)
    sp = space_of(ins)
    if len(ins.operands) < 2 or type(ins.operands[1]) is not Addr:
        refuse(ins, "a load or store needs an [address] operand")
    if ins.op == "st" and type(ins.operands[0]) is not Addr:
        refuse(ins, "a store needs an [address] operand first")
    if (
        sp == "param"
        and type(
            ins.operands[1 if ins.op != "st" else 0].base
            if ins.op != "st"
            else ins.operands[0].base
        )
        is Sym
    ):
        pass
    ins.info = (sp, t, _vec(ins), V.NP[t] if t != "b128" else None)
    if t == "b128":
        refuse(ins, ".b128 loads and stores are not emulated")


def _space_and_addr(w, ins, op: Addr, sp: str, sel):
    """A symbol's own space wins over 'generic' (ld [tile_smem] is a shared access)."""
    if type(op.base) is Sym:
        try:
            sym_space = w.symbol_space(op.base.name)
        except KeyError:
            refuse(ins, f"unknown symbol {op.base.name}")
        if sp == "generic":
            sp = sym_space if sym_space != "kparam" else "param"
        if sym_space == "kparam":
            sp = "param"
        elif sym_space == "local":  # a .local variable, or a call's .param argument
            sp = "local"
        if sym_space == "shared" and sp == "generic":
            sp = "shared"
    return sp, w.address(op, sel)


@handler("ld", "ldu", prepare=_prep_ld)
def _ld(w, ins, sel, pc):
    sp, t, n, dt = ins.info
    sp, addr = _space_and_addr(w, ins, ins.operands[1], sp, sel)
    vals = load(w, sp, addr, dt, n, sel, pc)
    dst = ins.operands[0]
    items = dst.items if type(dst) is Vec else (dst,)
    for d, v in zip(items, vals, strict=False):
        w.put(d, v, t, sel)
    if w.pending_undefined is not None:
        threads, lpc, where = w.pending_undefined
        w.pending_undefined = None
        for d in items:
            w.mark_undefined(d, threads, lpc, where)


def _prep_st(ins):
    t = last_type(ins)
    if not ins.operands or type(ins.operands[0]) is not Addr:
        refuse(ins, "a store needs an [address] operand first")
    ins.info = (space_of(ins), t, _vec(ins), V.NP[t] if t != "b128" else None)
    if t == "b128":
        refuse(ins, ".b128 loads and stores are not emulated")


@handler("st", prepare=_prep_st)
def _st(w, ins, sel, pc):
    sp, t, n, dt = ins.info
    sp, addr = _space_and_addr(w, ins, ins.operands[0], sp, sel)
    src = ins.operands[1]
    items = src.items if type(src) is Vec else (src,)
    vals = [np.asarray(w.get(x, t, sel, pc)).astype(dt, copy=False) for x in items]
    store(w, sp, addr, vals, sel, pc)


@handler("cvta", prepare=lambda ins: setattr(ins, "info", (space_of(ins), "to" in ins.mods)))
def _cvta(w, ins, sel, pc):
    sp, to = ins.info
    src = ins.operands[1]
    if type(src) is Sym:
        a = np.asarray(w.symbol_address(src.name) + src.offset, np.uint64)
    else:
        a = (
            np.asarray(w.get(src, "u64" if w.widths[src.index] == 64 else "u32", sel, pc)).astype(
                np.uint64, copy=False
            )
            if type(src) is Reg
            else np.asarray(w.get(src, "u64", sel, pc))
        )
    base = {"shared": SHARED_WINDOW, "local": LOCAL_WINDOW}.get(sp, 0)
    r = a - np.uint64(base) if to else a + np.uint64(base)
    t = last_type(ins)
    w.put(ins.operands[0], r.astype(V.NP[t], copy=False), t, sel)


# ---- atomics


_ATOM_OPS = ("add", "min", "max", "inc", "dec", "and", "or", "xor", "exch", "cas")


def _prep_atom(ins):
    t = last_type(ins)
    op = next((m for m in ins.mods if m in _ATOM_OPS), None)
    if op is None:
        refuse(ins, "an atomic without an operation the emulator knows")
    if any(m in ("v2", "v4", "v8") for m in ins.mods):
        refuse(ins, "vector atomics are not emulated")
    if t in ("f16x2", "bf16x2", "bf16", "f16", "b128"):
        refuse(ins, f"atomics on .{t} are not emulated")
    ins.info = (space_of(ins), t, op)


def _combine(op, old, v, c, t):
    if op == "add":
        return old + v
    if op == "min":
        return np.minimum(old, v) if t[0] != "f" else np.fmin(old, v)
    if op == "max":
        return np.maximum(old, v) if t[0] != "f" else np.fmax(old, v)
    if op == "and":
        return old & v
    if op == "or":
        return old | v
    if op == "xor":
        return old ^ v
    if op == "exch":
        return v
    if op == "inc":
        return np.where(old >= v, 0, old + 1).astype(old.dtype)
    if op == "dec":
        return np.where((old == 0) | (old > v), v, old - 1).astype(old.dtype)
    if op == "cas":
        return np.where(old == v, c, old)
    raise ValueError(op)


def atomic(w, ins, sel, pc, returns: bool):
    sp, t, op = ins.info
    dt = np.dtype(V.NP[t])
    size = dt.itemsize
    ops = ins.operands if returns else (None,) + tuple(ins.operands)
    aop = ops[1]
    sp2, addr = _space_and_addr(w, ins, aop, sp, sel)
    v = w.get(ops[2], t, sel, pc)
    c = w.get(ops[3], t, sel, pc) if op == "cas" else None
    area, flat, threads, good, _space = resolve_flat(w, sp2, addr, size, sel, pc, "atomic")
    nl = threads.size
    v = np.broadcast_to(np.asarray(v, dtype=dt), (nl,))
    c = np.broadcast_to(np.asarray(c, dtype=dt), (nl,)) if c is not None else None
    old_all = np.zeros(nl, dtype=dt)
    gi = np.nonzero(good)[0]
    f = flat[gi]
    # lanes in order; those that share an address go one after another (a valid serial order)
    order = np.argsort(f, kind="stable")
    fs, gis = f[order], gi[order]
    if op == "add" and fs.size:
        first = np.ones(fs.size, bool)
        first[1:] = fs[1:] != fs[:-1]
        seg = np.cumsum(first) - 1
        starts = np.nonzero(first)[0]
        uniq = fs[starts]
        base = _gather(area, uniq, dt)
        vals = v[gis]
        if dt.kind == "f":  # sequential adds, rounded after each one
            olds = np.empty(fs.size, dt)
            for s_i, st in enumerate(starts):
                end = starts[s_i + 1] if s_i + 1 < starts.size else fs.size
                acc = base[s_i]
                for j in range(st, end):
                    olds[j] = acc
                    acc = dt.type(acc + vals[j])
                base[s_i] = acc
            new = base
        else:
            csum = np.cumsum(vals.astype(np.uint64)).astype(dt)
            seg_start_sum = (csum - vals)[starts]  # inclusive sum before each segment
            excl = (csum - vals) - seg_start_sum[seg]
            olds = (base[seg] + excl).astype(dt)
            totals = np.add.reduceat(vals.astype(np.uint64), starts).astype(dt)
            new = (base + totals).astype(dt)
        _scatter(area, uniq, new)
        old_all[gis] = olds
    else:
        remaining = np.arange(fs.size)
        while remaining.size:
            fr = fs[remaining]
            first = np.ones(fr.size, bool)
            first[1:] = fr[1:] != fr[:-1]
            now = remaining[first]
            lanes_now = gis[now]
            cur = _gather(area, fs[now], dt)
            new = _combine(op, cur, v[lanes_now], c[lanes_now] if c is not None else None, t)
            _scatter(area, fs[now], np.asarray(new, dtype=dt))
            old_all[lanes_now] = cur
            remaining = remaining[~first]
    if returns:
        w.put(ins.operands[0], old_all, t, sel)


def _gather(area, off, dt):
    from .access import _gather_bytes

    return _gather_bytes(area, off, np.dtype(dt))


def _scatter(area, off, vals):
    from .access import _scatter_bytes

    _scatter_bytes(area, off, vals)


@handler("atom", prepare=_prep_atom)
def _atom(w, ins, sel, pc):
    atomic(w, ins, sel, pc, True)


@handler("red", prepare=_prep_atom)
def _red(w, ins, sel, pc):
    atomic(w, ins, sel, pc, False)


# ---- cp.async: the copy happens at once; commit/wait then have nothing left to wait for


def _prep_cp(ins):
    if "bulk" in ins.mods or "tensor" in ins.mods:
        refuse(ins, "cp.async.bulk (TMA) is not emulated")
    if len(ins.operands) < 3:
        refuse(ins, "cp.async needs destination, source and size")


@handler("cp", prepare=_prep_cp)
def _cp_async(w, ins, sel, pc):
    ops = ins.operands
    size = int(w.get(ops[2], "u32", sel, pc)) if type(ops[2]).__name__ == "Imm" else None
    if size is None:
        refuse(ins, "cp.async with a register size")
    _sp, dst = _space_and_addr(w, ins, ops[0], "shared", sel)
    _sp2, src = _space_and_addr(w, ins, ops[1], "global", sel)
    n_words = size // 4 if size >= 4 else 1
    wdt = np.uint32 if size >= 4 else V.UNSIGNED[size]
    step = np.dtype(wdt).itemsize
    src_size = ignore = None
    for extra in ops[3:]:
        if type(extra) is Reg and w.widths[extra.index] == 1:
            ignore = w.get(extra, "pred", sel, pc)  # ignore-src: zero-fill, read nothing
        else:
            src_size = w.get(extra, "u32", sel, pc)
    threads = w.idx(sel)
    words = []
    if src_size is None and ignore is None and n_words in (2, 4):
        # whole copies whose sources are consecutive: every word of every lane lies in one
        # live, written allocation (access._coalesced checked it), so none of the per-word
        # loads below could report anything: one slice read gives the same words
        srcv = np.asarray(src, np.uint64)
        start = _coalesced(w, srcv, 4, n_words, threads.size) if srcv.ndim == 1 else None
        if start is not None:
            rows = w.memory.view(start, size * threads.size).view(np.uint32)
            rows = rows.reshape(-1, n_words).copy()
            words = [rows[:, k] for k in range(n_words)]
            store(w, "shared", dst, words, sel, pc)
            return
    for k in range(n_words):
        if src_size is None and ignore is None:
            words.append(
                load(w, "global", np.asarray(src) + np.uint64(k * step), wdt, 1, sel, pc)[0]
            )
            continue
        # bytes past src-size are zero-filled and never read (per lane)
        have = np.broadcast_to(np.asarray(src_size if src_size is not None else size), threads.size)
        if ignore is not None:
            have = np.where(np.broadcast_to(ignore, threads.size), 0, have)
        need = have >= (k + 1) * step
        val = np.zeros(threads.size, wdt)
        if need.any():
            part = threads[need]
            srcv = np.broadcast_to(np.asarray(src, np.uint64), threads.size)[need]
            val[need] = load(w, "global", srcv + np.uint64(k * step), wdt, 1, part, pc)[0]
        words.append(val)
    store(w, "shared", dst, words, sel, pc)


@handler("fence", "membar", "prefetch", "prefetchu", "nanosleep", "pmevent", "discard",
         "applypriority", "createpolicy")  # fmt: skip
def _nop(w, ins, sel, pc):
    if ins.op == "createpolicy":
        w.put(ins.operands[0], np.asarray(0, np.uint64), "b64", sel)
    return None


def _prep_async_group(ins):
    return None


@handler("cp_async_group")
def _group(w, ins, sel, pc):
    return None


def cp_dispatch_prepare(ins):
    """cp.async.commit_group / wait_group / wait_all decode as op 'cp' with those mods."""
    if any(m in ("commit_group", "wait_group", "wait_all") for m in ins.mods):
        return "group"
    return None


_ = types_of
