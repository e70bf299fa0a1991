"""SIMT execution of one wave: thread groups by program counter, barriers, warp-synchronous
waits, and the budget that turns a spin nobody ends into a reported hang.

Model. Every thread has a PC; threads at the same PC form one group (a sorted array of thread
indices over all warps and blocks of the wave), and one step runs one instruction for a whole
group as numpy operations. A branch splits a group; groups that reach the same PC merge.

Which group runs next: a sweep. The scheduler takes the lowest PC above the last one it ran,
wrapping around at the end. In straight-line and if/else code this is exactly the order of
immediate-post-dominator reconvergence (the side with the lower PC runs first; both meet at
the join); the threads leaving a loop wait at the exit until the sweep comes round. Because the
sweep always moves on, a block spinning on a flag (a backward branch to a lower PC) never starves
the block that will set it — the forward-progress guarantee the decoupled look-back scan needs.

Warp-synchronous instructions (``shfl.sync``, ``vote.sync``, ``bar.warp.sync``, ``match``,
``redux``) are convergence points, as the ISA defines them since sm_70: a thread waits there
until every non-exited lane its member mask names has arrived. ``bar.sync`` waits for the
block's threads (or the stated count). When nothing can run and threads still wait, the wait
is reported (divergent barrier, or a sync mask naming lanes that never come) and released.
"""

from __future__ import annotations

import time
from functools import cached_property

import numpy as np

from . import errors as E
from .errors import Refused
from .state import ALL, Wave

NUM_BARRIERS = 16

# The engine's work per thread of a step, by instruction class: measured CPU nanoseconds per
# thread on the 2-core machine (bench/emulator_op_costs.py: emulator-speed/cpu-<date>-costs.md), beside a
# fixed cost per step (gputest/emulated.STEP_COST). A harness sizes its cases by it: the same
# kernel gets the same sizes anywhere. A global access whose lanes are consecutive runs as one
# slice (access._coalesced) and costs COALESCED instead of its class's gather price.
COALESCED = 4
_COSTS = {
    "ld.global": 40, "st.global": 40, "ld.generic": 40, "st.generic": 40, "ld.const": 40,
    "ld.local": 40, "st.local": 40, "ld.param": 2, "ld.shared": 80, "st.shared": 80, "atom": 140, "red": 140,
    "shfl": 25, "vote": 60, "match": 60, "redux": 60, "bar": 40, "barrier": 40, "mma": 500,
    "ldmatrix": 800, "cp": 350, "ex2": 15, "lg2": 15, "rcp": 15, "rsqrt": 15, "sqrt": 15,
    "sin": 15, "cos": 15, "tanh": 20, "div": 30, "cvt": 20, "fma": 16,
}  # fmt: skip
_HALF = ("f16", "bf16", "f16x2", "bf16x2")


def cost_of(ins) -> int:
    """Work per thread of one instruction (see _COSTS); 2 for integer, bit, move, compare,
    branch and f32 add/mul."""
    op = ins.op
    if op in ("ld", "st", "ldu"):
        from .ops_mem import space_of

        return _COSTS.get(f"{'st' if op == 'st' else 'ld'}.{space_of(ins)}", 40)
    if any(m in _HALF for m in ins.mods) and op != "mma":
        return 35
    if op == "mad" and any(m in ("f32", "f64") for m in ins.mods):
        return 16
    return _COSTS.get(op, 2)


class Scheduler:
    def __init__(self, wave: Wave, instrs, budget: E.Budget, result: E.LaunchResult,
                 hooks=None, deadline: float | None = None) -> None:  # fmt: skip
        self.w = wave
        wave.sched = self
        self.instrs = instrs
        self.budget = budget
        self.result = result
        self.hooks = hooks
        self.deadline = deadline
        n = wave.N
        self.groups: dict[int, np.ndarray] = {0: wave.all_idx} if n else {}
        self.stalled: dict[int, int] = {}  # pc -> progress counter when it stalled
        self.progress = 0
        self.cursor = -1
        self.bar_count = np.zeros((wave.nblocks, NUM_BARRIERS), dtype=np.int64)
        self.bar_expected = np.zeros((wave.nblocks, NUM_BARRIERS), dtype=np.int64)
        self.bar_line = np.zeros((wave.nblocks, NUM_BARRIERS), dtype=np.int64)
        # lanes that do not exist (a block that is not a multiple of 32) count as exited
        self.lanes_absent = np.zeros(wave.nwarps, dtype=np.uint64)
        tail = wave.block_threads % 32
        if tail:
            last = np.arange(wave.nblocks) * wave.warps_per_block + wave.warps_per_block - 1
            self.lanes_absent[last] = np.uint64(((1 << 32) - 1) ^ ((1 << tail) - 1))
        self.steps = 0
        self.done = not self.groups

    @cached_property
    def bar_wait(self) -> np.ndarray:  # the barrier id a thread waits at (-1: none)
        return np.full(self.w.N, -1, dtype=np.int16)

    @cached_property
    def bar_resume(self) -> np.ndarray:  # where it goes on release
        return np.zeros(self.w.N, dtype=np.int32)

    @cached_property
    def bar_pred(self) -> np.ndarray:  # bar.red: each thread's predicate
        return np.zeros(self.w.N, dtype=bool)

    @cached_property
    def bar_red(self) -> dict:  # barrier id -> (bar.red's destination, its kind)
        return {}

    # ---- groups

    def add(self, pc: int, idx: np.ndarray) -> None:
        if idx.size == 0:
            return
        old = self.groups.get(pc)
        if old is None:
            self.groups[pc] = idx
        else:
            merged = np.concatenate((old, idx))
            merged.sort(kind="stable")
            self.groups[pc] = merged
            self.stalled.pop(pc, None)

    def stall(self, pc: int, idx: np.ndarray) -> None:
        """Threads that wait at pc (a .sync instruction) until some other group moves."""
        self.add(pc, idx)
        self._new_stalls.append(pc)

    _new_stalls: list[int] = []

    def exit(self, idx: np.ndarray) -> None:
        self.w.exited[idx] = True

    def _pick(self) -> int | None:
        best_after = best = None
        for pc in self.groups:
            if self.stalled.get(pc, -1) == self.progress:
                continue
            if best is None or pc < best:
                best = pc
            if pc > self.cursor and (best_after is None or pc < best_after):
                best_after = pc
        return best_after if best_after is not None else best

    # ---- running

    def step(self) -> bool:
        """Run one instruction for the next group; False when the wave has finished."""
        if self.done:
            return False
        pc = self._pick()
        if pc is None:
            if not self._unblock():
                self.done = True
                return False
            return True
        idx = self.groups.pop(pc)
        self.stalled.pop(pc, None)
        self.cursor = pc
        self.steps += 1
        if pc >= len(self.instrs):  # fell off the end of the body: an implicit ret
            self.exit(idx)
            self.progress += 1
            return True
        ins = self.instrs[pc]
        self.result.thread_instructions += int(idx.size)
        self.result.warp_instructions += 1
        w = self.w
        sel = ALL if idx.size == w.N else idx
        run_idx = idx
        skipped = None  # threads whose guard is false: on to pc + 1 (added after the run)
        if ins.guard is not None:
            p = w.get_reg(ins.guard, "pred", sel, pc)
            if p.ndim == 0:
                if not bool(p):
                    self.add(pc + 1, idx)
                    self.progress += 1
                    return True
            elif not p.all():
                if not p.any():
                    self.add(pc + 1, idx)
                    self.progress += 1
                    return True
                if sel is ALL:  # idx is every thread of the wave, 0..N-1: the mask's positions
                    run_idx, skipped = np.flatnonzero(p), np.flatnonzero(~p)
                else:
                    run_idx, skipped = idx[p], idx[~p]
                sel = run_idx
        if self.hooks is not None:
            self.hooks.before(ins, run_idx)
        self._new_stalls = []
        w.pending_undefined = None
        w.coalesced = False
        try:
            nxt = ins.run(w, ins, sel, pc)
        except (TypeError, IndexError, KeyError, ValueError, AttributeError) as e:
            # an instruction whose operands do not fit it (bad PTX that ptxas would reject):
            # refused with its line, never a traceback
            raise Refused(
                ins.text, ins.line, f"its operands do not fit the instruction ({e})"
            ) from None
        self.result.thread_work += int(run_idx.size) * (COALESCED if w.coalesced else ins.cost)
        moved = skipped is not None
        if nxt is None:
            # every thread of the group goes on to pc + 1, run or skipped: the group as it
            # was (sorted), no merge of the two parts
            self.add(pc + 1, idx)
            moved = True
        else:
            if skipped is not None:
                self.add(pc + 1, skipped)
            for npc, nidx in nxt:
                self.add(npc, nidx)
                moved = moved or nidx.size > 0
            moved = moved or ins.op in ("ret", "exit", "bar", "barrier", "trap")
        if moved or not self._new_stalls:
            self.progress += 1
        for spc in self._new_stalls:
            if spc in self.groups:
                self.stalled[spc] = self.progress
        if self.result.thread_instructions > self.budget.max_thread_instructions:
            self._hang("the thread-instruction budget")
        elif (
            self.deadline is not None
            and (self.steps & 63) == 0
            and time.monotonic() > self.deadline
        ):
            self._hang("the time budget")
        return not self.done

    def run(self) -> None:
        while self.step():
            pass

    def _hang(self, what: str) -> None:
        self.result.hang = True
        parts = []
        for pc, idx in sorted(self.groups.items(), key=lambda kv: -kv[1].size)[:4]:
            line = self.instrs[pc].line if pc < len(self.instrs) else None
            text = self.instrs[pc].text if pc < len(self.instrs) else "end"
            b = self.w.block_of(int(idx[0]))
            parts.append(f"line {line} ({text}): {idx.size} threads, first in block {b}")
        waiting = int((self.bar_wait >= 0).sum()) if "bar_wait" in self.__dict__ else 0
        if waiting:
            parts.append(f"{waiting} threads waiting at barriers")
        self.result.hang_where = f"stopped at {what}: " + "; ".join(parts)
        self.done = True

    # ---- barriers (bar.sync / bar.arrive / barrier.cta)

    def live_threads(self) -> np.ndarray:
        w = self.w
        return w.block_threads - np.bincount(w.slot[w.exited], minlength=w.nblocks)

    def barrier(self, pc: int, idx: np.ndarray, bar_id: int, count: int | None, wait: bool) -> None:
        w = self.w
        if not 0 <= bar_id < NUM_BARRIERS:
            w.checks.add(E.DIVERGENT_BARRIER, pc, f"barrier id {bar_id} is out of range 0..15")
            self.add(pc + 1, idx)
            return
        slots = w.slot[idx]
        self.bar_count[:, bar_id] += np.bincount(slots, minlength=w.nblocks)
        if count is not None:
            self.bar_expected[slots, bar_id] = count
        self.bar_line[slots, bar_id] = pc
        if wait:
            self.bar_wait[idx] = bar_id
            self.bar_resume[idx] = pc + 1
        else:
            self.add(pc + 1, idx)
        self._release(bar_id, forced=False)

    def _release(self, bar_id: int, forced: bool) -> bool:
        w = self.w
        counts = self.bar_count[:, bar_id]
        expected = np.where(self.bar_expected[:, bar_id] > 0, self.bar_expected[:, bar_id],
                            self.live_threads())  # fmt: skip
        done = (counts > 0) & ((counts >= expected) | forced)
        if not done.any():
            return False
        waiting = np.nonzero((self.bar_wait == bar_id) & done[w.slot])[0]
        full = self.bar_expected[:, bar_id] == 0
        partial = done & full & (self.live_threads() < w.block_threads)
        if forced or partial.any():
            slot = int(np.nonzero(done)[0][0])
            pc = int(self.bar_line[slot, bar_id])
            first = waiting[0] if waiting.size else int(np.nonzero(w.slot == slot)[0][0])
            exited = int(w.block_threads - self.live_threads()[slot])
            why = (f"{int(counts[slot])} of the block's {w.block_threads} threads reached it"
                   + (f", {exited} had exited" if exited else "")
                   + ("; the others never arrive" if forced else ""))  # fmt: skip
            w.checks.add(E.DIVERGENT_BARRIER, pc, f"barrier {bar_id} reached by part of the block: {why}",
                         w, int(first), count=int(done.sum()), space="")  # fmt: skip
        self.bar_count[done, bar_id] = 0
        self.bar_expected[done, bar_id] = 0
        w.tracker.barrier(np.nonzero(done)[0])
        red = self.__dict__.get("bar_red", {}).pop(bar_id, None)
        if red is not None and waiting.size:  # bar.red: the block's reduction to every thread
            self._reduce(red, waiting)
        if waiting.size:
            self.bar_wait[waiting] = -1
            resume = self.bar_resume[waiting]
            for pc in np.unique(resume):
                self.add(int(pc), waiting[resume == pc])
        return True

    def _reduce(self, red, waiting: np.ndarray) -> None:
        dst, kind = red
        w = self.w
        slots = w.slot[waiting]
        trues = np.bincount(slots, weights=self.bar_pred[waiting], minlength=w.nblocks)
        total = np.bincount(slots, minlength=w.nblocks)
        if kind == "popc":
            w.put(dst, trues[slots].astype(np.uint32), "u32", waiting)
        elif kind == "and":
            w.put(dst, (trues == total)[slots], "pred", waiting)
        else:
            w.put(dst, (trues > 0)[slots], "pred", waiting)

    def _unblock(self) -> bool:
        """Nothing can run: release what waits, reporting why it waited (or finish)."""
        for bar_id in range(NUM_BARRIERS):
            if (self.bar_count[:, bar_id] > 0).any() and self._release(bar_id, forced=False):
                return True
        for bar_id in range(NUM_BARRIERS):
            if "bar_wait" not in self.__dict__:
                break
            if (self.bar_wait == bar_id).any() and self._release(bar_id, forced=True):
                return True
        if self.stalled:  # warp-synchronous waits whose lanes never come
            pc = min(self.stalled)
            del self.stalled[pc]
            self.forced_sync = pc
            return True
        return False

    # ---- warp-synchronous waits

    forced_sync: int | None = None

    def warp_ready(self, pc: int, idx: np.ndarray, mask) -> tuple[np.ndarray, np.ndarray]:
        """(threads that may run the .sync instruction now, threads that wait). A thread may
        run when every lane its member mask names has arrived or exited."""
        w = self.w
        if self.forced_sync != pc and np.ndim(mask) == 0 and int(mask) & 0xFFFFFFFF == 0xFFFFFFFF:
            from .ops_warp import whole_warps

            if whole_warps(w, idx):  # every lane of each warp is here: all may run, none is bad
                return idx, idx[:0]
        gw = w.gwarp[idx]
        lane_bits = np.uint64(1) << w.lane[idx].astype(np.uint64)
        present = np.bincount(gw, weights=lane_bits.astype(np.float64), minlength=w.nwarps)
        present = present.astype(np.uint64)
        exited_bits = self._exited_bits()
        m = np.asarray(mask).astype(np.uint64) & np.uint64(0xFFFFFFFF)
        gone = exited_bits[gw] | self.lanes_absent[gw]
        missing = m & ~present[gw] & ~gone
        forced = self.forced_sync == pc
        if forced:
            self.forced_sync = None
        bad = (m & gone) != 0
        if forced:
            bad |= missing != 0
            missing = np.zeros_like(missing)
        if bad.any():
            i = int(np.argmax(bad))
            w.checks.add(
                E.SYNC_MASK, pc,
                f"member mask {int(np.broadcast_to(m, bad.shape)[i]):#010x} names lanes that are "
                "not active here (exited, absent, or never arriving)",
                w, int(idx[i]), count=int(bad.sum()),
            )  # fmt: skip
        own = (m & lane_bits) == 0
        if own.any():
            i = int(np.argmax(own))
            w.checks.add(E.SYNC_MASK, pc, "the executing lane is not in the member mask",
                         w, int(idx[i]), count=int(own.sum()))  # fmt: skip
        ok = missing == 0
        if ok.all():
            return idx, idx[:0]
        return idx[ok], idx[~ok]

    def _exited_bits(self) -> np.ndarray:
        w = self.w
        ex = np.nonzero(w.exited)[0]
        bits = np.zeros(w.nwarps, dtype=np.uint64)
        if ex.size:
            vals = np.bincount(w.gwarp[ex], weights=(np.uint64(1) << w.lane[ex].astype(np.uint64)).astype(np.float64),
                               minlength=w.nwarps)  # fmt: skip
            bits = vals.astype(np.uint64)
        return bits
