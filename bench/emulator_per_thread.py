"""A deliberately simple per-thread PTX interpreter: the baseline the vectorised emulator is
measured against (bench/emulator_speed.py). Same decoded program (emulator/decode.py), plain
Python scalars, one thread at a time.

Scheduling: blocks run one after another in launch order (so a block that waits on an earlier
block's flag — the scan's look-back — finds it set). Inside a block each thread runs until it
reaches a synchronising instruction (bar.sync, shfl.sync, vote.sync) or exits; when every live
thread of the block (bar) or warp (shfl/vote) waits there, the collective is done and they go on.
Floats round to f32 after each operation (fma and the .approx functions through float64).
Only the opcodes of the benchmarked kernels (vec_add, softmax_rows, scan_inclusive) are here."""

from __future__ import annotations

import math
import struct

from ptxls.emulator.decode import Addr, Imm, Pair, Reg, Special, Sym, Vec
from ptxls.emulator.memory import BASE

_F = struct.Struct("<f")
_I = struct.Struct("<I")
MASK = {8: 0xFF, 16: 0xFFFF, 32: 0xFFFFFFFF, 64: 0xFFFFFFFFFFFFFFFF}


def f32(x: float) -> float:
    try:
        return _F.unpack(_F.pack(x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def bits_f(b: int) -> float:
    return _F.unpack(_I.pack(b & 0xFFFFFFFF))[0]


def f_bits(x: float) -> int:
    return _I.unpack(_F.pack(x))[0]


def _width(t: str) -> int:
    return int("".join(c for c in t if c.isdigit()) or 32) if t != "pred" else 1


def _signed(v: int, bits: int) -> int:
    v &= MASK[bits]
    return v - (1 << bits) if v >> (bits - 1) else v


class Thread:
    __slots__ = ("regs", "pc", "tid", "ctaid", "done", "waiting", "lane", "result")

    def __init__(self, tid, ctaid, lane):
        self.regs: dict[int, int] = {}
        self.pc = 0
        self.tid, self.ctaid, self.lane = tid, ctaid, lane
        self.done = False
        self.waiting = None  # the instruction it waits at
        self.result = None


class PerThread:
    def __init__(self, module, kernel, grid, block, params, memory, shared_bytes=0):
        self.m = module
        self.f = module.kernel(kernel)
        self.grid, self.block = grid, block
        self.mem = memory
        self.buf = memoryview(memory.data)
        from ptxls.emulator.launch import pack_params

        self.params = pack_params(self.f, params)
        lay = module.layout(self.f)
        self.shared_size = (lay.extern_shared_at or lay.shared_static) + shared_bytes
        self.sym = {n: off for n, off, _ in lay.shared_vars}
        self.sym.update({p.name: p.offset for p in self.f.params})
        self.space = {n: "shared" for n, _, _ in lay.shared_vars}
        self.space.update({p.name: "param" for p in self.f.params})
        self.instructions = 0

    # ---- values

    def get(self, th, op, t):
        if type(op) is Reg:
            v = th.regs.get(op.index, 0)
            if op.neg:
                return not v
            return self.as_type(v, t)
        if type(op) is Imm:
            if t.startswith("f"):
                return bits_f(op.bits) if op.bits is not None else float(op.value)
            return self.as_type(int(op.value), t)
        if type(op) is Special:
            return self.special(th, op.name)
        if type(op) is Sym:
            return self.sym[op.name] + op.offset
        raise TypeError(op)

    def as_type(self, raw, t):
        if t == "pred":
            return bool(raw)
        if t == "f32":
            return bits_f(raw)
        bits = _width(t)
        return _signed(raw, bits) if t[0] == "s" else raw & MASK[bits]

    def put(self, th, op, v, t):
        if type(op) is not Reg:
            return
        if t == "pred":
            th.regs[op.index] = bool(v)
        elif t == "f32":
            th.regs[op.index] = f_bits(f32(v))
        else:
            th.regs[op.index] = int(v) & MASK[_width(t)]

    def special(self, th, name):
        d = "xyz".index(name[-1]) if name[-2] == "." else 0
        if name.startswith("%tid"):
            return th.tid[d]
        if name.startswith("%ntid"):
            return self.block[d]
        if name.startswith("%ctaid"):
            return th.ctaid[d]
        if name.startswith("%nctaid"):
            return self.grid[d]
        if name == "%laneid":
            return th.lane
        raise KeyError(name)

    def addr(self, th, op: Addr):
        if op.base is None:
            return op.offset
        if type(op.base) is Sym:
            return self.sym[op.base.name] + op.offset
        return (th.regs.get(op.base.index, 0) + op.offset) & MASK[64]

    # ---- memory

    def load(self, space, a, t, shared):
        fmt = {
            "f32": "<f",
            "u32": "<I",
            "b32": "<I",
            "s32": "<i",
            "u64": "<Q",
            "b64": "<Q",
            "s64": "<q",
        }[t]
        if space == "param":
            return struct.unpack_from(fmt, self.params, a)[0]
        if space == "shared":
            return struct.unpack_from(fmt, shared, a)[0]
        return struct.unpack_from(fmt, self.buf, a - BASE)[0]

    def store(self, space, a, t, v, shared):
        fmt = {
            "f32": "<f",
            "u32": "<I",
            "b32": "<I",
            "s32": "<I",
            "u64": "<Q",
            "b64": "<Q",
            "s64": "<Q",
        }[t]
        if t == "f32":
            v = f32(v)
        elif t[0] == "s":
            v &= MASK[_width(t)]
        if space == "shared":
            struct.pack_into(fmt, shared, a, v)
        else:
            struct.pack_into(fmt, self.buf, a - BASE, v)

    # ---- running

    def run(self):
        gx, gy, gz = self.grid
        for bz in range(gz):
            for by in range(gy):
                for bx in range(gx):
                    self.run_block((bx, by, bz))
        return self.instructions

    def run_block(self, ctaid):
        bx, by, bz = self.block
        shared = bytearray(self.shared_size)
        threads = []
        for z in range(bz):
            for y in range(by):
                for x in range(bx):
                    lin = x + bx * (y + by * z)
                    threads.append(Thread((x, y, z), ctaid, lin % 32))
        while True:
            for th in threads:
                if not th.done and th.waiting is None:
                    self.run_thread(th, shared)
            live = [t for t in threads if not t.done]
            if not live:
                return
            self.collectives(live, threads)

    def collectives(self, live, threads):
        bars = [t for t in live if t.waiting.op == "bar"]
        if len(bars) == len(live):
            for t in bars:
                t.waiting, t.pc = None, t.pc + 1
            return
        for w0 in range(0, len(threads), 32):
            warp = [t for t in threads[w0 : w0 + 32] if not t.done]
            if warp and all(
                t.waiting is not None and t.waiting.op in ("shfl", "vote") for t in warp
            ):
                self.warp_op(warp)
                return
        raise RuntimeError("per-thread interpreter: no thread can go on")

    def warp_op(self, warp):
        ins = warp[0].waiting
        if ins.op == "shfl":
            vals = {t.lane: t.regs.get(ins.operands[1].index, 0) if type(ins.operands[1]) is Reg
                    else self.get(t, ins.operands[1], "b32") for t in warp}  # fmt: skip
            mode = next(m for m in ins.mods if m in ("up", "down", "bfly", "idx"))
            for t in warp:
                b = self.get(t, ins.operands[2], "u32")
                c = self.get(t, ins.operands[3], "u32")
                seg, clamp = (c >> 8) & 31, c & 31
                maxl = (t.lane & seg) | (clamp & ~seg)
                j = {"up": t.lane - b, "down": t.lane + b, "bfly": t.lane ^ b,
                     "idx": (t.lane & seg) | (b & ~seg)}[mode]  # fmt: skip
                ok = j >= maxl if mode == "up" else j <= maxl
                src = j if ok else t.lane
                dst = ins.operands[0]
                first = dst.first if type(dst) is Pair else dst
                t.regs[first.index] = vals.get(src, vals[t.lane])
                if type(dst) is Pair:
                    t.regs[dst.second.index] = ok
        else:
            ballot = 0
            for t in warp:
                if self.get(t, ins.operands[1], "pred"):
                    ballot |= 1 << t.lane
            for t in warp:
                if "ballot" in ins.mods:
                    t.regs[ins.operands[0].index] = ballot
                else:
                    t.regs[ins.operands[0].index] = ballot != 0
        for t in warp:
            t.waiting, t.pc = None, t.pc + 1
            self.instructions += 1

    def run_thread(self, th, shared):
        instrs = self.f.instrs
        while True:
            if th.pc >= len(instrs):
                th.done = True
                return
            ins = instrs[th.pc]
            if ins.guard is not None and not self.get(th, ins.guard, "pred"):
                th.pc += 1
                self.instructions += 1
                continue
            op = ins.op
            if op in ("bar", "shfl", "vote"):
                th.waiting = ins
                if op == "bar":
                    self.instructions += 1
                return
            self.instructions += 1
            if op == "ret":
                th.done = True
                return
            if op == "bra":
                th.pc = ins.target
                continue
            self.execute(th, ins, shared)
            th.pc += 1

    def execute(self, th, ins, shared):
        op, mods, ops = ins.op, ins.mods, ins.operands
        t = next(
            (m for m in reversed(mods) if m[0] in "bsuf" and m[1:].isdigit() or m == "pred"), "b32"
        )
        if op in ("ld", "st"):
            space = next((m for m in mods if m in ("param", "shared", "global")), "global")
            a_op = ops[1] if op == "ld" else ops[0]
            if type(a_op.base) is Sym:
                space = self.space.get(a_op.base.name, space)
            a = self.addr(th, a_op)
            size = _width(t) // 8
            if op == "ld":
                dsts = ops[0].items if type(ops[0]) is Vec else (ops[0],)
                for k, d in enumerate(dsts):
                    self.put(th, d, self.load(space, a + k * size, t, shared), t)
            else:
                srcs = ops[1].items if type(ops[1]) is Vec else (ops[1],)
                for k, s in enumerate(srcs):
                    self.store(space, a + k * size, t, self.get(th, s, t), shared)
            return
        if op == "cp":
            if "async" in mods and len(ops) >= 3:
                dst, src = self.addr(th, ops[0]), self.addr(th, ops[1])
                n = self.get(th, ops[2], "u32")
                have = self.get(th, ops[3], "u32") if len(ops) > 3 else n
                for k in range(n):
                    shared[dst + k] = self.buf[src - BASE + k] if k < have else 0
            return
        if op == "atom":
            a = self.addr(th, ops[1])
            old = self.load("global", a, t, shared)
            self.store("global", a, t, old + self.get(th, ops[2], t), shared)
            self.put(th, ops[0], old, t)
            return
        if op == "mov" and type(ops[0]) is Vec:  # unpack: element 0 from the low bits
            v = self.get(th, ops[1], t)
            half = _width(t) // len(ops[0].items)
            for k, d in enumerate(ops[0].items):
                self.put(th, d, v >> (half * k), f"b{half}")
            return
        if op in ("cvta", "mov") and type(ops[1]) is not Vec:
            self.put(th, ops[0], self.get(th, ops[1], t), t)
            return
        if op == "mov":
            lo, hi = (self.get(th, x, "b32") for x in ops[1].items)
            self.put(th, ops[0], lo | (hi << 32), t)
            return
        if op == "cvt":
            dt, st = [m for m in mods if m[0] in "bsuf" and m[1:].isdigit()]
            self.put(th, ops[0], self.get(th, ops[1], st), dt)
            return
        if op == "setp":
            cmp = mods[0]
            a, b = self.get(th, ops[1], t), self.get(th, ops[2], t)
            r = {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[
                cmp
            ]
            self.put(th, ops[0], r, "pred")
            return
        if op == "selp":
            p = self.get(th, ops[3], "pred")
            self.put(th, ops[0], self.get(th, ops[1] if p else ops[2], t), t)
            return
        a = self.get(th, ops[1], t)
        if op in ("neg", "ex2", "rcp"):
            r = {
                "neg": lambda: -a,
                "ex2": lambda: 2.0**a,
                "rcp": lambda: 1.0 / a if a else math.inf,
            }[op]()
            self.put(th, ops[0], r, t)
            return
        b = self.get(th, ops[2], t if op not in ("shl", "shr") else "u32")
        if op == "mul" and "wide" in mods:
            wt = t[0] + str(2 * _width(t))
            self.put(th, ops[0], a * b, wt)
            return
        if op == "mad" or op == "fma":
            c = self.get(th, ops[3], t)
            self.put(th, ops[0], a * b + c, t)
            return
        r = {
            "add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b,
            "and": lambda: a & b, "or": lambda: a | b, "xor": lambda: a ^ b,
            "shl": lambda: a << b if b < 64 else 0, "shr": lambda: a >> b,
            "max": lambda: max(a, b), "min": lambda: min(a, b),
        }[op]()  # fmt: skip
        self.put(th, ops[0], r, t)
