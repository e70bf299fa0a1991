"""Is a kernel complete? Answered from what its instructions do, not from what its comments say.

A model that "repairs" a kernel by writing ``// ... (unchanged index computation) ...`` in place
of fifteen instructions sends PTX that ptxas accepts: reading a register nothing wrote is legal.
This check reads each ``.entry`` the way a compiler's dataflow pass does and reports four facts,
each with its line:

- ``read-before-write``: a register read on some path from the entry before any instruction
  writes it (a must-be-written analysis over the control-flow graph built from the labels,
  branches, ``ret`` and ``exit``; loops reach a fixed point);
- ``stores-through-no-pointer``: the kernel has pointer parameters (a parameter whose value
  reaches an address: ``ld.param`` → ``cvta`` → address arithmetic → ``[...]``) and stores,
  atomically updates or hands to a call none of them: its results go nowhere;
- ``stores-nothing``: a kernel without a loop that has no store, atomic, reduction, copy or call
  at all: it has no effect;
- ``output-never-stored``: a parameter the caller says is an output (the GPU test's spec)
  that nothing stores through;
- ``param-never-loaded``: a pointer-sized ``.param`` the body never names (a scalar may be
  unneeded by design: a grid sized to the rows needs no row count).

No false alarms is the rule, so every doubt counts for the kernel: a predicated write counts as a
write (the kernel may read it under the same predicate, which this check does not follow); an
instruction this module does not know writes every register it names and reads none; a call
or an unknown instruction counts as a store through every pointer it sees; special registers
(``%tid.x`` …), parameters and anything not declared by a ``.reg`` are never "unwritten".
Triton's ABI scratch parameters (trailing ``.ptr .global .align 1`` parameters named
``<entry>_param_<i>`` that its kernels do not use) are not reported as never loaded.

Plain Python over ``frontend/ptx.py``'s reader (its comment blanking and statement splitter)
and the control-flow graph of ``ptx_cfg.py``,
no other room, never raises on bad input (a module it cannot read has no findings).
``tests/test_ptx_dataflow.py`` runs it on the library kernels, nvcc's and Triton's PTX (no
finding) and on planted incomplete kernels (each found).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from .ptx import Decl, PtxFunction, PtxModule, _statements, blank_comments, parse_ptx
from .ptx_cfg import Block, Instr, basic_blocks, may_reach, reachable


@dataclass(frozen=True)
class Finding:
    """One fact about an entry, on a 0-based ``line`` (``col``..``end_col`` of that line)."""

    kind: str  # read-before-write, stores-through-no-pointer, stores-nothing, param-never-loaded
    entry: str
    line: int
    col: int
    end_col: int
    message: str
    name: str = ""  # the register or parameter concerned

    def shown(self) -> str:
        return f"line {self.line + 1}: {self.message}"


# ---- instructions


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Opcodes (the part before the first '.') whose operands are all read: no register is written.
_NO_DEST = _words(
    "st red bra brx ret exit trap brkpt membar fence prefetch prefetchu nanosleep stmatrix "
    "pmevent sust sured cp griddepcontrol setmaxnreg discard applypriority st.async "
    "wgmma.fence tensormap"
)
# Opcodes known to write their first operand (a register, a vector ``{...}`` or ``%p|%q``) and
# read the rest. Anything not here and not in _NO_DEST is an instruction this check does not
# know: every register it names counts as written, none as read.
_DEST_FIRST = _words(
    "add sub mul mad mul24 mad24 sad div rem abs neg min max popc clz bfind fns brev bfe bfi "
    "szext bmsk dp4a dp2a and or xor not cnot lop3 shf shl shr prmt copysign fma rcp sqrt "
    "rsqrt sin cos lg2 ex2 tanh testp setp set selp slct mov cvt cvta ld ldu atom tex tld4 "
    "suld suq txq istypep shfl vote match activemask redux mapa getctarank isspacep ldmatrix "
    "movmatrix mma wmma wgmma mbarrier elect createpolicy alloca addc subc madc stacksave "
    "bar barrier multimem"
)
# Instructions that change memory (or may, through what they are handed).
_STORES = _words("st red atom cp stmatrix sust sured multimem tensormap call wmma tcgen05 st.async")

_REG = re.compile(r"%[A-Za-z_$][\w$]*")
_SYMBOL = re.compile(r"(?<![\w$%.])[A-Za-z_$][\w$]*")
_LABEL_AT_START = re.compile(r"\s*([A-Za-z_$][\w$]*)\s*:(?!:)")
_LOC_LINES = re.compile(r"(?m)^[ \t]*\.(?:loc|file)\b[^\n]*")
_LINE_DIRECTIVE = re.compile(r"\s*\.(?:loc|file)\b[^\n]*")
_GUARD = re.compile(r"\s*@\s*(!?)\s*(%[A-Za-z_$][\w$]*)\s*")
_OPCODE = re.compile(r"\s*([A-Za-z_][\w.:]*)")


def _split_operands(text: str) -> list[tuple[str, int]]:
    """Top-level comma-separated operands with their offset in ``text``."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "[{(":
            depth += 1
        elif c in "]})":
            depth = max(0, depth - 1)
        elif c == "," and depth == 0:
            parts.append((text[start:i], start))
            start = i + 1
    if text[start:].strip():
        parts.append((text[start:], start))
    return parts


class _Lines:
    def __init__(self, text: str) -> None:
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def at(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.starts, offset) - 1
        return line, offset - self.starts[line]


class _Registers:
    """The names ``.reg`` declares in the function and at module scope."""

    def __init__(self, decls: list[Decl]) -> None:
        self.names = {d.name for d in decls if d.kind == ".reg" and d.count is None}
        self.ranges = [d for d in decls if d.kind == ".reg" and d.count is not None]
        self._cache: dict[str, bool] = {}

    def declared(self, name: str) -> bool:
        hit = self._cache.get(name)
        if hit is None:
            hit = name in self.names or any(d.declares(name) for d in self.ranges)
            self._cache[name] = hit
        return hit


def _instruction(
    stmt: str, at: int, lines: _Lines, regs: _Registers
) -> tuple[list[str], Instr | None]:
    """(labels defined at the start of the statement, the instruction or None)."""
    labels = []
    pos = 0
    while m := _LABEL_AT_START.match(stmt, pos):
        labels.append(m.group(1))
        pos = m.end()
    while m := _LINE_DIRECTIVE.match(stmt, pos):  # .loc/.file lines carry no ';'
        pos = m.end()
        while m := _LABEL_AT_START.match(stmt, pos):
            labels.append(m.group(1))
            pos = m.end()
    rest = stmt[pos:]
    if not rest.strip() or rest.lstrip().startswith("."):
        return labels, None  # a declaration or directive
    guarded = False
    reads: list[tuple[str, int]] = []
    g = _GUARD.match(rest)
    offset = pos
    if g:
        guarded = True
        reads.append((g.group(2), at + offset + g.start(2)))
        offset += g.end()
        rest = rest[g.end() :]
    m = _OPCODE.match(rest)
    if not m:
        return labels, None
    opcode = m.group(1)
    base = opcode.split(".", 1)[0]
    two = ".".join(opcode.split(".")[:2])
    operand_text = rest[m.end() :]
    op_at = offset + m.end()
    line, col = lines.at(at + offset + m.start(1))
    ins = Instr(line, col, opcode, base, guarded, [], reads, [], [])
    operands = _split_operands(operand_text)
    for text, _ in operands:
        s = text.strip()
        if s.startswith("["):
            ins.addresses.append(s)
        for sm in _SYMBOL.finditer(text):
            ins.symbols.append(sm.group(0))
    if base in ("bra", "brx"):
        ins.targets = [s for t, _ in operands for s in _SYMBOL.findall(t)]
    if base in ("ret", "exit", "trap") and not guarded:
        ins.ends = True

    def regs_in(text: str, o: int) -> list[tuple[str, int]]:
        return [
            (r.group(0), at + op_at + o + r.start())
            for r in _REG.finditer(text)
            if regs.declared(r.group(0))
        ]

    if base == "call":
        # call (ret), func, (args): registers in the first parentheses are written
        groups = [(t, o) for t, o in operands]
        if groups and groups[0][0].strip().startswith("("):
            ins.writes = [r for r, _ in regs_in(*groups[0])]
            groups = groups[1:]
        for t, o in groups:
            ins.reads.extend(regs_in(t, o))
        return labels, ins
    known_no_dest = base in _NO_DEST or two in _NO_DEST
    if base in ("bar", "barrier") and ".red" not in opcode:
        known_no_dest = True
    if base == "multimem" and "ld_reduce" not in opcode:
        known_no_dest = True
    if not known_no_dest and base not in _DEST_FIRST:
        ins.unknown = True
        ins.writes = [r for t, o in operands for r, _ in regs_in(t, o)]
        return labels, ins
    for k, (t, o) in enumerate(operands):
        found = regs_in(t, o)
        if k == 0 and not known_no_dest and not t.strip().startswith("["):
            ins.writes = [r for r, _ in found]
        else:
            ins.reads.extend(found)
    return labels, ins


# ---- the four facts (over the blocks of ptx_cfg.py)


def _reads_before_writes(entry: str, blocks: list[Block], lines: _Lines) -> list[Finding]:
    """Reads that no write reaches on any path from the start (a may-be-written analysis: the
    union over predecessors), in reachable blocks. Path conditions are not followed, so only
    what holds on every path is said: such a read sees a register nothing wrote."""
    names: dict[str, int] = {}
    gen = []
    for b in blocks:
        g = 0
        for ins in b.instrs:
            for r in ins.writes:
                g |= 1 << names.setdefault(r, len(names))
        gen.append(g)
    into = may_reach(blocks, gen)
    findings: dict[str, Finding] = {}
    for i, (b, live) in enumerate(zip(blocks, reachable(blocks), strict=True)):
        if not live:
            continue
        written = into[i]
        for ins in b.instrs:
            for r, at in ins.reads:
                bit = names.get(r)
                if (bit is None or not written >> bit & 1) and r not in findings:
                    line, col = lines.at(at)
                    findings[r] = Finding(
                        "read-before-write",
                        entry,
                        line,
                        col,
                        col + len(r),
                        f"'{ins.opcode}' reads {r}, which no instruction writes before it on any "
                        "path from the start of the kernel: the code that computes it is missing",
                        r,
                    )
            for r in ins.writes:
                written |= 1 << names[r]
    return sorted(findings.values(), key=lambda f: (f.line, f.col))


def _pointer_facts(func: PtxFunction, instrs: list[Instr]) -> tuple[set[str], set[str]]:
    """(parameters whose value reaches an address, parameters stored through or handed on)."""
    params = {p.name for p in func.params}
    taint: dict[str, set[str]] = {}

    def of(names: list[str], symbols: list[str]) -> set[str]:
        s = {p for p in symbols if p in params}
        for r in names:
            s |= taint.get(r, set())
        return s

    changed = True
    while changed:  # flow-insensitive: a register carries every parameter that reaches it
        changed = False
        for ins in instrs:
            if not ins.writes:
                continue
            came = of([r for r, _ in ins.reads], ins.symbols)
            if not came:
                continue
            for r in ins.writes:
                have = taint.setdefault(r, set())
                if not came <= have:
                    have |= came
                    changed = True
    pointers: set[str] = set()
    stored: set[str] = set()
    for ins in instrs:
        for a in ins.addresses:
            inside = of(_REG.findall(a), _SYMBOL.findall(a))
            if ins.base == "ld" and ".param" in ins.opcode:
                continue  # reading the parameter itself
            pointers |= inside
        if ins.base in _STORES or ins.unknown:
            # everything it names may be written through (an address) or handed on (a value)
            stored |= of([r for r, _ in ins.reads] + ins.writes, ins.symbols)
    return pointers, stored


def _triton_scratch(func: PtxFunction, unused: set[str]) -> set[str]:
    """Triton's trailing ABI scratch parameters (global/profile scratch), when unused."""
    out: set[str] = set()
    for k in range(len(func.params) - 1, -1, -1):
        p = func.params[k]
        if (
            p.name in unused
            and p.name == f"{func.name}_param_{k}"
            and p.state_space_hint == ".global"
            and p.align == 1
        ):
            out.add(p.name)
        else:
            break
    return out


def _entry_findings(
    text: str,
    clean: str,
    lines: _Lines,
    mod: PtxModule,
    func: PtxFunction,
    outputs: tuple[int, ...] = (),
) -> list[Finding]:
    start, end = func.offsets
    body_start = clean.find("{", start, end)
    if body_start < 0:
        return []
    regs = _Registers(func.decls + mod.globals)
    items = []
    for at, stmt in _statements(clean, body_start + 1, end - 1):
        labels, ins = _instruction(stmt, at, lines, regs)
        if labels or ins is not None:
            items.append((labels, ins))
    instrs = [ins for _, ins in items if ins is not None]
    if not instrs:
        return []
    blocks, has_loop = basic_blocks(items)
    found = _reads_before_writes(func.name, blocks, lines)
    name_line, name_col = func.name_span.start
    name_end = func.name_span.end.col
    pointers, stored = _pointer_facts(func, instrs)
    for k in outputs:  # the caller knows which parameters are outputs (the test's spec)
        if 0 <= k < len(func.params) and func.params[k].name not in stored:
            p = func.params[k]
            found.append(
                Finding(
                    "output-never-stored",
                    func.name,
                    p.span.start.line,
                    p.span.start.col,
                    p.span.end.col,
                    f"output parameter '{p.name}' of '{func.name}' is never "
                    "stored through: the code that writes it is missing",
                    p.name,
                )  # fmt: skip
            )
    if pointers and not (pointers & stored):
        names = ", ".join(p.name for p in func.params if p.name in pointers)
        found.append(
            Finding(
                "stores-through-no-pointer",
                func.name,
                name_line,
                name_col,
                name_end,
                f"'{func.name}' stores through none of its pointer parameters ({names}): "
                "its results go nowhere",
                names,
            )  # fmt: skip
        )
    if not has_loop and not any(i.base in _STORES or i.unknown for i in instrs):
        found.append(
            Finding(
                "stores-nothing",
                func.name,
                name_line,
                name_col,
                name_end,
                f"'{func.name}' has no loop and no store, atomic or call: it has no effect",
            )  # fmt: skip
        )
    used = {s for i in instrs for s in i.symbols}
    unused = {p.name for p in func.params} - used
    unused -= _triton_scratch(func, unused)
    for p in func.params:
        # a scalar may be unneeded by design (a grid sized to the rows needs no row count);
        # an address never loaded is an array the kernel never touches
        if p.name in unused and (p.type in (".u64", ".b64", ".s64") or p.state_space_hint):
            ln, col = p.span.start
            found.append(
                Finding(
                    "param-never-loaded",
                    func.name,
                    ln,
                    col,
                    p.span.end.col,
                    f"parameter '{p.name}' of '{func.name}' is never loaded",
                    p.name,
                )  # fmt: skip
            )
    return found


def check_dataflow(
    text: str,
    module: PtxModule | None = None,
    entry: str | None = None,
    max_lines: int | None = None,
    outputs: tuple[int, ...] = (),
) -> list[Finding]:
    """The findings of every ``.entry`` (or only ``entry``) of a PTX text, in line order.
    ``outputs``: positions of parameters that must be stored through (the GPU test's ``out``
    parameters, where the caller knows them). ``max_lines``: entries longer than this many lines are skipped (the editor's lints ask
    for it: about 0.1 ms a line, so a 24,000-line unrolled kernel would cost seconds on
    every edit). Never raises: a text it cannot read gives no finding."""
    try:
        if module is None:
            module, _ = parse_ptx(text)
        # .loc/.file lines end without a ';': blanked, so a '{' after one opens a block
        clean = _LOC_LINES.sub(lambda m: " " * len(m.group(0)), blank_comments(text))
        lines = _Lines(clean)
        found: list[Finding] = []
        for func in module.entries:
            if func.body is None or (entry and func.name != entry):
                continue
            if max_lines is not None and func.span.end.line - func.span.start.line > max_lines:
                continue
            found.extend(_entry_findings(text, clean, lines, module, func, outputs))
        return sorted(found, key=lambda f: (f.line, f.col))
    except (RecursionError, ValueError, IndexError):  # a text too odd to read: say nothing
        return []
