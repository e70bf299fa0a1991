"""One debugging run: the emulator's steppable launch of a case, one followed thread, and the
breakpoints that stop it.

The emulator runs a *group* of threads (all threads at one PC, across warps and blocks) per
step. Following one thread means: before each step, look at the group that runs next (the
scheduler's own choice, ``_pick``), stop there if a breakpoint applies to it; after the step,
stop if the followed thread moved (a step request), if a watched element was written, or if the
emulator's checks reported something new (at the faulting instruction, with its thread).

Breakpoints stop *before* the instruction runs. An unconditional one applies to the followed
thread; a conditional one (``%r5 == 4097``, ``%tid.x == 3``) is decided for every thread of the
arriving group at once and, when it holds for some thread, the debugger follows that thread.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ptxls import emulator

from . import expressions as X
from .case import Case

if TYPE_CHECKING:
    from ptxls.emulator.state import Wave

NO_LIMIT = 1 << 62


@dataclass
class Breakpoint:
    id: int
    line: int  # the PTX line it is on (moved to the next instruction's line)
    pc: int
    condition: object = None  # a parsed expression, or None
    condition_text: str = ""


@dataclass
class DataBreakpoint:
    id: int
    buffer: str
    element: int
    lo: int  # byte address range of the element
    hi: int


@dataclass
class Stop:
    reason: str  # step | breakpoint | data breakpoint | exception | pause | entry
    description: str = ""
    text: str = ""
    line: int | None = None  # the line to show when it is not the thread's own PC (a finding)
    hit_ids: tuple[int, ...] = ()


class Session:
    def __init__(self, case: Case, block=(0, 0, 0), thread=(0, 0, 0)) -> None:
        self.case = case
        self.func = case.module.kernel(case.kernel)
        self.instrs = self.func.instrs
        budget = emulator.Budget(max_thread_instructions=NO_LIMIT, seconds=1e9)
        self.ex = emulator.Execution(case.module, case.kernel, case.grid, case.block,
                                     case.shared, case.params, case.memory, budget)  # fmt: skip
        self.ex.hooks.on_instruction.append(self._on_instruction)
        self.ex.hooks.on_write.append(self._on_write)
        self.block_threads = case.block[0] * case.block[1] * case.block[2]
        self.follow(_dim3(block), _dim3(thread))
        self.breakpoints: dict[int, list[Breakpoint]] = {}  # pc -> breakpoints
        self.data_breakpoints: list[DataBreakpoint] = []
        self.pause_requested = threading.Event()
        self._ran: np.ndarray | None = None
        self._data_hit: tuple[DataBreakpoint, int] | None = None
        self._next_id = 1
        self.findings_seen = 0
        self.shown_line: int | None = None
        self.last_skipped = False
        self.thread_exited = False
        self.stop_on_findings = True
        self.own_lines = self._own_line_span()

    # ---- which thread

    def follow(self, block, thread) -> None:
        gx, gy, gz = self.case.grid
        bx, by, bz = self.case.block
        if not all(0 <= v < m for v, m in zip(block, (gx, gy, gz), strict=False)) or not all(
            0 <= v < m for v, m in zip(thread, (bx, by, bz), strict=False)
        ):
            raise ValueError(
                f"block {block} thread {thread} is outside the launch "
                f"(grid {self.case.grid}, block {self.case.block})"
            )
        self.block, self.thread = tuple(block), tuple(thread)

    def thread_id(self, block, thread) -> int:
        """The DAP thread id: the thread's linear index in the grid, plus one."""
        gx, gy, _ = self.case.grid
        bx, by, _ = self.case.block
        b = block[0] + gx * (block[1] + gy * block[2])
        t = thread[0] + bx * (thread[1] + by * thread[2])
        return b * self.block_threads + t + 1

    def coords(self, thread_id: int):
        gx, gy, _ = self.case.grid
        bx, by, _ = self.case.block
        b, t = divmod(thread_id - 1, self.block_threads)
        return (b % gx, (b // gx) % gy, b // (gx * gy)), (t % bx, (t // bx) % by, t // (bx * by))

    def wave_index(self, block=None, thread=None) -> int | None:
        if self.ex.wave is None:
            return None
        return self.ex.thread_index(block or self.block, thread or self.thread)

    @property
    def wave(self) -> Wave:
        """The resident wave (there is one from the first step of a run on)."""
        assert self.ex.wave is not None, "no wave started yet"
        return self.ex.wave

    def wave_coords(self, w: int):
        return self.wave.block_of(w), self.wave.tid_of(w)

    def pc_of(self, w: int | None) -> int | None:
        if w is None or self.ex.sched is None or self.wave.exited[w]:
            return None
        return self.ex.pc_of(w)

    def current_line(self) -> int | None:
        if self.shown_line is not None:
            return self.shown_line
        pc = self.pc_of(self.wave_index())
        if pc is None or pc >= len(self.instrs):
            return None
        return self.instrs[pc].line

    # ---- breakpoints

    def set_breakpoints(self, specs: list[tuple[int, str]]) -> list[dict]:
        """Replace the line breakpoints: (line, condition) each. Returns DAP Breakpoint
        bodies (verified, the line it landed on, or why not)."""
        self.breakpoints = {}
        out = []
        for line, cond in specs:
            bid = self._new_id()
            # the instruction on that line, else on the next line that has one (inlined
            # callees make the instruction order differ from the line order)
            at = min((i.line for i in self.instrs if i.line >= line), default=None)
            pc = next((i.index for i in self.instrs if i.line == at), None)
            if pc is None:
                out.append({"id": bid, "verified": False, "line": line,
                            "message": "no instruction on or after this line"})  # fmt: skip
                continue
            tree = None
            if cond:
                try:
                    tree = X.parse(cond)
                    self._check_names(tree)
                except X.ExpressionError as e:
                    out.append({"id": bid, "verified": False, "line": line, "message": str(e)})
                    continue
            at = self.instrs[pc].line
            self.breakpoints.setdefault(pc, []).append(Breakpoint(bid, at, pc, tree, cond or ""))
            out.append({"id": bid, "verified": True, "line": at})
        return out

    def data_breakpoint_info(self, name: str) -> dict:
        """DAP dataBreakpointInfo: "c[4097]" → an id, or why it cannot be watched."""
        try:
            tree = X.parse(name)
        except X.ExpressionError as e:
            return {"dataId": None, "description": str(e)}
        buf = self.case.buffer(tree[1]) if tree[0] in ("index", "name") else None
        if buf is None:
            names = ", ".join(b.name for b in self.case.buffers)
            return {"dataId": None, "description": f"watch an element of a buffer ({names})"}
        if tree[0] == "name":
            return {"dataId": None, "description": f"name an element: {buf.name}[i]"}
        k = int(np.asarray(X.evaluate(tree[2], self._scalar_lookup, self._scalar_index)))
        if not 0 <= k < buf.length:
            return {"dataId": None, "description": f"{buf.name} has {buf.length} elements"}
        return {"dataId": f"{buf.name}[{k}]", "description": f"{buf.name}[{k}] written",
                "accessTypes": ["write"], "canPersist": True}  # fmt: skip

    def set_data_breakpoints(self, data_ids: list[str]) -> list[dict]:
        self.data_breakpoints = []
        out = []
        for did in data_ids:
            info = self.data_breakpoint_info(did)
            bid = self._new_id()
            if info.get("dataId") is None:
                out.append({"id": bid, "verified": False, "message": info["description"]})
                continue
            name, k = info["dataId"][:-1].split("[")
            buf = self.case.buffer(name)
            assert buf is not None  # data_breakpoint_info named it
            lo = buf.address + int(k) * buf.storage.itemsize
            self.data_breakpoints.append(
                DataBreakpoint(bid, name, int(k), lo, lo + buf.storage.itemsize)
            )
            out.append({"id": bid, "verified": True, "description": info["dataId"]})
        return out

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _check_names(self, tree) -> None:
        from .views import special_names

        for name in X.names_in(tree):
            if name in self.func.reg_index or name in special_names():
                continue
            if self.case.buffer(name) or name in self.case.env:
                continue
            raise X.ExpressionError(f"unknown name '{name}'")

    # ---- running

    def _on_instruction(self, ins, threads) -> None:
        self._ran = threads

    def _on_write(self, space, addr, size, threads) -> None:
        if space != "global" or not self.data_breakpoints or self._data_hit is not None:
            return
        a = np.asarray(addr, dtype=np.uint64).reshape(-1)
        for bp in self.data_breakpoints:
            hit = np.nonzero((a < np.uint64(bp.hi)) & (a + np.uint64(size) > np.uint64(bp.lo)))[0]
            if hit.size:
                t = np.asarray(threads).reshape(-1)
                self._data_hit = (bp, int(t[hit[0]]) if t.size > hit[0] else int(t[0]))
                return

    def _peek(self):
        ex = self.ex
        if ex.finished:
            return None
        if ex._need_wave() and not ex._start_wave():
            ex._finish()
            return None
        sched = ex.sched
        assert sched is not None  # a wave was started above
        pc = sched._pick()
        if pc is None:
            return (None, None)
        return pc, sched.groups[pc]

    def run(self, mode: str = "continue") -> Stop | None:
        """Run until a stop (returned) or the end of the launch (None). ``mode``: continue,
        step (the followed thread runs one instruction), next (over an inlined call), out."""
        self.pause_requested.clear()
        self.shown_line = None
        start_line = self.current_line()
        start_inside = start_line is None or start_line in self.own_lines
        # resuming from a stop: the group there runs first, without stopping on it again
        first = self.ex.sched is not None
        while True:
            if self.pause_requested.is_set():
                return Stop("pause", "paused")
            peek = self._peek()
            if peek is None:
                return None
            pc, idx = peek
            me = self.wave_index()
            if pc is not None and not first:
                hit = self._breakpoint_hit(pc, idx, me)
                if hit is not None:
                    return hit
            first = False
            mine = me is not None and idx is not None and _contains(idx, me)
            self._ran, self._data_hit = None, None
            self.ex.step()
            if self._data_hit is not None:
                bp, w = self._data_hit
                self.block, self.thread = self.wave_coords(w)
                line = self.instrs[pc].line
                return Stop("data breakpoint", f"{bp.buffer}[{bp.element}] written",
                            f"{bp.buffer}[{bp.element}] written at line {line} by block "
                            f"{self.block} thread {self.thread}", hit_ids=(bp.id,))  # fmt: skip
            found = self.ex.checks.findings
            if len(found) > self.findings_seen and not self.stop_on_findings:
                self.findings_seen = len(found)
            if len(found) > self.findings_seen:
                f = found[self.findings_seen]
                self.findings_seen = len(found)
                if f.block is not None and f.thread is not None:
                    self.block, self.thread = tuple(f.block), tuple(f.thread)
                self.shown_line = f.line
                return Stop("exception", f.kind, f"{f.kind}: {f.message}", line=f.line)
            if mine and mode != "continue" and self.wave.exited[me]:
                mode = "continue"  # the followed thread has ended: run on, as VS Code expects
                self.thread_exited = True
            if mine and mode != "continue":
                self.last_skipped = self._ran is None or not _contains(self._ran, me)
                line = self.current_line()
                if mode == "step":
                    return Stop("step")
                inside = line is None or line in self.own_lines
                if mode == "next" and (inside or not start_inside):
                    return Stop("step")
                if mode == "out" and inside:
                    return Stop("step")

    def _breakpoint_hit(self, pc: int, idx: np.ndarray, me: int | None) -> Stop | None:
        bps = self.breakpoints.get(pc)
        if not bps:
            return None
        for bp in bps:
            if bp.condition is None:
                if me is not None and _contains(idx, me):
                    return Stop("breakpoint", hit_ids=(bp.id,))
                continue
            try:
                holds = self.condition_holds(bp.condition, idx)
            except (X.ExpressionError, KeyError, ValueError, TypeError):
                continue
            if holds.size == 0:
                continue
            pick = int(idx[holds[0]])
            if me is not None and _contains(idx, me):
                j = int(np.searchsorted(idx, me))
                if bool(np.isin(j, holds)):
                    pick = me
            self.block, self.thread = self.wave_coords(pick)
            return Stop("breakpoint", f"{bp.condition_text} holds", hit_ids=(bp.id,))
        return None

    def condition_holds(self, tree, idx: np.ndarray) -> np.ndarray:
        """Positions in ``idx`` (thread indices of the wave) where the condition is true."""
        from .views import group_lookup

        lookup, index = group_lookup(self, idx)
        v = np.broadcast_to(np.asarray(X.evaluate(tree, lookup, index)), idx.shape)
        return np.nonzero(v.astype(bool))[0]

    def evaluate(self, text: str):
        """A watch expression for the followed thread: its value (scalar). A hover on "r5"
        (editors' word patterns drop the %) means %r5."""
        if f"%{text}" in self.func.reg_index:
            text = f"%{text}"
        tree = X.parse(text)
        self._check_names(tree)
        return np.asarray(X.evaluate(tree, self._scalar_lookup, self._scalar_index)).reshape(-1)[0]

    def _scalar_lookup(self, name):
        from .views import group_lookup

        w = self.wave_index()
        if w is None:
            raise X.ExpressionError("the followed thread is not running")
        lookup, _ = group_lookup(self, np.array([w]))
        return lookup(name)

    def _scalar_index(self, name, i):
        from .views import read_element

        return read_element(self, name, i)

    # ---- lines of the kernel's own body (calls are inlined: a callee's lines lie elsewhere)

    def _own_line_span(self) -> set[int]:
        starts = sorted(f.line for f in self.case.module.program.functions.values())
        start = self.func.line
        later = [s for s in starts if s > start]
        end = later[0] if later else 1 << 30
        return {i.line for i in self.instrs if start <= i.line < end}


def _contains(sorted_idx: np.ndarray, v: int) -> bool:
    j = int(np.searchsorted(sorted_idx, v))
    return j < sorted_idx.size and int(sorted_idx[j]) == v


def _dim3(v) -> tuple[int, int, int]:
    if isinstance(v, int):
        return (v, 0, 0)
    t = [int(x) for x in v] + [0, 0, 0]
    return (t[0], t[1], t[2])
