"""Global memory: one flat byte space with named allocations, every access bounds-checked.

Addresses look like a GPU's (they start at ``BASE``), allocations are 256-byte aligned with a
gap between them, so an access past the end of one buffer lands in no buffer and is reported
with the buffer it came nearest to. Reads and writes of many lanes at once are numpy gathers
and scatters over the byte array (viewed as the access type where every lane is aligned)."""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

BASE = 0x7F00_0000_0000
ALIGN = 256
GAP = 256  # unmapped bytes after each allocation: an overrun is out of bounds, not a neighbour


@dataclass
class Allocation:
    name: str
    addr: int
    nbytes: int
    live: bool = True


def _index(addr: np.ndarray, size: int) -> np.ndarray:
    """Element index of aligned addresses in the byte array viewed as size-byte elements
    (a shift: sizes are powers of two); int64, numpy's native index type."""
    off = addr.view(np.int64) - BASE if addr.dtype == np.uint64 else addr.astype(np.int64) - BASE
    off >>= size.bit_length() - 1  # in place: one temporary, not two
    return off


def run_start(addr: np.ndarray, step: int) -> int | None:
    """The first address when the lanes' addresses are consecutive ``step``-byte slots in lane
    order (addr[k] == addr[0] + k * step: a coalesced access, vec_add's every load and store),
    else None. Such an access is a slice of the byte array: no index arrays, no gather."""
    n = addr.size
    if n < 2 or addr.ndim != 1:
        return None
    a0 = int(addr[0])
    if int(addr[-1]) - a0 != (n - 1) * step:
        return None
    d = np.subtract(addr[1:], addr[:-1])
    if not (d == np.uint64(step)).all():
        return None
    return a0


class Memory:
    """``alloc(nbytes, name) -> addr``, ``free(addr)``, ``write(addr, bytes)``,
    ``read(addr, n) -> bytes``; ``allocation_at(addr)`` names a buffer for a report."""

    def __init__(self, capacity: int = 1 << 20) -> None:
        self.data = np.zeros(capacity, dtype=np.uint8)
        self.top = 0  # next free offset
        self.allocs: list[Allocation] = []
        self._starts: list[int] = []
        self._arrays: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self.unwritten: np.ndarray | None = None  # per byte, only once something is tracked
        # the byte ranges ever marked unwritten: clearing a write's flags touches only these
        # (an input's upload must not page in a flag array as large as the input)
        self._marked: list[tuple[int, int]] = []

    def mark_unwritten(self, addr: int, n: int) -> None:
        """Bytes no one has written yet: reading them before a write is a finding."""
        if self.unwritten is None:
            self.unwritten = np.zeros(self.data.size, dtype=bool)
        off = self._offset(addr, n)
        self.unwritten[off : off + n] = True
        if n and not any(lo <= off and off + n <= hi for lo, hi in self._marked):
            self._marked.append((off, off + n))

    def _clear_unwritten(self, off: int, n: int) -> None:
        """The bytes [off, off+n) are written: cleared where they were ever marked."""
        if self.unwritten is None:
            return
        for lo, hi in self._marked:
            a, b = max(lo, off), min(hi, off + n)
            if a < b:
                self.unwritten[a:b] = False

    # ---- host side

    def alloc(self, nbytes: int, name: str = "", initialized: bool = True) -> int:
        """A new buffer. ``initialized=False`` (an output the kernel must write first): a read
        of a byte of it that nothing wrote is reported (initcheck), where the value is used."""
        nbytes = int(nbytes)
        if nbytes < 0:
            raise ValueError("negative allocation size")
        off = (self.top + ALIGN - 1) // ALIGN * ALIGN
        need = off + max(nbytes, 1) + GAP
        if need > self.data.size:
            cap = self.data.size
            while cap < need:
                cap *= 2
            grown = np.zeros(cap, dtype=np.uint8)
            grown[: self.data.size] = self.data
            self.data = grown
        self.top = off + max(nbytes, 1) + GAP
        addr = BASE + off
        self.allocs.append(Allocation(name or f"buffer{len(self.allocs)}", addr, nbytes))
        if self.unwritten is not None and self.unwritten.size < self.data.size:
            grown_w = np.zeros(self.data.size, dtype=bool)
            grown_w[: self.unwritten.size] = self.unwritten
            self.unwritten = grown_w
        if not initialized:
            self.mark_unwritten(addr, nbytes)
        self._starts.append(addr)
        self._arrays = None
        return addr

    def free(self, addr: int) -> None:
        a = self.allocation_at(addr)
        if a is None or a.addr != addr or not a.live:
            raise ValueError(f"free of {addr:#x}: not the start of a live allocation")
        a.live = False
        self._arrays = None

    def name(self, addr: int, name: str) -> None:
        a = self.allocation_at(addr)
        if a is not None:
            a.name = name

    def _offset(self, addr: int, n: int) -> int:
        off = int(addr) - BASE
        if off < 0 or off + n > self.data.size:
            raise ValueError(f"address {addr:#x} (+{n}) is outside the emulator's memory")
        return off

    def write(self, addr: int, data: bytes | bytearray | memoryview | np.ndarray) -> None:
        buf = (
            np.frombuffer(bytes(data), dtype=np.uint8)
            if not isinstance(data, np.ndarray)
            else (np.ascontiguousarray(data).view(np.uint8).reshape(-1))
        )
        off = self._offset(addr, buf.size)
        self.data[off : off + buf.size] = buf
        self._clear_unwritten(off, buf.size)

    def read(self, addr: int, n: int) -> bytes:
        off = self._offset(addr, n)
        return self.data[off : off + n].tobytes()

    def view(self, addr: int, n: int) -> np.ndarray:
        """The bytes themselves (no copy), for callers that fill or compare large buffers."""
        off = self._offset(addr, n)
        return self.data[off : off + n]

    def memset(self, addr: int, value: int, n: int) -> None:
        off = self._offset(addr, n)
        self.data[off : off + n] = value & 0xFF
        self._clear_unwritten(off, n)

    def _unwritten_words(self, size: int):
        """The per-byte 'unwritten' flags viewed as one word per aligned size-byte access
        (a single gather per access), or None for other sizes."""
        assert self.unwritten is not None  # callers check it is tracked
        if size in (1, 2, 4, 8):
            return self.unwritten.view(
                {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[size]
            )
        if size == 16:
            return self.unwritten.view(np.uint64).reshape(-1, 2)
        return None

    def unwritten_lanes(self, addr: np.ndarray, size: int) -> np.ndarray | None:
        """Which lanes' [addr, addr+size) include a byte nothing wrote (None: none do).
        Accesses reaching here are aligned to their size (checked before)."""
        if self.unwritten is None or addr.size == 0:
            return None
        if size == 16:  # two 8-byte words of flags per lane (1-D: a [n, 2] row gather is slow)
            w8 = self.unwritten.view(np.uint64)
            i = _index(addr, 8)
            bad = (w8.take(i) | w8.take(i + 1)) != 0
            return bad if bad.any() else None
        words = self._unwritten_words(size)
        if words is not None:
            hit = words[_index(addr, size)]
            bad = hit.any(axis=1) if hit.ndim == 2 else hit != 0
        else:
            off = addr.astype(np.int64) - BASE
            bad = np.zeros(addr.shape, dtype=bool)
            for k in range(size):
                bad |= self.unwritten[off + k]
        return bad if bad.any() else None

    def wrote(self, addr: np.ndarray, size: int) -> None:
        if self.unwritten is None or addr.size == 0:
            return
        if size == 16:
            w8 = self.unwritten.view(np.uint64)
            i = _index(addr, 8)
            w8[i] = 0
            w8[i + 1] = 0
            return
        words = self._unwritten_words(size)
        if words is not None:
            words[_index(addr, size)] = 0
            return
        off = addr.astype(np.int64) - BASE
        for k in range(size):
            self.unwritten[off + k] = False

    def allocation_at(self, addr: int) -> Allocation | None:
        i = bisect.bisect_right(self._starts, int(addr)) - 1
        if i < 0:
            return None
        a = self.allocs[i]
        return a if addr < a.addr + max(a.nbytes, 1) else None

    def nearest(self, addr: int) -> Allocation | None:
        """The allocation an out-of-bounds address most likely meant (the one just below)."""
        i = bisect.bisect_right(self._starts, int(addr)) - 1
        return self.allocs[i] if i >= 0 else (self.allocs[0] if self.allocs else None)

    # ---- device side (many lanes)

    def _tables(self):
        if self._arrays is None:
            starts = np.array([a.addr for a in self.allocs], dtype=np.uint64)
            ends = np.array([a.addr + a.nbytes for a in self.allocs], dtype=np.uint64)
            live = np.array([a.live for a in self.allocs], dtype=bool)
            self._arrays = (starts, ends, live)
        return self._arrays

    def run_inside(self, start: int, nbytes: int) -> bool:
        """[start, start+nbytes) lies in one live allocation."""
        a = self.allocation_at(start)
        return a is not None and a.live and start + nbytes <= a.addr + a.nbytes

    def run_unwritten(self, start: int, nbytes: int) -> bool:
        if self.unwritten is None:
            return False
        off = start - BASE
        return any(
            self.unwritten[max(lo, off) : min(hi, off + nbytes)].any()
            for lo, hi in self._marked
            if lo < off + nbytes and off < hi
        )

    def bad_lanes(self, addr: np.ndarray, size: int) -> np.ndarray | None:
        """Which lanes' accesses [addr, addr+size) are not inside one live allocation; None
        when every lane is fine (the common case, decided from the min and max alone)."""
        if addr.size == 0:
            return None
        starts, ends, live = self._tables()
        if starts.size == 0:
            return np.ones(addr.shape, dtype=bool)
        lo, hi = addr.min(), addr.max()
        i = int(np.searchsorted(starts, lo, side="right")) - 1
        if i >= 0 and live[i] and hi + np.uint64(size) <= ends[i]:
            return None
        j = np.searchsorted(starts, addr, side="right").astype(np.int64) - 1
        jc = np.maximum(j, 0)
        ok = (j >= 0) & live[jc] & (addr + np.uint64(size) <= ends[jc])
        return ~ok

    def gather(self, addr: np.ndarray, dt, aligned: bool = False) -> np.ndarray:
        """Values of type dt at each (in-bounds) address; ``aligned``: the caller checked."""
        dt = np.dtype(dt)
        if aligned:
            return self.data.view(dt)[_index(addr, dt.itemsize)]
        off = addr.astype(np.int64) - BASE
        size = dt.itemsize
        if size == 1:
            return self.data[off].view(dt)
        if not np.any(off & (size - 1)):
            return (
                self.data.view(dt)[off // size]
                if self.data.size % size == 0
                else (self.data[: self.data.size // size * size].view(dt)[off // size])
            )
        idx = off[:, None] + np.arange(size)
        return self.data[idx].reshape(-1).view(dt)

    def gather_vec(self, addr: np.ndarray, dt, n: int) -> np.ndarray:
        """[lanes, n] values of type dt at addresses aligned to n * size (checked by the
        caller): one gather of whole vectors."""
        dt = np.dtype(dt)
        width = dt.itemsize * n
        rows = self.data.view(dt).reshape(-1, n)
        return rows[_index(addr, width)]

    def gather_cols(self, addr: np.ndarray, dt, n: int) -> list[np.ndarray]:
        """gather_vec's values as n arrays (element k of each lane's vector): 1-D gathers, not
        a row gather of [lanes, n] (numpy runs that with an n-long inner loop)."""
        dt = np.dtype(dt)
        view = self.data.view(dt)
        i = _index(addr, dt.itemsize)
        return [view.take(i + k if k else i) for k in range(n)]

    def scatter_cols(self, addr: np.ndarray, values: list[np.ndarray]) -> None:
        """scatter_vec of values given as n arrays (element k of each lane's vector), all of
        one type, to addresses aligned to the vector's bytes."""
        dt = values[0].dtype
        view = self.data.view(dt)
        i = _index(addr, dt.itemsize)
        for k, v in enumerate(values):
            view[i + k if k else i] = v

    def scatter_vec(self, addr: np.ndarray, values: np.ndarray) -> None:
        """values [lanes, n] to addresses aligned to the vector's bytes."""
        n = values.shape[1]
        rows = self.data.view(values.dtype).reshape(-1, n)
        rows[_index(addr, values.dtype.itemsize * n)] = values

    def scatter(self, addr: np.ndarray, values: np.ndarray, aligned: bool = False) -> None:
        values = np.ascontiguousarray(values)
        if aligned:
            self.data.view(values.dtype)[_index(addr, values.dtype.itemsize)] = values
            return
        dt = values.dtype
        size = dt.itemsize
        off = addr.astype(np.int64) - BASE
        if size == 1:
            self.data[off] = values.view(np.uint8)
            return
        if not np.any(off & (size - 1)) and self.data.size % size == 0:
            self.data.view(dt)[off // size] = values
            return
        idx = off[:, None] + np.arange(size)
        self.data[idx] = values.view(np.uint8).reshape(-1, size)
