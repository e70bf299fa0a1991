"""Loads and stores of many lanes at once in each state space, with the checks every access gets:
bounds (which buffer, which element, which thread), alignment, shared-memory initialisation and
races. A lane whose access is bad is reported and skipped (reads give 0), as a GPU would fault.

Addresses: .global/.const are the flat Memory's addresses; .shared is an offset in the block's
shared memory; .local an offset in the thread's local memory; .param an offset in the kernel's
parameter buffer. A generic address is global unless it falls in the shared or local window
(``cvta`` moves between the two forms)."""

from __future__ import annotations

import numpy as np

from . import errors as E
from .memory import BASE, run_start
from .state import LOCAL_WINDOW, SHARED_WINDOW, WINDOW_SIZE


def lanes(w, sel) -> np.ndarray:
    return w.idx(sel)


def _full(addr, n):
    addr = np.asarray(addr, dtype=np.uint64)
    return np.broadcast_to(addr, (n,)) if addr.ndim == 0 else addr


def split_generic(w, addr: np.ndarray):
    """Masks (shared, local) of lanes whose generic address is in those windows."""
    sh = (addr >= np.uint64(SHARED_WINDOW)) & (addr < np.uint64(SHARED_WINDOW + WINDOW_SIZE))
    lo = (addr >= np.uint64(LOCAL_WINDOW)) & (addr < np.uint64(LOCAL_WINDOW + WINDOW_SIZE))
    return sh, lo


def _misaligned(w, addr, size, pc, space, threads) -> np.ndarray | None:
    if size <= 1:
        return None
    low = np.uint64(size - 1)
    if not (np.bitwise_or.reduce(addr.reshape(-1)) & low if addr.size else 0):
        return None  # one pass: every address aligned
    bad = (addr & low) != 0
    i = int(np.argmax(bad))
    w.checks.add(
        E.MISALIGNED, pc, f"{size}-byte {space} access at {int(addr[i]):#x} is not {size}-byte aligned",
        w, int(threads[i]), count=int(bad.sum()), space=space, address=int(addr[i]), size=size,
    )  # fmt: skip
    return bad


def check_global(w, addr, size, pc, threads, access: str) -> np.ndarray | None:
    """Lanes to skip (bad) or None; reports out-of-bounds and misaligned accesses."""
    mem = w.memory
    bad = _misaligned(w, addr, size, pc, "global", threads)
    oob = mem.bad_lanes(addr, size)
    if oob is not None and oob.any():
        i = int(np.argmax(oob))
        a = int(addr[i])
        near = mem.nearest(a)
        if near is not None:
            rel = a - near.addr
            elem = rel // size if size else rel
            dead = not near.live and near.addr <= a < near.addr + near.nbytes
            held = near.nbytes // max(size, 1)
            where = (f"{near.name}[{elem}] (the buffer holds {held} "
                     f"element{'' if held == 1 else 's'} of {size} bytes)")  # fmt: skip
            kind = E.FREED if dead else E.OUT_OF_BOUNDS
            msg = f"{access} of {size} bytes {'in freed ' if dead else 'out of bounds: '}{where}"
            buf = near.name
        else:
            kind, msg, buf, elem = (
                E.INVALID_ADDRESS,
                f"{access} at {a:#x}: no buffer there",
                "",
                None,
            )
        w.checks.add(kind, pc, msg, w, int(threads[i]), count=int(oob.sum()), space="global",
                     access=access, address=a, size=size, buffer=buf, element=elem)  # fmt: skip
        bad = oob if bad is None else (bad | oob)
    return bad


COALESCED_MIN = 64  # fewer lanes: the general path costs no more


def _coalesced(w, addr, size: int, n: int, lanes_: int, write: bool = False) -> int | None:
    """The start address of a global access whose lanes touch consecutive ``size * n``-byte
    slots in lane order, aligned to the access, inside one live allocation and (for a read)
    all written: the access ``check_global`` and the initcheck would pass lane by lane, done
    as one slice. None otherwise (the general path checks and reports each lane)."""
    if lanes_ < COALESCED_MIN or n not in (1, 2, 4) or addr.ndim != 1:
        return None
    step = size * n
    start = run_start(addr, step)
    if start is None or start % step:
        return None
    mem = w.memory
    nbytes = step * lanes_
    if start < BASE or start + nbytes - BASE > mem.data.size or not mem.run_inside(start, nbytes):
        return None
    if not write and mem.run_unwritten(start, nbytes):
        return None
    return start


def shared_describe(w):
    layout = w.launch.shared_vars  # [(name, offset, size)]
    S = w.shared_size

    def describe(flat_byte: int, name_only: bool = False) -> str:
        off = flat_byte % S if S else flat_byte
        for name, start, size in layout:
            if start <= off < start + max(size, 1) or (size == 0 and off >= start):
                return name if name_only else f"{name}+{off - start} (shared byte {off})"
        return "shared" if name_only else f"shared byte {off}"

    return describe


def _check_window(w, off, nbytes, limit, pc, threads, space, access):
    bad = off.astype(np.int64) + nbytes > limit
    if bad.any():
        i = int(np.argmax(bad))
        what = w.launch.shared_vars if space == "shared" else []
        w.checks.add(
            E.OUT_OF_BOUNDS, pc,
            f"{access} of {nbytes} bytes at {space} offset {int(off[i])}, past the {limit} bytes "
            f"{'of the block' if space == 'shared' else 'of the thread'}"
            + (f" ({', '.join(n for n, _, _ in what)})" if what else ""),
            w, int(threads[i]), count=int(bad.sum()), space=space, access=access,
            address=int(off[i]), size=nbytes,
        )  # fmt: skip
        return bad
    return None


def _area(w, space):
    if space == "shared":
        return w.shared, w.shared_size
    return w.local, w.local_size


def load(w, space: str, addr, dt, n: int, sel, pc: int) -> list[np.ndarray]:
    """n consecutive values of numpy type dt at each lane's address (0-d when uniform .param)."""
    dt = np.dtype(dt)
    size = dt.itemsize
    if space == "param":
        return _load_param(w, addr, dt, n)
    threads = lanes(w, sel)
    addr = _full(addr, threads.size)
    if space == "generic":
        sh, lo = split_generic(w, addr)
        if sh.any() or lo.any():
            out = [np.zeros(threads.size, dt) for _ in range(n)]
            for mask, sp, base in ((sh, "shared", SHARED_WINDOW), (lo, "local", LOCAL_WINDOW),
                                   (~(sh | lo), "global", 0)):  # fmt: skip
                if mask.any():
                    part = load(w, sp, addr[mask] - np.uint64(base), dt, n, threads[mask], pc)
                    for k in range(n):
                        out[k][mask] = part[k]
            return out
        space = "global"
    if space in ("global", "const"):
        mem = w.memory
        fast = _coalesced(w, addr, size, n, threads.size)
        if fast is not None:
            # consecutive lanes read consecutive, aligned, in-bounds, written bytes (checked in
            # _coalesced): none of the checks below could fire; one slice copy replaces the gather
            w.coalesced = True
            flat = mem.view(fast, size * n * threads.size).view(dt).copy()
            if n == 1:
                return [flat]
            rows = flat.reshape(-1, n)
            return [rows[:, k] for k in range(n)]
        bad = check_global(w, addr, size * n if n in (2, 4, 8) else size, pc, threads, "read")
        good_addr = addr if bad is None else addr[~bad]
        unw = mem.unwritten_lanes(good_addr, size * n)
        if unw is not None:
            a = int(good_addr[int(np.argmax(unw))])
            al = mem.allocation_at(a)
            where = f"global {al.name}[{(a - al.addr) // size}]" if al else f"global {a:#x}"
            w.pending_undefined = ((threads if bad is None else threads[~bad])[unw], pc, where)
        if bad is not None:
            good = ~bad
            out = [np.zeros(threads.size, dt) for _ in range(n)]
            for k in range(n):
                out[k][good] = mem.gather(addr[good] + np.uint64(k * size), dt)
            return out
        if n > 1:
            return mem.gather_cols(addr, dt, n)  # aligned (checked above)
        return [mem.gather(addr, dt, aligned=True)]
    area, limit = _area(w, space)
    off = addr
    total = size * n
    bad = _misaligned(w, off, total if n in (2, 4, 8) else size, pc, space, threads)
    oob = _check_window(w, off, total, limit, pc, threads, space, "read")
    if oob is not None:
        bad = oob if bad is None else bad | oob
    flat = _flat(w, space, threads, limit) + off.astype(np.int64)
    if bad is None and (flat.size == 0 or flat.min() >= 0):  # every lane reads: no masks
        if space == "shared" and flat.size:
            describe = shared_describe(w)
            unw = w.tracker.read(w, flat, total, threads, pc, describe)
            if unw is not None:
                first = int(flat[int(np.argmax(unw))])
                w.pending_undefined = (threads[unw], pc, describe(first))
        return _gather_n(area, flat, dt, n)
    if bad is not None:
        flat = np.where(bad, -1, flat)
    good = flat >= 0
    out = []
    fg = flat[good]
    if space == "shared" and fg.size:
        describe = shared_describe(w)
        unw = w.tracker.read(w, fg, total, threads[good], pc, describe)
        if unw is not None:
            first = int(fg[int(np.argmax(unw))])
            w.pending_undefined = (threads[good][unw], pc, describe(first))
    for k in range(n):
        v = np.zeros(threads.size, dt)
        v[good] = _gather_bytes(area, fg + k * size, dt)
        out.append(v)
    return out


def _flat(w, space: str, threads: np.ndarray, limit: int) -> np.ndarray:
    """Each lane's start in the wave's shared (its block's) or local (its own) area."""
    if space == "shared":
        return w.shared_base if threads is w.all_idx else w.shared_base[threads]
    return threads.astype(np.int64, copy=False) * limit


def _gather_n(area: np.ndarray, off: np.ndarray, dt, n: int) -> list[np.ndarray]:
    """n consecutive values of type dt at each offset: _gather_bytes of off + k * size, with
    the alignment decided once (a vector's elements are aligned when its first one is)."""
    size = dt.itemsize
    if (
        size > 1
        and area.size % size == 0
        and not (off.size and np.bitwise_or.reduce(off) & (size - 1))
    ):
        view = area.view(dt)
        i = off >> (size.bit_length() - 1)
        return [view.take(i + k if k else i) for k in range(n)]
    return [_gather_bytes(area, off + k * size, dt) for k in range(n)]


def _scatter_n(area: np.ndarray, off: np.ndarray, values: list) -> None:
    """values[k] to off + k * size (as _scatter_bytes, the alignment decided once)."""
    size = values[0].dtype.itemsize
    if (
        size > 1
        and area.size % size == 0
        and not (off.size and np.bitwise_or.reduce(off) & (size - 1))
    ):
        view = area.view(values[0].dtype)
        i = off >> (size.bit_length() - 1)
        for k, v in enumerate(values):
            view[i + k if k else i] = v
        return
    for k, v in enumerate(values):
        _scatter_bytes(area, off + k * size, v)


def _gather_bytes(area: np.ndarray, off: np.ndarray, dt) -> np.ndarray:
    size = dt.itemsize
    if size == 1:
        return area[off].view(dt)
    if not np.any(off & (size - 1)) and area.size % size == 0:
        return area.view(dt)[off // size]
    return area[off[:, None] + np.arange(size)].reshape(-1).view(dt)


def _scatter_bytes(area: np.ndarray, off: np.ndarray, values: np.ndarray) -> None:
    values = np.ascontiguousarray(values)
    size = values.dtype.itemsize
    if size == 1:
        area[off] = values.view(np.uint8)
    elif not np.any(off & (size - 1)) and area.size % size == 0:
        area.view(values.dtype)[off // size] = values
    else:
        area[off[:, None] + np.arange(size)] = values.view(np.uint8).reshape(-1, size)


def _load_param(w, addr, dt, n):
    buf = w.launch.param_bytes
    size = dt.itemsize
    if np.ndim(addr) == 0:
        a = int(addr)
        out = []
        for k in range(n):
            o = a + k * size
            if o + size > len(buf):
                raise_param(w, o)
            out.append(np.frombuffer(buf, dtype=dt, count=1, offset=o).reshape(()).copy())
        return out
    arr = np.frombuffer(buf, dtype=np.uint8)
    return [_gather_bytes(arr, np.asarray(addr, np.int64) + k * size, dt) for k in range(n)]


def raise_param(w, off):
    from .errors import Refused

    raise Refused("ld.param", None, f"parameter offset {off} is past the kernel's parameters")


def store(w, space: str, addr, values: list, sel, pc: int) -> None:
    """Store n values (arrays or 0-d) per lane at consecutive addresses."""
    threads = lanes(w, sel)
    n = len(values)
    vals = [np.broadcast_to(np.asarray(v), (threads.size,)) for v in values]
    dt = vals[0].dtype
    size = dt.itemsize
    addr = _full(addr, threads.size)
    if space == "generic":
        sh, lo = split_generic(w, addr)
        if sh.any() or lo.any():
            for mask, sp, base in ((sh, "shared", SHARED_WINDOW), (lo, "local", LOCAL_WINDOW),
                                   (~(sh | lo), "global", 0)):  # fmt: skip
                if mask.any():
                    store(
                        w,
                        sp,
                        addr[mask] - np.uint64(base),
                        [v[mask] for v in vals],
                        threads[mask],
                        pc,
                    )
            return
        space = "global"
    if w.hooks is not None:
        w.hooks.write(space, addr, size * n, threads)
    if space in ("global", "const"):
        fast = _coalesced(w, addr, size, n, threads.size, write=True)
        if fast is not None:  # as in load: consecutive, aligned, in bounds; one slice write
            mem = w.memory
            w.coalesced = True
            nbytes = size * n * threads.size
            dst = mem.view(fast, nbytes).view(dt).reshape(-1, n)
            for k in range(n):
                dst[:, k] = vals[k]
            mem._clear_unwritten(fast - BASE, nbytes)
            return
        bad = check_global(w, addr, size * n if n in (2, 4, 8) else size, pc, threads, "write")
        if bad is not None:
            good = ~bad
            addr = addr[good]
            vals = [v[good] for v in vals]
        if n > 1:  # aligned (misaligned lanes were dropped above): one scatter of whole vectors
            w.memory.scatter_cols(addr, vals)
        else:
            for k in range(n):  # scalar stores (misaligned lanes were dropped above)
                w.memory.scatter(addr + np.uint64(k * size), vals[k], aligned=True)
        w.memory.wrote(addr, size * n)
        return
    if space == "param":
        from .errors import Refused

        raise Refused("st.param", None, "stores to kernel parameters are not emulated")
    area, limit = _area(w, space)
    total = size * n
    bad = _misaligned(w, addr, total if n in (2, 4, 8) else size, pc, space, threads)
    oob = _check_window(w, addr, total, limit, pc, threads, space, "write")
    if oob is not None:
        bad = oob if bad is None else bad | oob
    flat = _flat(w, space, threads, limit) + addr.astype(np.int64)
    if bad is not None:
        good = ~bad
        flat, threads = flat[good], threads[good]
        vals = [v[good] for v in vals]
    if space == "shared" and flat.size:
        w.tracker.write(w, flat, total, threads, pc, w.line_of(pc), shared_describe(w))
    _scatter_n(area, flat, vals)


def resolve_flat(w, space, addr, size, sel, pc, access):
    """(area bytes, flat offsets, threads, good mask) for atomics on shared/global memory."""
    threads = lanes(w, sel)
    addr = _full(addr, threads.size)
    if space == "generic":
        sh, _lo = split_generic(w, addr)
        if sh.all():
            space, addr = "shared", addr - np.uint64(SHARED_WINDOW)
        else:
            space = "global"
    if space == "global":
        bad = check_global(w, addr, size, pc, threads, access)
        good = np.ones(threads.size, bool) if bad is None else ~bad
        w.memory.wrote(addr[good], size)

        return w.memory.data, addr.astype(np.int64) - BASE, threads, good, space
    area, limit = _area(w, space)
    bad = _misaligned(w, addr, size, pc, space, threads)
    oob = _check_window(w, addr, size, limit, pc, threads, space, access)
    if oob is not None:
        bad = oob if bad is None else bad | oob
    good = np.ones(threads.size, bool) if bad is None else ~bad
    base = (w.slot[threads] if space == "shared" else threads).astype(np.int64) * limit
    flat = base + addr.astype(np.int64)
    if space == "shared":
        g = flat[good]
        w.tracker.written[(g[:, None] + np.arange(size)).reshape(-1)] = True
    return area, flat, threads, good, space
