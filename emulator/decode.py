"""PTX text → a compact program per function: instructions with their opcode, modifiers and
typed operands, labels resolved to instruction indices, the PTX line kept on each.

The module's structure (functions, parameters, register declarations) comes from the project's
one PTX reader (frontend/ptx.py); this module reads what the reader leaves alone: each
statement of a body, its guard, opcode and operands, and variable declarations with their
sizes, alignments and initialisers. Anything it cannot read is a ``Refused``, never a crash.
"""

from __future__ import annotations

import bisect
import re
import struct
from dataclasses import dataclass, field

from ptxls.frontend.ptx import blank_comments, parse_ptx, split_statements

from .errors import Refused

# ---- operands


@dataclass(slots=True, frozen=True)
class Reg:
    index: int
    name: str
    neg: bool = False  # "!%p" as a predicate source


@dataclass(slots=True, frozen=True)
class Imm:
    value: int | float
    is_float: bool = False
    bits: int | None = None  # the raw bits of a 0f/0d literal
    bits_width: int = 0


@dataclass(slots=True, frozen=True)
class Special:
    name: str  # "%tid.x", "%laneid", "%clock64" …


@dataclass(slots=True, frozen=True)
class Sym:
    name: str
    offset: int = 0


@dataclass(slots=True, frozen=True)
class Addr:
    base: Reg | Sym | None
    offset: int = 0


@dataclass(slots=True, frozen=True)
class Vec:
    items: tuple


@dataclass(slots=True, frozen=True)
class Pair:  # "%p|%q": setp's two predicate results
    first: Reg
    second: Reg


@dataclass(slots=True, frozen=True)
class Sink:  # "_"
    pass


@dataclass(slots=True, frozen=True)
class ArgList:  # "(a, b)" of a call
    items: tuple


# ---- declarations


@dataclass(slots=True)
class RegInfo:
    name: str
    type: str  # ".b32", ".pred" …
    width: int  # bits; 1 for .pred


@dataclass(slots=True)
class Var:
    """A variable in a state space: name, bytes, alignment, initial bytes."""

    name: str
    space: str  # shared | local | const | global | param
    elem_type: str
    size: int  # bytes; 0 for an extern .shared array (dynamic shared memory)
    align: int
    init: bytes | None = None
    extern: bool = False
    line: int = 0


@dataclass(slots=True)
class Param:
    name: str
    type: str
    size: int
    align: int
    offset: int = 0  # in the kernel's parameter buffer


@dataclass(slots=True, eq=False)
class Instr:
    index: int
    line: int  # 1-based PTX line
    text: str  # the statement, whitespace collapsed
    op: str  # "ld", "add", "mma" …
    mods: tuple[str, ...]  # ("global", "nc", "v4", "f32")
    operands: tuple
    guard: Reg | None = None
    target: int | None = None  # bra: resolved label index
    run: object = None  # the handler, bound at load
    info: object = None  # what the handler precomputed
    cost: int = 2  # the engine's work per thread (simt.cost_of), for sizing cases


@dataclass(slots=True)
class Function:
    name: str
    is_entry: bool
    params: list[Param]
    return_params: list[Param]
    instrs: list[Instr] = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)
    regs: list[RegInfo] = field(default_factory=list)
    reg_index: dict[str, int] = field(default_factory=dict)
    vars: list[Var] = field(default_factory=list)
    line: int = 0


@dataclass(slots=True)
class Program:
    functions: dict[str, Function]
    globals: list[Var]  # module-scope .global/.const/.shared
    address_size: int = 64


_TYPE_BITS = {
    "pred": 1,
    "b8": 8, "u8": 8, "s8": 8,
    "b16": 16, "u16": 16, "s16": 16, "f16": 16, "bf16": 16,
    "b32": 32, "u32": 32, "s32": 32, "f32": 32, "f16x2": 32, "bf16x2": 32, "tf32": 32,
    "b64": 64, "u64": 64, "s64": 64, "f64": 64,
    "b128": 128,
}  # fmt: skip


def type_bits(t: str) -> int:
    return _TYPE_BITS.get(t.lstrip("."), 0)


# ---- text helpers


class _Lines:
    def __init__(self, text: str) -> None:
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)  # 1-based


_LINE_INFO_RE = re.compile(r"(?m)^[ \t]*\.(?:loc|file)\b[^\n;]*")
_LABEL_RE = re.compile(r"\s*([A-Za-z_$][\w$]*)\s*:(?!:)")
_GUARD_RE = re.compile(r"@\s*(!?)\s*([%A-Za-z_$][\w$]*)\s*")
_OPCODE_RE = re.compile(r"([A-Za-z_]\w*(?:\.\w+(?:::\w+)*)*)")
_VAR_RE = re.compile(
    r"^(?:\.(?:extern|visible|weak|common)\s+)*\.(shared|local|const|global|param)\b(.*)$", re.S
)
_INT_RE = re.compile(r"^[+-]?(0[xX][0-9a-fA-F]+|0[bB][01]+|0[0-7]*|[1-9]\d*)[uU]?$")
# Instructions the emulator refuses by name (module.py says why): operands are not read.
OPAQUE = frozenset(
    ("tex", "tld4", "txq", "suld", "sust", "sured", "suq", "wgmma", "tcgen05", "mbarrier",
     "tensormap", "multimem", "stmatrix", "istypep", "clusterlaunchcontrol")
)  # fmt: skip
_DECL_DIRECTIVES = (".reg", ".pragma", ".loc", ".file", ".section", ".maxnreg", ".maxntid")


def split_top(text: str, sep: str = ",") -> list[str]:
    """Split at separators outside (), [] and {}."""
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for c in text:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == sep and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    if "".join(cur).strip():
        out.append("".join(cur))
    return [x.strip() for x in out]


def parse_int(text: str) -> int | None:
    t = text.strip().replace(" ", "")
    if not _INT_RE.match(t):
        return None
    neg = t.startswith("-")
    t = t.lstrip("+-").rstrip("uU")
    if t[:2] in ("0x", "0X"):
        v = int(t[2:], 16)
    elif t[:2] in ("0b", "0B"):
        v = int(t[2:], 2)
    elif len(t) > 1 and t.startswith("0"):
        v = int(t, 8)
    else:
        v = int(t)
    return -v if neg else v


def parse_imm(text: str) -> Imm | None:
    t = text.strip()
    neg = t.startswith("-")
    body = t.lstrip("+-").strip()
    if re.fullmatch(r"0[fF][0-9a-fA-F]{8}", body):
        bits = int(body[2:], 16)
        v = struct.unpack("<f", struct.pack("<I", bits))[0]
        if neg:
            bits ^= 0x80000000
            v = -v
        return Imm(v, True, bits, 32)
    if re.fullmatch(r"0[dD][0-9a-fA-F]{16}", body):
        bits = int(body[2:], 16)
        v = struct.unpack("<d", struct.pack("<Q", bits))[0]
        if neg:
            bits ^= 1 << 63
            v = -v
        return Imm(v, True, bits, 64)
    i = parse_int(t)
    if i is not None:
        return Imm(i)
    if re.fullmatch(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?", t):
        return Imm(float(t), True)
    return None


def _sym_plus(text: str) -> tuple[str, int] | None:
    m = re.fullmatch(r"([A-Za-z_$%][\w$.]*)\s*(?:([+-])\s*(\S+))?", text.strip())
    if not m:
        return None
    off = 0
    if m.group(2):
        v = parse_int(m.group(3))
        if v is None:
            return None
        off = -v if m.group(2) == "-" else v
    return m.group(1), off


# ---- variable declarations


def parse_var(stmt: str, line: int) -> list[Var]:
    """A ``.shared .align 16 .b8 tile[4096];``-style declaration (several names allowed)."""
    s = " ".join(stmt.split())
    m = _VAR_RE.match(s)
    if not m:
        return []
    space, rest = m.group(1), m.group(2)
    extern = ".extern" in s.split(m.group(1))[0]
    init_text = None
    if "=" in rest:
        rest, init_text = rest.split("=", 1)
    align = None
    am = re.search(r"\.align\s+(\d+)", rest)
    if am:
        align = int(am.group(1))
        rest = rest[: am.start()] + rest[am.end() :]
    vec = 1
    vm = re.search(r"\.v(\d)\b", rest)
    if vm:
        vec = int(vm.group(1))
        rest = rest[: vm.start()] + rest[vm.end() :]
    rest = (
        re.sub(r"\.ptr\b|\.(global|shared|local|const)\b", "", rest) if space == "param" else rest
    )
    tm = re.search(r"\.(\w+)", rest)
    if not tm or not type_bits(tm.group(1)):
        raise Refused(s, line, "a variable declaration without a type the emulator knows")
    etype = tm.group(1)
    ebytes = max(1, type_bits(etype) // 8) * vec
    names = rest[tm.end() :]
    out: list[Var] = []
    for part in split_top(names):
        nm = re.match(r"([A-Za-z_$%][\w$]*)\s*((?:\[\s*\d*\s*\])*)\s*$", part)
        if not nm:
            raise Refused(s, line, "a variable declaration the emulator cannot read")
        dims = re.findall(r"\[\s*(\d*)\s*\]", nm.group(2))
        count = 1
        is_extern_array = False
        for d in dims:
            if d == "":
                is_extern_array = True
                count = 0
            else:
                count *= int(d)
        size = ebytes * count
        init = None
        if init_text is not None and len(out) == 0:
            init = _initialiser(init_text, etype, vec, count if count else 1, line, s)
        out.append(
            Var(
                nm.group(1),
                space,
                etype,
                size,
                align or ebytes,
                init,
                extern or is_extern_array,
                line,
            )
        )
    return out


def _initialiser(text: str, etype: str, vec: int, count: int, line: int, stmt: str) -> bytes:
    import numpy as np

    items = [x for x in re.split(r"[{},\s]+", text) if x]
    vals = []
    for it in items:
        imm = parse_imm(it)
        if imm is None:
            raise Refused(stmt, line, "an initialiser the emulator cannot read (only numbers)")
        vals.append(imm)
    bits = type_bits(etype)
    n = count * vec
    arr = bytearray(n * max(1, bits // 8))
    from .values import imm_bytes

    for i, v in enumerate(vals[:n]):
        b = imm_bytes(v, etype)
        arr[i * len(b) : (i + 1) * len(b)] = b
    del np
    return bytes(arr)


# ---- operands


def parse_operand(text: str, func: Function, line: int, stmt: str):
    t = text.strip()
    if t == "_":
        return Sink()
    if t.startswith("[") and t.endswith("]"):
        inner = t[1:-1].strip()
        imm = parse_int(inner)
        if imm is not None:
            return Addr(None, imm)
        sp = _sym_plus(inner)
        if sp is None:
            raise Refused(stmt, line, f"an address the emulator cannot read: {t}")
        name, off = sp
        if name.startswith("%") or name in func.reg_index:
            return Addr(_reg(name, func, line, stmt), off)
        return Addr(Sym(name), off)
    if t.startswith("{") and t.endswith("}"):
        return Vec(tuple(parse_operand(x, func, line, stmt) for x in split_top(t[1:-1])))
    if t.startswith("(") and t.endswith(")"):
        return ArgList(tuple(parse_operand(x, func, line, stmt) for x in split_top(t[1:-1])))
    if "|" in t:
        a, b = t.split("|", 1)
        return Pair(_reg(a.strip(), func, line, stmt), _reg(b.strip(), func, line, stmt))
    if t.startswith("!"):
        r = _reg(t[1:].strip(), func, line, stmt)
        return Reg(r.index, r.name, True)
    literal = parse_imm(t)
    if literal is not None:
        return literal
    if t in func.reg_index:  # registers need not start with '%'
        return Reg(func.reg_index[t], t)
    if t.startswith("%"):
        if t in func.reg_index or _range_reg(t, func) is not None:
            return _reg(t, func, line, stmt)
        if is_special(t):
            return Special(t)
        raise Refused(stmt, line, f"register {t} is not declared")
    sp = _sym_plus(t)
    if sp is not None:
        return Sym(*sp)
    raise Refused(stmt, line, f"an operand the emulator cannot read: {t}")


_SPECIALS = re.compile(
    r"%(tid|ntid|ctaid|nctaid|clusterid|nclusterid|cluster_ctaid|cluster_nctaid)(\.[xyz])?$|"
    r"%(laneid|warpid|nwarpid|smid|nsmid|gridid|clock|clock64|clock_hi|globaltimer|"
    r"globaltimer_lo|globaltimer_hi|lanemask_eq|lanemask_le|lanemask_lt|lanemask_ge|"
    r"lanemask_gt|dynamic_smem_size|total_smem_size|cluster_ctarank|cluster_nctarank|"
    r"is_explicit_cluster|aggr_smem_size|reserved_smem_offset_begin|reserved_smem_offset_end|"
    r"reserved_smem_offset_cap|current_graph_exec)$|%envreg\d+$|%pm\d+(_64)?$"
)


def is_special(name: str) -> bool:
    return bool(_SPECIALS.match(name))


def _range_reg(name: str, func: Function) -> int | None:
    return func.reg_index.get(name)


def _reg(name: str, func: Function, line: int, stmt: str) -> Reg:
    i = func.reg_index.get(name)
    if i is None:
        raise Refused(stmt, line, f"register {name} is not declared")
    return Reg(i, name)


# ---- functions


def _declare_regs(func: Function, decls) -> None:
    for d in decls:
        if d.kind != ".reg":
            continue
        bits = type_bits(d.type) or 32
        names = [d.name] if d.count is None else [f"{d.name}{i}" for i in range(d.count)]
        for nm in names:
            if nm not in func.reg_index:
                func.reg_index[nm] = len(func.regs)
                func.regs.append(RegInfo(nm, d.type, bits))


def _params(ptx_params) -> list[Param]:
    out, off = [], 0
    for p in ptx_params:
        bits = type_bits(p.type) or 8
        elem = max(1, bits // 8)
        count = 1
        for d in re.findall(r"\[\s*(\d+)\s*\]", p.array or ""):
            count *= int(d)
        size = elem * count
        align = p.align or elem
        off = (off + align - 1) // align * align
        out.append(Param(p.name, p.type, size, align, off))
        off += size
    return out


def decode(text: str) -> Program:
    """The whole module, decoded. Raises Refused for what cannot be read."""
    if not isinstance(text, str) or not text.strip():
        raise Refused("", None, "the PTX text is empty")
    # debug line directives end at the line's end, not at a ';': blanked (same length, lines
    # kept) so the statement after one is not swallowed into it
    clean = _LINE_INFO_RE.sub(lambda m: " " * len(m.group(0)), blank_comments(text))
    lines = _Lines(clean)
    mod, problems = parse_ptx(text)
    if problems:
        p = problems[0]
        raise Refused("", p.span.start.line + 1, p.message)
    if mod.version is None:
        raise Refused("", None, "not a PTX module: no .version directive")
    if mod.address_size not in (None, 64):
        raise Refused(".address_size", None, "only 64-bit addressing is emulated")
    program = Program({}, [], 64)
    regions = []
    for f in mod.functions:
        regions.append(f.offsets)
        if f.body is None:
            continue
        func = Function(
            f.name,
            f.is_entry,
            _params(f.params),
            _params(f.return_params),
            line=f.span.start.line + 1,
        )
        _declare_regs(func, f.decls)
        start = clean.find("{", f.offsets[0] + 1, f.offsets[1])
        name_off = clean.find(f.name, f.offsets[0])
        start = clean.find("{", name_off if name_off >= 0 else f.offsets[0], f.offsets[1])
        end = f.offsets[1] - 1
        if start < 0 or clean[end] != "}":
            raise Refused(f.name, func.line, "the function's body cannot be found")
        _decode_body(func, clean, start + 1, end, lines)
        if f.name in program.functions:
            raise Refused(f.name, func.line, "the function is defined twice")
        program.functions[f.name] = func
    # module-scope variables: statements outside every function
    cursor = 0
    for s, e in sorted(regions):
        _module_vars(program, clean, cursor, s, lines)
        cursor = max(cursor, e)
    _module_vars(program, clean, cursor, len(clean), lines)
    return program


def _module_vars(program: Program, clean: str, start: int, end: int, lines: _Lines) -> None:
    if end <= start:
        return
    for off, stmt in split_statements(clean, start, end):
        s = stmt.strip()
        lead = off + len(stmt) - len(stmt.lstrip())
        while s.startswith((".version", ".target", ".address_size")) and "\n" in s:
            rest = s[s.index("\n") :].lstrip()
            lead += len(s) - len(rest)
            s = rest
        if _VAR_RE.match(" ".join(s.split())):
            program.globals.extend(parse_var(s, lines.line(lead)))


def _decode_body(func: Function, clean: str, start: int, end: int, lines: _Lines) -> None:
    pending: list[tuple[str, int, str, int]] = []  # (opcode text, line, operands, offset)
    for off, stmt in split_statements(clean, start, end):
        s = stmt
        pos = 0
        while True:  # leading labels
            m = _LABEL_RE.match(s, pos)
            if not m or s[m.end() :].lstrip().startswith(":"):
                break
            func.labels[m.group(1)] = len(pending)
            pos = m.end()
        body = s[pos:].strip()
        if not body:
            continue
        line = lines.line(off + pos + (len(s[pos:]) - len(s[pos:].lstrip())))
        flat = " ".join(body.split())
        if flat.startswith("."):
            if _VAR_RE.match(flat):
                func.vars.extend(parse_var(flat, line))
            elif flat.startswith(_DECL_DIRECTIVES) or flat.startswith(".callprototype"):
                pass
            else:
                pass  # other directives carry no semantics the emulator needs
            continue
        pending.append((flat, line, body, off))
    for flat, line, _body, _off in pending:
        func.instrs.append(_instruction(func, len(func.instrs), flat, line))
    for ins in func.instrs:
        if ins.op in ("bra", "brx") and ins.operands and isinstance(ins.operands[0], Sym):
            name = ins.operands[0].name
            if name not in func.labels:
                raise Refused(ins.text, ins.line, f"branch to an unknown label {name}")
            ins.target = func.labels[name]


def _instruction(func: Function, index: int, flat: str, line: int) -> Instr:
    guard = None
    g = _GUARD_RE.match(flat)
    rest = flat
    if g:
        r = _reg(g.group(2), func, line, flat)
        guard = Reg(r.index, r.name, g.group(1) == "!")
        rest = flat[g.end() :]
    m = _OPCODE_RE.match(rest)
    if not m:
        raise Refused(flat, line, "an instruction the emulator cannot read")
    parts = m.group(1).split(".")
    ops_text = rest[m.end() :].strip()
    if parts[0] in OPAQUE:  # refused by opcode at load; their operands need no reading
        return Instr(index, line, flat, parts[0], tuple(parts[1:]), (), guard)
    operands = (
        tuple(parse_operand(x, func, line, flat) for x in split_top(ops_text)) if ops_text else ()
    )
    return Instr(index, line, flat, parts[0], tuple(parts[1:]), operands, guard)
