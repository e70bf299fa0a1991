"""The state of one wave of resident blocks: every thread's registers as numpy arrays over all
threads, shared memory per block, local memory per thread, and the operand access the
instruction handlers use.

A register is a 1-D array of raw bits over every thread of the wave, or a 0-d array while its
value is the same for all of them (``ld.param``, ``mov %ntid.x``, constants: most of a kernel's
prologue) — numpy broadcasting makes the two interchangeable and the uniform one costs
nothing. ``sel`` — the threads an instruction runs for — is ``ALL`` (a slice: no gathers) when
every thread of the wave is at the instruction, else a sorted int64 array of thread indices.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np

from . import values as V
from .checks import Checks, SharedTracker
from .decode import Addr, Function, Imm, Reg, Special, Sym
from .memory import Memory

ALL = slice(None)
SHARED_WINDOW = 0x7E00_0000_0000  # generic address of shared offset 0 (any block: its own)
LOCAL_WINDOW = 0x7D00_0000_0000  # generic address of local offset 0 (any thread: its own)
WINDOW_SIZE = 1 << 32
NUM_SMS = 132


class Wave:
    def __init__(
        self,
        launch,  # scheduler.LaunchSpec
        func: Function,
        blocks: list[int],  # linear block indices resident in this wave
        memory: Memory,
        checks: Checks,
    ) -> None:
        self.launch = launch
        self.func = func
        self.memory = memory
        self.checks = checks
        bx, by, bz = launch.block
        self.block_threads = bt = bx * by * bz
        self.nblocks = len(blocks)
        self.N = n = bt * len(blocks)
        self.block_ids = np.asarray(blocks, dtype=np.int64)
        # per-thread coordinates built from one block's pattern (repeat/tile: no divisions)
        self.all_idx = np.arange(n, dtype=np.int64)
        self.warps_per_block = (bt + 31) // 32
        self.nwarps = self.nblocks * self.warps_per_block
        self._special_cache: dict[str, np.ndarray] = {}
        self.regs: list[np.ndarray | None] = [None] * len(func.regs)
        self.written: list[Any] = [False] * len(func.regs)  # True | False | bool[N]
        self.widths = [r.width for r in func.regs]
        self.shared_size = launch.shared_layout_size + launch.dynamic_shared
        self.shared = np.zeros(self.nblocks * self.shared_size, dtype=np.uint8)
        self.tracker = SharedTracker(self.shared.size, self.nblocks, self.shared_size)
        self.local_size = launch.local_size
        self.local = np.zeros(n * self.local_size, dtype=np.uint8) if self.local_size else None
        self.exited = np.zeros(n, dtype=bool)
        self.clock = 0  # advanced by the scheduler: %clock is monotonic
        self.hooks: Any = None  # launch.Hooks while a debugger watches
        self.sched: Any = None  # the simt.Scheduler running this wave (simt imports state)
        self.coalesced = False  # the step's global access ran as one slice (its cost)
        self.pending_undefined = None  # (threads, pc, where) of the last load of unwritten shared
        self.undefined_origin: dict[int, tuple[int, str]] = {}
        self.lane_cache: dict[tuple, Any] = {}  # ops_warp: shuffle permutations by lane/clamp
        self.whole_warps_last: tuple[np.ndarray, bool] | None = None  # ops_warp.whole_warps

    def mark_undefined(self, op, threads: np.ndarray, pc: int, where: str) -> None:
        """The register's value on these threads came from never-written shared memory: a
        later read of it is reported (at the load) — a value loaded and never used is not."""
        if type(op) is not Reg or threads.size == 0:
            return
        i = op.index
        w = self.written[i]
        if w is True or w is False:
            w = self.written[i] = np.full(self.N, bool(w))
        w[threads] = False
        self.undefined_origin[i] = (pc, where)

    def line_of(self, pc: int) -> int:
        ins = self.func.instrs
        return ins[pc].line if 0 <= pc < len(ins) else 0

    # ---- per-thread coordinates, built on first use (vec_add needs none of them) from one
    # block's pattern: repeat/tile, no divisions

    @cached_property
    def slot(self) -> np.ndarray:  # the resident block a thread is in
        return np.repeat(np.arange(self.nblocks, dtype=np.int64), self.block_threads)

    @cached_property
    def shared_base(self) -> np.ndarray:  # where a thread's block's shared memory starts
        return self.slot * self.shared_size

    @cached_property
    def lin(self) -> np.ndarray:  # linear thread index inside its block
        return np.tile(np.arange(self.block_threads, dtype=np.int64), self.nblocks)

    @cached_property
    def gwarp(self) -> np.ndarray:  # wave-wide warp number
        block_warp = np.arange(self.block_threads, dtype=np.int64) // 32
        return np.tile(block_warp, self.nblocks) + self.slot * self.warps_per_block

    @cached_property
    def lane(self) -> np.ndarray:
        return np.tile((np.arange(self.block_threads) % 32).astype(np.uint32), self.nblocks)

    # ---- selections

    def idx(self, sel) -> np.ndarray:
        return self.all_idx if isinstance(sel, slice) else sel

    # ---- operands

    def get(self, op, t: str, sel, pc: int = -1):
        """Operand value as PTX type t over the threads of sel (array, or 0-d if uniform)."""
        if type(op) is Reg:
            return self.get_reg(op, t, sel, pc)
        if type(op) is Imm:
            return V.imm_value(op, t)
        if type(op) is Special:
            return V.bits_to(np.asarray(self.special(op.name, sel)), t)
        if type(op) is Sym:
            return np.asarray(self.symbol_address(op.name) + op.offset, dtype=np.uint64).astype(
                V.NP[t] if t != "pred" else np.uint64
            )
        raise TypeError(f"operand {op!r} cannot be read as a value")

    def get_reg(self, op: Reg, t: str, sel, pc: int = -1):
        i = op.index
        arr = self.regs[i]
        w = self.written[i]
        if w is not True:
            self._check_written(op, w, sel, pc)
        if arr is None:
            arr = np.zeros((), dtype=V.storage(self.widths[i]))
        bits = arr if arr.ndim == 0 else arr[sel]
        val = V.bits_to(bits, t)
        if op.neg:
            val = ~val
        return val

    def _check_written(self, op: Reg, w, sel, pc: int) -> None:
        if w is False:
            bad = self.idx(sel)
        else:
            ws = w[sel]
            if ws.all():
                return
            bad = self.idx(sel)[~ws]
        if bad.size:
            self.checks.uninit_register(self, op.name, pc, bad, self.undefined_origin.get(op.index))

    def put(self, op, val, t: str, sel) -> None:
        if type(op) is not Reg:
            if type(op).__name__ == "Sink":
                return
            raise TypeError(f"cannot write to {op!r}")
        i = op.index
        val = np.asarray(val)
        fresh = val.base is None
        bits = V.to_bits(val, t, self.widths[i])
        if isinstance(sel, slice):
            if bits.ndim == 0:
                self.regs[i] = bits.copy()
            else:  # a fresh result is kept as it is; a view of another register is copied
                self.regs[i] = bits if fresh else bits.copy()
            self.written[i] = True
            return
        arr = self.regs[i]
        if arr is None or arr.ndim == 0:
            full = np.zeros(self.N, dtype=V.storage(self.widths[i]))
            if arr is not None:
                full[:] = arr
            arr = self.regs[i] = full
        arr[sel] = bits
        w = self.written[i]
        if w is not True:
            if w is False:
                w = self.written[i] = np.zeros(self.N, dtype=bool)
            w[sel] = True

    # ---- addresses

    def symbol_address(self, name: str) -> int:
        sym = self.launch.symbols.get(name)
        if sym is None:
            raise KeyError(name)
        return sym[1]

    def symbol_space(self, name: str) -> str:
        return self.launch.symbols[name][0]

    def address(self, op: Addr, sel) -> np.ndarray:
        """[base+offset] as uint64 per thread (0-d when uniform)."""
        if op.base is None:
            return np.asarray(op.offset, dtype=np.uint64)
        if isinstance(op.base, Sym):
            return np.asarray(
                self.symbol_address(op.base.name) + op.base.offset + op.offset, np.uint64
            )
        base = self.get_reg(op.base, "u64" if self.widths[op.base.index] == 64 else "u32", sel)
        base = base.astype(np.uint64, copy=False)
        return base + np.uint64(op.offset & 0xFFFF_FFFF_FFFF_FFFF) if op.offset else base

    # ---- special registers

    def special(self, name: str, sel):
        L = self.launch
        if name in ("%ntid.x", "%ntid.y", "%ntid.z"):
            return np.asarray(L.block["xyz".index(name[-1])], np.uint32)
        if name in ("%nctaid.x", "%nctaid.y", "%nctaid.z"):
            return np.asarray(L.grid["xyz".index(name[-1])], np.uint32)
        if name in ("%clock", "%clock64", "%clock_hi"):
            self.clock += 1
            v = L.clock_base + self.clock
            return np.asarray(
                v & 0xFFFFFFFF if name == "%clock" else v,
                np.uint32 if name != "%clock64" else np.uint64,
            )
        if name in ("%globaltimer", "%globaltimer_lo", "%globaltimer_hi"):
            self.clock += 1
            v = (L.clock_base + self.clock) * 32
            return np.asarray(v & 0xFFFFFFFF if name == "%globaltimer_lo" else v, np.uint64)
        if name == "%nsmid":
            return np.asarray(NUM_SMS, np.uint32)
        if name == "%nwarpid":
            return np.asarray(64, np.uint32)
        if name in ("%dynamic_smem_size",):
            return np.asarray(L.dynamic_shared, np.uint32)
        if name in ("%total_smem_size", "%aggr_smem_size"):
            return np.asarray(self.shared_size, np.uint32)
        if name in ("%gridid",):
            return np.asarray(1, np.uint64)
        if name in ("%cluster_nctarank", "%nclusterid.x") or name.startswith("%cluster_nctaid"):
            return np.asarray(1, np.uint32)
        if name in ("%cluster_ctarank", "%is_explicit_cluster") or name.startswith(
            ("%cluster_ctaid", "%clusterid")
        ):
            return np.asarray(0, np.uint32)
        arr = self._special_cache.get(name)
        if arr is None:
            arr = self._special_cache[name] = self._per_thread(name)
        return arr if arr.ndim == 0 else arr[sel]

    def _per_thread(self, name: str) -> np.ndarray:
        bx, by, _ = self.launch.block
        gx, gy, _ = self.launch.grid
        nb, bt = self.nblocks, self.block_threads
        lin = np.arange(bt, dtype=np.int64)
        if name in ("%tid.x", "%tid.y", "%tid.z"):
            one = {"x": lin % bx, "y": (lin // bx) % by, "z": lin // (bx * by)}[name[-1]]
            return np.tile(one.astype(np.uint32), nb)
        b = self.block_ids
        if name in ("%ctaid.x", "%ctaid.y", "%ctaid.z", "%smid"):
            per_block = {"%ctaid.x": b % gx, "%ctaid.y": (b // gx) % gy,
                         "%ctaid.z": b // (gx * gy), "%smid": b % NUM_SMS}[name]  # fmt: skip
            return np.repeat(per_block.astype(np.uint32), bt)
        lin = self.lin
        if name == "%laneid":
            return self.lane.copy()
        if name == "%warpid":
            return ((lin // 32) % 64).astype(np.uint32)
        if name == "%smid":
            return (b % NUM_SMS).astype(np.uint32)
        one = np.uint32(1)
        lane = self.lane
        if name == "%lanemask_eq":
            return one << lane
        if name == "%lanemask_lt":
            return (one << lane) - one
        if name == "%lanemask_le":
            return ((one << lane) - one) | (one << lane)
        if name == "%lanemask_gt":
            return ~(((one << lane) - one) | (one << lane))
        if name == "%lanemask_ge":
            return ~((one << lane) - one)
        if name.startswith("%envreg") or name.startswith("%pm"):
            return np.zeros(self.N, np.uint32)
        raise KeyError(name)

    # ---- reports

    def block_of(self, thread: int) -> tuple[int, int, int]:
        gx, gy, _ = self.launch.grid
        b = int(self.block_ids[self.slot[thread]])
        return (b % gx, (b // gx) % gy, b // (gx * gy))

    def tid_of(self, thread: int) -> tuple[int, int, int]:
        bx, by, _ = self.launch.block
        lin = int(self.lin[thread])
        return (lin % bx, (lin // bx) % by, lin // (bx * by))
