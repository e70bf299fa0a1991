"""Read a SASS listing: nvdisasm's (``-c -g -gp``) or cuobjdump's (``-sass``).

nvdisasm prints each function's code section with line comments before the instructions they
cover (a comment holds until the next one of its kind)::

    //--------------------- .text._Z4normPKfPfi       --------------------------
            .other          _Z4normPKfPfi,@"STO_CUDA_ENTRY STV_DEFAULT"
    _Z4normPKfPfi:
    .text._Z4normPKfPfi:
        //## File "/tmp/k.cu", line 9            <- -g: the .file/.loc line (source or PTX)
        //## File ".nv_debug_ptx_txt", line 77   <- -gp: the line of the PTX ptxas read
            /*0090*/               @P0 BRA `(.L_x_1) ;
    .L_x_2:

cuobjdump's listing has ``Function : NAME`` headers, hex encodings and no lines. Also read here:
``cuobjdump -res-usage`` (``Function NAME:`` / ``REG:14 STACK:0 SHARED:0 ...``).

Text in, dataclasses out; no IO; never raises on bad text (what it cannot read it skips).
"""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from dataclasses import dataclass, field

PTX_LINE_FILE = ".nv_debug_ptx_txt"  # the file name nvdisasm -gp gives PTX lines

_SECTION = re.compile(r"^\s*\.section\s+\.text\.([^,\s]+)")
_CUOBJDUMP_FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)")
_ENTRY_MARK = re.compile(r"^\s*\.other\s+([^,\s]+)\s*,.*STO_CUDA_ENTRY")
_LINE_COMMENT = re.compile(r'^\s*//##\s*File\s+"([^"]*)"\s*,\s*line\s+(\d+)')
_INSTRUCTION = re.compile(r"^\s*/\*([0-9a-fA-F]+)\*/\s*(.*?)\s*$")
_LABEL = re.compile(r"^\s*([.$\w][\w$.]*)\s*:\s*$")
_TARGET = re.compile(r"^\s*(?:\.target\s+|code for\s+)(sm_\w+)")
_PREDICATE = re.compile(r"^@!?U?P(?:T|\d+)$")
_RES_FUNCTION = re.compile(r"^\s*Function\s+([^\s:]+)\s*:\s*$")
_RES_FIELD = re.compile(r"([A-Z_]+(?:\[\d+\])?):(\d+)")

# SASS opcode (before the first '.') → the class a kernel engineer counts. Anything else: "other".
_CLASSES = {
    "memory": "LDG STG LDS STS LDL STL LD ST LDSM STSM ATOM ATOMG ATOMS RED REDG REDUX "
    "LDGSTS LDGDEPBAR UBLKCP UTMALDG UTMASTG UTMAPF UTMACCTL CCTL CCTLL MATCH SUATOM SULD SUST "
    "TEX TLD TLD4 TXQ",
    "constant": "LDC ULDC",
    "tensor": "HMMA IMMA BMMA DMMA HGMMA IGMMA QGMMA BGMMA WARPGROUP",
    "float": "FADD FMUL FFMA FMNMX FSETP FSET FSEL FCHK FRND MUFU HADD2 HMUL2 HFMA2 HMNMX2 "
    "HSETP2 HSET2 DADD DMUL DFMA DSETP DMNMX FSWZADD FADD32I FMUL32I FFMA32I",
    "integer": "IADD3 IADD IMAD IMUL ISETP ISET LOP3 LOP SHF SHL SHR LEA IABS IMNMX POPC FLO "
    "BREV BMSK SEL PRMT IDP IDP4A VIADD VIMNMX IADD32I LOP32I IMAD32I SGXT PLOP3 PSETP P2R R2P "
    "UIADD3 UIMAD ULOP3 USHF ULEA UISETP USEL UPRMT UPOPC UFLO UBREV USGXT UPLOP3 UPSETP",
    "conversion": "F2I I2F F2F I2I F2FP I2FP F2IP",
    "move": "MOV UMOV S2R S2UR CS2R R2UR SHFL IMOV MOV32I",
    "control": "BRA BRX JMP JMX CALL RET EXIT BSSY BSYNC BREAK KILL BPT JMXU ACQBULK "
    "ELECT PREEXIT RPCMOV",
    "sync": "BAR BARRIER MEMBAR DEPBAR WARPSYNC ERRBAR SYNCS FENCE ARRIVES VOTE VOTEU "
    "NANOSLEEP YIELD",
    "nop": "NOP",
}
OPCODE_CLASS = {op: cls for cls, ops in _CLASSES.items() for op in ops.split()}


@dataclass(frozen=True)
class SassInstruction:
    address: int
    opcode: str  # "IMAD.WIDE.U32"
    operands: str  # "R4, R11, 0x4, R4" (as printed, without the final ';')
    predicate: str = ""  # "@P0", "@!UP1" or ""
    ptx_line: int | None = None  # from -gp: the line of the PTX text ptxas assembled
    source_file: str | None = None  # from -g: the .file of the .loc (a .cu, a .py, a .ptx)
    source_line: int | None = None

    @property
    def base(self) -> str:
        return self.opcode.split(".", 1)[0]

    @property
    def op_class(self) -> str:
        return OPCODE_CLASS.get(self.base, "other")

    @property
    def text(self) -> str:
        pred = f"{self.predicate} " if self.predicate else ""
        return f"{pred}{self.opcode} {self.operands}".rstrip()


@dataclass
class SassFunction:
    name: str
    is_entry: bool = False
    instructions: list[SassInstruction] = field(default_factory=list)
    labels: dict[int, list[str]] = field(default_factory=dict)  # address → labels before it

    @property
    def instruction_count(self) -> int:
        """Instructions without the NOPs that pad the section to its alignment."""
        return sum(1 for i in self.instructions if i.base != "NOP")

    def class_counts(self) -> dict[str, int]:
        return dict(Counter(i.op_class for i in self.instructions if i.base != "NOP"))

    def opcode_counts(self) -> dict[str, int]:
        return dict(Counter(i.base for i in self.instructions if i.base != "NOP"))


@dataclass
class SassListing:
    arch: str = ""
    functions: list[SassFunction] = field(default_factory=list)

    def function(self, name: str) -> SassFunction | None:
        return next((f for f in self.functions if f.name == name), None)


@dataclass
class _LineState:
    ptx_line: int | None = None
    source_file: str | None = None
    source_line: int | None = None


def parse_sass(text: str) -> SassListing:
    """nvdisasm's or cuobjdump's listing → functions with their instructions and lines."""
    listing = SassListing()
    # a reader never fails on tool text: keep what was read up to the surprise
    with contextlib.suppress(Exception):
        _parse_into(text, listing)
    return listing


def _parse_into(text: str, listing: SassListing) -> None:
    current: SassFunction | None = None
    lines = _LineState()
    entries: set[str] = set()
    pending_labels: list[str] = []
    for raw in text.splitlines():
        header = _SECTION.match(raw) or _CUOBJDUMP_FUNCTION.match(raw)
        if header:
            current = SassFunction(header.group(1), is_entry=header.re is _CUOBJDUMP_FUNCTION)
            listing.functions.append(current)
            lines, pending_labels = _LineState(), []
            continue
        if not listing.arch and (m := _TARGET.match(raw)):
            listing.arch = m.group(1)
        if m := _ENTRY_MARK.match(raw):
            entries.add(m.group(1))
        if current is None:
            continue
        if m := _LINE_COMMENT.match(raw):
            _note_line(lines, m.group(1), int(m.group(2)))
        elif m := _INSTRUCTION.match(raw):
            instruction = _instruction(int(m.group(1), 16), m.group(2), lines)
            if instruction is not None:
                current.instructions.append(instruction)
                if pending_labels:
                    current.labels[instruction.address] = pending_labels
                    pending_labels = []
        elif m := _LABEL.match(raw):
            label = m.group(1)
            if label not in (current.name, f".text.{current.name}"):
                pending_labels.append(label)
    for function in listing.functions:
        function.is_entry = function.is_entry or function.name in entries


def _note_line(lines: _LineState, file: str, line: int) -> None:
    if file == PTX_LINE_FILE:
        lines.ptx_line = line
    else:
        lines.source_file, lines.source_line = file, line


def _instruction(address: int, body: str, lines: _LineState) -> SassInstruction | None:
    body = re.sub(r"/\*.*?\*/", "", body).strip()  # cuobjdump's encodings
    if body.startswith("{"):  # dual-issue pairs of old architectures: keep the first
        body = body[1:].strip()
    body = body.rstrip("}").strip().rstrip(";").strip()
    if not body:
        return None
    parts = body.split(None, 1)
    predicate = ""
    if _PREDICATE.match(parts[0]):
        predicate = parts[0]
        parts = parts[1].split(None, 1) if len(parts) > 1 else []
    if not parts:
        return None
    return SassInstruction(
        address=address,
        opcode=parts[0],
        operands=parts[1].strip() if len(parts) > 1 else "",
        predicate=predicate,
        ptx_line=lines.ptx_line,
        source_file=lines.source_file,
        source_line=lines.source_line,
    )


@dataclass(frozen=True)
class ResourceUsage:
    """One function's line of ``cuobjdump -res-usage``."""

    registers: int | None
    stack: int | None
    shared: int | None
    local: int | None


def parse_res_usage(text: str) -> dict[str, ResourceUsage]:
    """``cuobjdump -res-usage`` → {function name: usage}; nothing for text it cannot read."""
    usage: dict[str, ResourceUsage] = {}
    name: str | None = None
    for raw in text.splitlines():
        if m := _RES_FUNCTION.match(raw):
            name = m.group(1)
            continue
        fields = dict(_RES_FIELD.findall(raw))
        if name and "REG" in fields:
            usage[name] = ResourceUsage(
                registers=int(fields["REG"]),
                stack=_int(fields.get("STACK")),
                shared=_int(fields.get("SHARED")),
                local=_int(fields.get("LOCAL")),
            )
            name = None
    return usage


def _int(value: str | None) -> int | None:
    return int(value) if value is not None else None
