"""``emulator.load``: decode a PTX module, bind every instruction to its handler (refusing what
is not implemented, before any launch), and lay out its variables."""

from __future__ import annotations

from dataclasses import dataclass

from . import ops_control, ops_convert, ops_float, ops_int, ops_mem, ops_mma, ops_warp  # noqa: F401
from .calls import inline_calls
from .decode import Function, Pair, Program, Reg, Sink, Var, Vec, decode
from .errors import Refused
from .memory import Memory
from .ops_common import HANDLERS, PREPARE, SPECIALIZE

# Instructions that are read but whose absence of effect is exact in this model.
_NO_EFFECT = {"fence", "membar", "prefetch", "prefetchu", "nanosleep", "pmevent", "discard",
              "applypriority", "griddepcontrol", "setmaxnreg"}  # fmt: skip
# Instructions refused with the reason (the rest: "not implemented").
_WHY = {
    "wgmma": "warpgroup MMA (wgmma) is not emulated",
    "tex": "texture fetches are not emulated",
    "tld4": "texture fetches are not emulated",
    "txq": "texture queries are not emulated",
    "suld": "surface loads are not emulated",
    "sust": "surface stores are not emulated",
    "sured": "surface reductions are not emulated",
    "suq": "surface queries are not emulated",
    "mbarrier": "mbarrier objects (asynchronous barriers) are not emulated",
    "tcgen05": "5th-generation tensor core instructions are not emulated",
    "stmatrix": "stmatrix is not emulated",
    "multimem": "multimem instructions are not emulated",
    "tensormap": "tensor maps (TMA) are not emulated",
    "call": "this call cannot be inlined",
}


def _bind(func: Function) -> None:
    from .simt import cost_of

    for ins in func.instrs:
        ins.cost = cost_of(ins)
        op = ins.op
        if op == "cp" and any(m in ("commit_group", "wait_group", "wait_all") for m in ins.mods):
            ins.run = HANDLERS["fence"]
            continue
        if op == "cp" and "async" not in ins.mods:
            raise Refused(ins.text, ins.line, f"{op}.{'.'.join(ins.mods)} is not emulated")
        if op in _NO_EFFECT:
            ins.run = HANDLERS["fence"]
            continue
        h = HANDLERS.get(op)
        if h is None:
            why = _WHY.get(op) or f"the instruction '{op}' is not emulated"
            raise Refused(ins.text, ins.line, why)
        _check_operands(ins)
        prep = PREPARE.get(op)
        if prep is not None:
            try:
                prep(ins)
            except Refused:
                raise
            except Exception as e:  # a malformed instruction: refuse it, with the reason
                raise Refused(ins.text, ins.line, f"cannot be read: {e}") from None
        spec = SPECIALIZE.get(op)
        ins.run = (spec(ins) if spec is not None else None) or h


# Instructions whose first operand is written: it must be a register (or vector / pair of them).
_WRITES_FIRST = {
    "add", "sub", "mul", "mad", "mul24", "mad24", "div", "rem", "abs", "neg", "not", "cnot",
    "addc", "subc", "madc", "sad", "dp4a", "dp2a",
    "popc", "clz", "brev", "bfind", "and", "or", "xor", "min", "max", "shl", "shr", "shf",
    "bfe", "bfi", "prmt", "lop3", "setp", "set", "selp", "slct", "mov", "cvt", "cvta", "ld",
    "ldu", "atom", "fma", "rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos", "tanh", "testp",
    "copysign", "shfl", "vote", "match", "redux", "activemask", "ldmatrix", "mma",
}  # fmt: skip
_MIN_OPERANDS = {"sad": 4, "dp4a": 4, "dp2a": 4, "add": 3, "sub": 3, "addc": 3, "subc": 3, "madc": 4, "mul": 3, "mad": 4, "fma": 4, "div": 3, "rem": 3, "and": 3,
                 "or": 3, "xor": 3, "min": 3, "max": 3, "shl": 3, "shr": 3, "shf": 4, "bfe": 4,
                 "bfi": 5, "prmt": 4, "lop3": 5, "setp": 3, "set": 3, "selp": 4, "slct": 4,
                 "mov": 2, "cvt": 2, "cvta": 2, "ld": 2, "ldu": 2, "st": 2, "atom": 3, "red": 2,
                 "shfl": 5, "vote": 3, "match": 3, "redux": 3, "mma": 4, "ldmatrix": 2,
                 "abs": 2, "neg": 2, "not": 2, "cnot": 2, "popc": 2, "clz": 2, "brev": 2,
                 "bfind": 2, "rcp": 2, "sqrt": 2, "rsqrt": 2, "ex2": 2, "lg2": 2, "sin": 2,
                 "cos": 2, "tanh": 2, "testp": 2, "copysign": 3, "bra": 1}  # fmt: skip


def _check_operands(ins) -> None:
    """The shape every handler relies on: enough operands, a register where one is written."""
    need = _MIN_OPERANDS.get(ins.op)
    if need is not None and len(ins.operands) < need:
        raise Refused(ins.text, ins.line, f"'{ins.op}' needs {need} operands")
    if ins.op in _WRITES_FIRST and ins.op != "cvt" or ins.op == "cvt" and len(ins.operands) == 2:
        first = ins.operands[0] if ins.operands else None
        if type(first) not in (Reg, Vec, Pair, Sink) or (
            type(first) is Vec and not all(type(x) in (Reg, Sink) for x in first.items)
        ):
            raise Refused(ins.text, ins.line, "the destination must be a register")


@dataclass
class KernelLayout:
    shared_vars: list[tuple[str, int, int]]  # (name, offset, bytes); extern arrays last
    shared_static: int
    extern_shared_at: int | None
    local_vars: list[tuple[str, int, int]]
    local_size: int


def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


class EmuModule:
    def __init__(self, text: str) -> None:
        self.program: Program = decode(text)
        for f in self.program.functions.values():
            if f.is_entry:  # .func bodies run inlined into the kernels that call them
                inline_calls(f, self.program.functions)
                _bind(f)
        self.memory = Memory()
        self._bound: dict[int, dict[str, int]] = {}
        self._bound_memories: list[Memory] = []
        self.bind(self.memory)

    @property
    def kernels(self) -> list[str]:
        return [f.name for f in self.program.functions.values() if f.is_entry]

    def kernel(self, name: str) -> Function:
        f = self.program.functions.get(name)
        if f is None or not f.is_entry:
            raise KeyError(
                f"no kernel named {name!r} (kernels: {', '.join(self.kernels) or 'none'})"
            )
        return f

    # ---- module variables in a memory

    def bind(self, memory: Memory) -> dict[str, int]:
        """Allocate (once per memory) the module's .global/.const variables, initialised."""
        key = id(memory)
        if key in self._bound and any(m is memory for m in self._bound_memories):
            return self._bound[key]
        addrs = {}
        for v in self.program.globals:
            if v.space in ("global", "const") and not v.extern:
                a = memory.alloc(max(v.size, 1), name=v.name)
                if v.init:
                    memory.write(a, v.init)
                addrs[v.name] = a
        self._bound[key] = addrs
        self._bound_memories.append(memory)
        return addrs

    def bound_to(self, memory: Memory) -> bool:
        return any(m is memory for m in self._bound_memories)

    def forget_memories(self) -> None:
        """Drop the bindings to memories other than the module's own (a module decoded once and
        run again on a new device memory must not keep the old ones alive)."""
        own = self._bound.get(id(self.memory))
        self._bound = {id(self.memory): own} if own is not None else {}
        self._bound_memories = [self.memory]

    def global_address(self, name: str, memory: Memory | None = None) -> int:
        addrs = self.bind(memory or self.memory)
        if name not in addrs:
            raise KeyError(f"no module-level .global/.const variable {name!r}")
        return addrs[name]

    def layout(self, func: Function) -> KernelLayout:
        shared: list[tuple[str, int, int]] = []
        off = 0
        externs: list[Var] = []
        svars = [v for v in self.program.globals if v.space == "shared"] + [
            v for v in func.vars if v.space == "shared"
        ]
        for v in svars:
            if v.extern and v.size == 0:
                externs.append(v)
                continue
            off = _align(off, v.align)
            shared.append((v.name, off, v.size))
            off += v.size
        extern_at = None
        if externs:
            extern_at = _align(off, max(max(v.align for v in externs), 16))
            for v in externs:
                shared.append((v.name, extern_at, 0))
        static = _align(off, 16)
        loff = 0
        local = []
        for v in func.vars:
            if v.space in ("local", "param"):  # .param: a call's arguments, per thread
                loff = _align(loff, v.align)
                local.append((v.name, loff, v.size))
                loff += v.size
        return KernelLayout(shared, static, extern_at, local, _align(loff, 16))


def load(ptx_text: str) -> EmuModule:
    """Decode and check a PTX module; raises Refused for what cannot be emulated."""
    try:
        return EmuModule(ptx_text)
    except Refused:
        raise
    except RecursionError:
        raise Refused("", None, "the module is nested too deeply to read") from None
