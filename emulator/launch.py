"""One kernel launch: the grid is run in waves of resident blocks (all threads of a wave are one
set of numpy arrays); ``Execution`` is the same run, steppable, for a debugger.

Waves: blocks become resident in launch order, as many as fit a thread budget per wave (the
register arrays of 132 x 2048 threads, what an H200 keeps resident), and a wave runs to completion before the next one starts. A
block can therefore wait on any block launched before it in the same or an earlier wave — what
the decoupled look-back scan relies on (its tiles are taken in launch order by a ticket)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from . import errors as E
from .checks import Checks
from .memory import Memory
from .module import EmuModule
from .simt import Scheduler
from .state import Wave

# As many threads as an H200 keeps resident (132 SMs x 2048): blocks that a GPU runs side by
# side (a grid-wide flag wait among co-resident blocks) share a wave. More per wave cost more:
# a wave's registers are arrays of this many elements, and at 2^20 (8 MB per 64-bit register)
# every instruction ran from main memory instead of the cache (2x slower per element).
MAX_WAVE_THREADS = 132 * 2048


def _dim3(v) -> tuple[int, int, int]:
    if isinstance(v, int):
        return (v, 1, 1)
    t = [int(x) for x in v] + [1, 1, 1]
    return (t[0], t[1], t[2])


@dataclass
class LaunchSpec:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_shared: int
    shared_layout_size: int
    shared_vars: list
    local_size: int
    symbols: dict[str, tuple[str, int]]
    param_bytes: bytes
    clock_base: int = 0
    nblocks: int = 0
    wave_blocks: int = 1
    extra: dict = field(default_factory=dict)


class Hooks:
    """Callbacks of an Execution: before each instruction (the instruction, its thread indices
    in the wave) and on each store (space, addresses, bytes, thread indices)."""

    def __init__(self) -> None:
        self.on_instruction: list = []
        self.on_write: list = []

    def before(self, ins, threads) -> None:
        for fn in self.on_instruction:
            fn(ins, threads)

    def write(self, space, addr, size, threads) -> None:
        for fn in self.on_write:
            fn(space, addr, size, threads)


def pack_params(func, params) -> bytes:
    """Kernel parameter values (bytes per parameter, as cuLaunchKernel takes them) laid out at
    each parameter's offset."""
    if len(params) != len(func.params):
        raise ValueError(f"{func.name} takes {len(func.params)} parameters, {len(params)} given")
    size = max((p.offset + p.size for p in func.params), default=0)
    buf = bytearray(size)
    for p, v in zip(func.params, params, strict=True):
        b = bytes(v)
        if len(b) != p.size:
            raise ValueError(f"parameter {p.name} takes {p.size} bytes, {len(b)} given")
        buf[p.offset : p.offset + p.size] = b
    return bytes(buf)


class Execution:
    """A launch that runs a step at a time. ``step()`` runs one instruction for one group of
    threads (threads at the same PC, across warps); ``run()`` runs to the end. Read state with
    ``register``, ``shared``, ``memory``; watch with ``hooks.on_instruction``/``on_write``."""

    def __init__(self, module: EmuModule, kernel: str, grid, block, shared_bytes: int,
                 params: list[bytes], memory: Memory | None = None,
                 budget: E.Budget | None = None) -> None:  # fmt: skip
        self.module = module
        self.func = module.kernel(kernel)
        self.memory = memory if memory is not None else module.memory
        self.budget = budget or E.Budget()
        self.grid, self.block = _dim3(grid), _dim3(block)
        if (
            min(self.grid) < 0
            or min(self.block) < 1
            or self.block[0] * self.block[1] * self.block[2] > 1024
        ):
            raise ValueError(f"invalid launch: grid {self.grid}, block {self.block}")
        lay = module.layout(self.func)
        symbols: dict[str, tuple[str, int]] = {}
        for name, addr in module.bind(self.memory).items():
            space = next(v.space for v in module.program.globals if v.name == name)
            symbols[name] = (space, addr)
        for name, off, _size in lay.shared_vars:
            symbols[name] = ("shared", off)
        for name, off, _size in lay.local_vars:
            symbols[name] = ("local", off)
        for p in self.func.params:
            symbols[p.name] = ("kparam", p.offset)
        dyn = int(shared_bytes or 0)
        shared_total = (
            lay.extern_shared_at if lay.extern_shared_at is not None else lay.shared_static
        ) + dyn
        bt = self.block[0] * self.block[1] * self.block[2]
        nblocks = self.grid[0] * self.grid[1] * self.grid[2]
        self.spec = LaunchSpec(
            self.grid, self.block, dyn, (lay.extern_shared_at or lay.shared_static), lay.shared_vars,
            lay.local_size, symbols, pack_params(self.func, params),
            clock_base=int(time.monotonic_ns() & 0xFFFFFFFF), nblocks=nblocks,
            wave_blocks=max(1, MAX_WAVE_THREADS // bt),
        )  # fmt: skip
        del shared_total
        self.result = E.LaunchResult()
        self.checks = Checks(self.func.name)
        self.checks.instr_text = {i.index: (i.line, i.text) for i in self.func.instrs}
        self.hooks = Hooks()
        self.next_block = 0
        self.wave: Wave | None = None
        self.sched: Scheduler | None = None
        self._t0 = time.monotonic()
        self.deadline = self._t0 + self.budget.seconds
        self.finished = nblocks == 0

    def _need_wave(self) -> bool:
        return self.sched is None or self.sched.done

    def _start_wave(self) -> bool:
        if self.result.hang or self.result.trapped:
            return False
        if self.next_block >= self.spec.nblocks:
            return False
        end = min(self.spec.nblocks, self.next_block + self.spec.wave_blocks)
        blocks = list(range(self.next_block, end))
        self.next_block = end
        self.wave = Wave(self.spec, self.func, blocks, self.memory, self.checks)
        self.wave.hooks = self.hooks if (self.hooks.on_write or self.hooks.on_instruction) else None
        self.sched = Scheduler(self.wave, self.func.instrs, self.budget, self.result,
                               self.wave.hooks, self.deadline)  # fmt: skip
        return True

    def step(self) -> bool:
        """Run one instruction for one thread group; False when the launch has finished."""
        if self.finished:
            return False
        with np.errstate(all="ignore"):
            if self._need_wave() and not self._start_wave():
                return self._finish()
            assert self.sched is not None  # _start_wave made it
            self.sched.step()
        if self.result.hang or self.result.trapped:
            return self._finish()
        return True

    def run(self) -> E.LaunchResult:
        with np.errstate(all="ignore"):
            while not self.finished:
                if self._need_wave() and not self._start_wave():
                    self._finish()
                    break
                assert self.sched is not None  # _start_wave made it
                self.sched.run()
        return self.result

    def _finish(self) -> bool:
        if not self.finished:
            self.finished = True
            if self.result.hang:
                self.checks.add(E.HANG, -1, self.result.hang_where)
            self.result.findings = self.checks.findings
            self.result.wall_seconds = time.monotonic() - self._t0
        return False

    # ---- what a debugger reads

    def current(self) -> list[tuple[int, int, int]]:
        """(pc, line, threads) of each thread group of the current wave."""
        if self.sched is None:
            return []
        return [(pc, self.func.instrs[pc].line if pc < len(self.func.instrs) else -1, int(idx.size))
                for pc, idx in sorted(self.sched.groups.items())]  # fmt: skip

    def thread_index(self, block: tuple[int, int, int], thread: tuple[int, int, int]) -> int | None:
        """The wave index of a thread, if its block is resident now."""
        if self.wave is None:
            return None
        gx, gy, _ = self.grid
        bx, by, _ = self.block
        b = block[0] + gx * (block[1] + gy * block[2])
        slots = np.nonzero(self.wave.block_ids == b)[0]
        if slots.size == 0:
            return None
        return (
            int(slots[0]) * self.wave.block_threads + thread[0] + bx * (thread[1] + by * thread[2])
        )

    def register(self, name: str, thread: int, type_: str = "b32"):
        """One thread's register value as PTX type type_ (None if never written)."""
        w = self._resident()
        i = self.func.reg_index[name]
        arr = w.regs[i]
        if arr is None:
            return None
        from . import values as V

        bits = arr if arr.ndim == 0 else arr[thread : thread + 1]
        return V.bits_to(np.asarray(bits), type_).reshape(-1)[0].item()

    def _resident(self) -> Wave:
        """The wave now running (the debugger reads state only while one is)."""
        if self.wave is None:
            raise LookupError("no wave is resident: the launch has not started or has finished")
        return self.wave

    def registers(self, thread: int) -> dict[str, int | bool | None]:
        out = {}
        wave = self._resident()
        for r in self.func.regs:
            arr = wave.regs[self.func.reg_index[r.name]]
            out[r.name] = None if arr is None else (arr if arr.ndim == 0 else arr[thread]).item()
        return out

    def shared(self, block_slot: int = 0) -> bytes:
        wave = self._resident()
        S = wave.shared_size
        return wave.shared[block_slot * S : (block_slot + 1) * S].tobytes()

    def pc_of(self, thread: int) -> int | None:
        if self.sched is None:
            return None
        for pc, idx in self.sched.groups.items():
            j = np.searchsorted(idx, thread)
            if j < idx.size and idx[j] == thread:
                return pc
        return None


def launch(module: EmuModule, kernel: str, grid, block, shared_bytes: int, params: list[bytes],
           memory: Memory | None = None, budget: E.Budget | None = None) -> E.LaunchResult:  # fmt: skip
    """Run a kernel to the end (or the budget): findings, hang, thread-instructions."""
    return Execution(module, kernel, grid, block, shared_bytes, params, memory, budget).run()
