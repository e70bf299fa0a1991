"""The one PTX reader: module directives, functions, parameters, registers, labels, uses.

Every room reads PTX through it: the lints and the check engine, navigation (ptx_index), the GPU
tests (entries and their parameter types), the lowering loop (interface checks, nvcc's output).
It never raises on bad input: whatever it cannot make sense of is skipped, and structural
problems it is certain of (unbalanced braces) come back as data in
``PtxModule.structure_problems``.

What it returns (``PtxModule`` and the rest, with their positions) is ``ptx_model.py``.
Positions are 0-based (line, column) in the original text. Comments and string literals are
blanked out first, keeping every other character where it was, so positions stay exact.

Why this file is long: it is the one reader, and its parts share one blanked text and its
private scanners (the header, a parameter list's fields, the statement splitter, a body's
declarations and uses). What it returns is already apart (``ptx_model.py``); what other rooms
ask without a full parse (``find_entries``, ``scan_header``) reuses those scanners, so it sits
beside them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from .ptx_model import (
    Decl,
    Pos,
    PtxFunction,
    PtxModule,
    PtxParam,
    ShiftedPositions,
    Span,
    StructureProblem,
    TextPositions,
    Use,
    line_starts,
)

# The reader's API; its result types (ptx_model.py) are importable from here too.
__all__ = [
    "Decl",
    "IDENT",
    "Pos",
    "PtxEntry",
    "PtxFunction",
    "PtxModule",
    "PtxParam",
    "Span",
    "StructureProblem",
    "Use",
    "blank_comments",
    "entries_of",
    "find_entries",
    "global_names",
    "is_special_register",
    "line_starts",
    "module_globals",
    "parse_ptx",
    "provenance_source",
    "ptx_target",
    "ptx_version",
    "scan_header",
    "split_statements",
    "with_version",
]

IDENT = r"[A-Za-z_$%][\w$]*"
_IDENT_RE = re.compile(IDENT)


_BLANK_RE = re.compile(r'//[^\n]*|/\*.*?(?:\*/|\Z)|"(?:[^"\\\n]|\\.)*"?', re.DOTALL)

# The last text blanked and its blanked form: the parse and the lints of one check ask for the
# same text's (a tuple, replaced whole, so threads read a consistent pair).
_last_blanked: tuple[str, str] = ("", "")


def _spaces(s: str) -> str:
    """``s`` with every character but newlines a space. (re.sub(r"[^\\n]", " ", s) made one
    replacement per character under the GIL: 0.4 s for a 5 MB comment, every hover waiting.)"""
    return "\n".join(" " * len(line) for line in s.split("\n"))


def blank_comments(text: str) -> str:
    """PTX comments and string contents replaced by spaces (quotes and newlines kept), same
    length (C text: ``cuda.blank_comments_and_literals``)."""
    global _last_blanked
    last = _last_blanked
    if last[0] is text:
        return last[1]

    def repl(m: re.Match[str]) -> str:
        s = m.group(0)
        if s.startswith('"'):
            return '"' + _spaces(s[1:-1]) + ('"' if len(s) > 1 else "")
        return _spaces(s)

    clean = _BLANK_RE.sub(repl, text)
    _last_blanked = (text, clean)
    return clean


_VERSION_RE = re.compile(r"(?m)^\s*\.version\s+(\d+)\.(\d+)")
_TARGET_RE = re.compile(r"(?m)^\s*\.target\s+([^\n;]*)")
_ADDR_RE = re.compile(r"(?m)^\s*\.address_size\s+(\d+)")
_FUNC_RE = re.compile(r"\.(entry|func)\b")
_DECL_RE = re.compile(r"^\s*\.(reg|local|shared|param|const|global)\b([^;]*)$", re.DOTALL)
# The body's passes lead with a literal ('\n', 'bra', '.') so that the regex engine jumps
# from one candidate to the next (a leading \b, lookbehind or ^ makes it try every offset: 4-40x
# slower on a 24k-line kernel); the lookbehind after the literal says what \b / ^ said.
# a label starts a line; a body never starts at a line's start (it follows its '{')
_LABEL_RE = re.compile(r"\n[ \t]*([A-Za-z_$][\w$]*)[ \t]*:(?!:)")
_BRANCH_RE = re.compile(r"bra(?<!\wbra)(?:\.uni)?\s+([A-Za-z_$][\w$]*)\s*;")
_REG_USE_RE = re.compile(r"%[A-Za-z_$][\w$]*")
_DIRECTIVE_RE = re.compile(
    r"\.(maxntid|reqntid|minnctapersm|maxnreg|maxclusterrank|reqnctapercluster|explicitcluster)"
    r"\b([^.{;]*)"
)


def scan_header(text: str) -> tuple[tuple[int, int] | None, str | None]:
    """(.version, sm_XX of .target) from a quick look at the text, without a full parse, so
    ptxas can start before the parse is done."""
    version = target = None
    m = _VERSION_RE.search(text)
    if m:
        version = (int(m.group(1)), int(m.group(2)))
    m = _TARGET_RE.search(text)
    if m:
        target = next(
            (t.strip() for t in m.group(1).split(",") if t.strip().startswith("sm_")), None
        )
    return version, target


def parse_ptx(text: str, *, bodies: bool = True) -> tuple[PtxModule, list[StructureProblem]]:
    """Parse a PTX module. Never raises; returns the module and the structural problems.

    ``bodies=False`` reads the directives and each function's header (name, parameters,
    performance directives) only: what a caller of the kernels needs, several times faster on
    a file of thousands of kernels."""
    clean = blank_comments(text)
    t = TextPositions(clean)
    mod = PtxModule()

    m = _VERSION_RE.search(clean)
    if m:
        mod.version = (int(m.group(1)), int(m.group(2)))
        mod.version_span = t.span(m.start(1), m.end(2))
    m = _TARGET_RE.search(clean)
    if m:
        mod.targets = [x.strip() for x in m.group(1).split(",") if x.strip()]
        mod.target_span = t.span(m.start(1), m.start(1) + len(m.group(1).rstrip()))
    m = _ADDR_RE.search(clean)
    if m:
        mod.address_size = int(m.group(1))

    if bodies:
        _check_braces(clean, t, mod)

    pos = 0
    body_offsets: list[tuple[int, int]] = []
    while True:
        m = _FUNC_RE.search(clean, pos)
        if not m:
            break
        func, end = _parse_function(clean, t, m, bodies)
        pos = max(end, m.end())
        if func is not None:
            mod.functions.append(func)
            if func.body is not None:
                body_offsets.append((m.start(), end))
    if bodies:
        _parse_module_decls(clean, t, mod, body_offsets)
    return mod, mod.structure_problems


def _check_braces(clean: str, t: TextPositions, mod: PtxModule) -> None:
    stack: list[int] = []
    for m in re.finditer(r"[{}]", clean):
        i, ch = m.start(), m.group(0)
        if ch == "{":
            stack.append(i)
        elif ch == "}":
            if stack:
                stack.pop()
            else:
                mod.structure_problems.append(
                    StructureProblem("'}' without a matching '{'", t.span(i, i + 1))
                )
    for i in stack:
        mod.structure_problems.append(
            StructureProblem("'{' is never closed: missing '}'", t.span(i, i + 1))
        )


_BRACKETS = {("(", ")"): re.compile(r"[()]"), ("{", "}"): re.compile(r"[{}]")}
_NAME_RE = re.compile(r"[\w$%]+")
_STATE_SPACES = (".global", ".shared", ".const")


def _matching(clean: str, open_at: int, open_ch: str, close_ch: str) -> int:
    """Offset just past the bracket that closes the one at ``open_at`` (or len(clean))."""
    depth = 0
    for m in _BRACKETS[open_ch, close_ch].finditer(clean, open_at):
        if m.group(0) == open_ch:
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return m.end()
    return len(clean)


class _ParamFields(NamedTuple):
    name: str
    type: str
    state_space_hint: str
    align: int | None
    array: str
    at: int  # offset of the name


def _param_fields(clean: str, start: int, end: int) -> list[_ParamFields]:
    """``.param .align 8 .b8 s[16], .param .u64 .ptr .global p`` → one entry each: the name is the
    last word without a dot, the type the first dotted word that is not a space or hint."""
    fields = []
    offset = start
    for piece in clean[start:end].split(","):
        words = piece.split()
        at, raw, cursor = -1, "", 0
        for w in words:
            cursor = piece.find(w, cursor)
            if not w.startswith("."):
                at, raw = cursor, w
            cursor += len(w)
        name = _NAME_RE.match(raw) if raw else None
        if name:
            align = None
            if ".align" in words:
                idx = words.index(".align")
                if idx + 1 < len(words) and words[idx + 1].isdigit():
                    align = int(words[idx + 1])
            dotted = [w for w in words if w.startswith(".")]
            ptx_type = next(
                (w for w in dotted if w not in (".param", ".align", ".ptr", *_STATE_SPACES)), ""
            )
            hint = " ".join(w for w in dotted if w in _STATE_SPACES)
            fields.append(
                _ParamFields(name.group(0), ptx_type, hint, align, raw[name.end() :], offset + at)
            )
        offset += len(piece) + 1
    return fields


def _parse_params(clean: str, t: TextPositions, start: int, end: int) -> list[PtxParam]:
    return [
        PtxParam(
            name=f.name,
            type=f.type,
            span=t.span(f.at, f.at + len(f.name)),
            state_space_hint=f.state_space_hint,
            align=f.align,
            array=f.array,
        )
        for f in _param_fields(clean, start, end)
    ]


class _Header(NamedTuple):
    """Offsets of one ``.entry``/``.func`` header, from the directive to the body or ';'."""

    is_entry: bool
    name_start: int
    name_end: int
    returns: tuple[int, int] | None  # inside the return-value parentheses (.func only)
    params: tuple[int, int] | None  # inside the parameter parentheses
    header_end: int  # the '{' or ';' (or the end of the text)
    body_end: int | None  # just past the closing '}'; None for a prototype


def _skip_space(clean: str, i: int) -> int:
    n = len(clean)
    while i < n and clean[i].isspace():
        i += 1
    return i


def _read_header(clean: str, m: re.Match[str]) -> tuple[_Header | None, int]:
    """The header that starts at ``m`` (a ``.entry``/``.func`` match) and the offset to go on
    from; None when no name follows."""
    is_entry = m.group(1) == "entry"
    n = len(clean)
    i = _skip_space(clean, m.end())
    returns = None
    if not is_entry and i < n and clean[i] == "(":
        close = _matching(clean, i, "(", ")")
        returns = (i + 1, close - 1)
        i = _skip_space(clean, close)
    name_m = _IDENT_RE.match(clean, i)
    if not name_m:
        return None, i
    i = _skip_space(clean, name_m.end())
    params = None
    if i < n and clean[i] == "(":
        close = _matching(clean, i, "(", ")")
        params = (i + 1, close - 1)
        i = close
    # Performance directives, then the body or a ';' (a prototype / .extern declaration).
    j = i
    while j < n and clean[j] not in "{;":
        j += 1
    body_end = _matching(clean, j, "{", "}") if j < n and clean[j] == "{" else None
    header = _Header(is_entry, name_m.start(), name_m.end(), returns, params, j, body_end)
    return header, (body_end if body_end is not None else j + 1)


def _parse_function(
    clean: str, t: TextPositions, m: re.Match[str], bodies: bool = True
) -> tuple[PtxFunction | None, int]:
    h, resume = _read_header(clean, m)
    if h is None:
        return None, resume
    end = h.header_end if h.body_end is None else h.body_end
    func = PtxFunction(
        name=clean[h.name_start : h.name_end],
        is_entry=h.is_entry,
        span=t.span(m.start(), end),
        name_span=t.span(h.name_start, h.name_end),
        params=_parse_params(clean, t, *h.params) if h.params else [],
        return_params=_parse_params(clean, t, *h.returns) if h.returns else [],
        offsets=(m.start(), end),
    )
    tail_start = h.params[1] + 1 if h.params else h.name_end
    for d in _DIRECTIVE_RE.finditer(clean, tail_start, h.header_end):
        func.directives[d.group(1)] = " ".join(d.group(2).split())
    if h.body_end is not None:
        func.body = t.span(h.header_end, h.body_end)
        if bodies:
            _parse_body(clean, t, h.header_end + 1, h.body_end - 1, func)
    return func, resume


def _statements(clean: str, start: int, end: int) -> Iterator[tuple[int, str]]:
    """(offset, text) of each statement between start and end, split at ';', '{' and '}'.

    Vector operands ``{%r1, %r2}`` sit inside an instruction, so a '{' that follows an operand
    separator is not a block; a block '{' starts a statement."""
    stmt_start = start
    i = start
    depth_vec = 0
    while i < end:
        c = clean[i]
        if c == "{":
            before = clean[stmt_start:i].strip()
            if before and not before.endswith(":"):
                depth_vec += 1
            else:
                if before:
                    yield stmt_start, clean[stmt_start:i]
                stmt_start = i + 1
        elif c == "}":
            if depth_vec:
                depth_vec -= 1
            else:
                if clean[stmt_start:i].strip():
                    yield stmt_start, clean[stmt_start:i]
                stmt_start = i + 1
        elif c == ";" and not depth_vec:
            yield stmt_start, clean[stmt_start:i]
            stmt_start = i + 1
        i += 1
    if clean[stmt_start:end].strip():
        yield stmt_start, clean[stmt_start:end]


def split_statements(
    clean: str, start: int = 0, end: int | None = None
) -> Iterator[tuple[int, str]]:
    """(offset, text) of each statement of a comment-blanked text (see ``blank_comments``)
    between start and end: split at ';' and at block braces, vector operands kept whole. The
    emulator decodes function bodies with it."""
    return _statements(clean, start, len(clean) if end is None else end)


def _parse_decl(stmt: str, offset: int, t: TextPositions, kind: str) -> list[Decl]:
    """Declared names of a ``.reg .b32 %r<5>, %x;`` style statement."""
    decls = []
    # Names are the words that do not start with '.', after the type/space words.
    body = stmt
    # Drop initializers ("= {1, 2}") and array sizes for the name scan.
    eq = body.find("=")
    if eq >= 0:
        body = body[:eq]
    types = [w for w in re.findall(r"\.\w+", body) if w[1:] not in ("reg", kind)]
    for nm in re.finditer(r"(?<![\w.$%])([%A-Za-z_$][\w$]*)\s*(?:<\s*(\d+)\s*>)?", body):
        word = nm.group(1)
        # skip the numbers of ".align 8" and type words
        if word.startswith(".") or (nm.start() > 0 and body[nm.start() - 1] == "."):
            continue
        s = offset + nm.start(1)
        decls.append(
            Decl(
                name=word,
                kind="." + kind,
                type=next((x for x in types if x not in (".align", ".v2", ".v4", ".v8")), ""),
                span=t.span(s, s + len(word)),
                count=int(nm.group(2)) if nm.group(2) else None,
            )
        )
    return decls


_BODY_DECL_RE = re.compile(r"\.(?<![\w.$%]\.)(reg|local|shared|param|const|global)\b[^;{}]*")
_BODY_DIRECTIVE_RE = re.compile(
    r"\.(?<![\w.$%]\.)(?:pragma|loc|file|branchtargets|calltargets|callprototype|section)\b[^;{}]*"
)
_SYMBOL_USE_RE = re.compile(r"\[\s*([A-Za-z_$][\w$]*)")


def _parse_body(clean: str, t: TextPositions, start: int, end: int, func: PtxFunction) -> None:
    """Whole-body regex passes (C speed) rather than a Python loop per statement: a 24k-line
    nvcc kernel parses in tens of milliseconds."""
    for lm in _LABEL_RE.finditer(clean, start, end):
        func.labels.setdefault(lm.group(1), t.span(lm.start(1), lm.end(1)))
    # Declaration and directive statements have no uses inside: blanked (same length, so the
    # offsets hold) in a copy of the body, and the use passes run over that copy.
    skip: list[tuple[int, int]] = []
    for dm in _BODY_DECL_RE.finditer(clean, start, end):
        func.decls.extend(_parse_decl(dm.group(0), dm.start(), t, dm.group(1)))
        skip.append((dm.start(), dm.end()))
    for dm in _BODY_DIRECTIVE_RE.finditer(clean, start, end):
        skip.append((dm.start(), dm.end()))
    body = _blanked(clean, start, end, skip)  # offsets in it are from ``start``
    at = ShiftedPositions(t, start)
    func.register_uses.extend(
        [Use(m.group(), None, at, m.span()) for m in _REG_USE_RE.finditer(body)]
    )
    for bm in _BRANCH_RE.finditer(clean, start, end):
        func.branch_targets.append(Use(bm.group(1), t.span(bm.start(1), bm.end(1))))
    for sm in _SYMBOL_USE_RE.finditer(body):
        func.symbol_uses.append(Use(sm.group(1), None, at, sm.span(1)))


def _blanked(clean: str, start: int, end: int, skip: list[tuple[int, int]]) -> str:
    """``clean[start:end]`` with the ``skip`` ranges (absolute offsets, may overlap) as spaces:
    the same length, so offsets hold (a copy of the body costs far less than a check per use)."""
    pieces: list[str] = []
    cursor = start
    for a, b in sorted(skip):
        if b <= cursor:
            continue
        a = max(a, cursor)
        pieces.append(clean[cursor:a])
        pieces.append(" " * (b - a))
        cursor = b
    pieces.append(clean[cursor:end])
    return "".join(pieces)


_LINE_DIRECTIVES = (".version", ".target", ".address_size")


def _parse_module_decls(
    clean: str, t: TextPositions, mod: PtxModule, bodies: list[tuple[int, int]]
) -> None:
    """Module-scope variables (.global/.shared/.const) outside every function."""
    cursor = 0
    outside: list[tuple[int, int]] = []
    for s, e in sorted(bodies):
        if s > cursor:
            outside.append((cursor, s))
        cursor = max(cursor, e)
    outside.append((cursor, len(clean)))
    for s, e in outside:
        for off, stmt in _statements(clean, s, e):
            stripped = stmt.lstrip()
            lead = off + (len(stmt) - len(stripped))
            # .version/.target/.address_size end at their line, not at a ';'
            while stripped.startswith(_LINE_DIRECTIVES) and "\n" in stripped:
                rest = stripped[stripped.index("\n") :].lstrip()
                lead += len(stripped) - len(rest)
                stripped = rest
            extern = False
            for prefix in (".visible ", ".extern ", ".weak ", ".common "):
                if stripped.startswith(prefix):
                    extern = extern or prefix == ".extern "
                    lead += len(prefix)
                    stripped = stripped[len(prefix) :].lstrip()
            dm = _DECL_RE.match(stripped)
            if dm and dm.group(1) in ("global", "shared", "const", "reg"):
                decls = _parse_decl(stripped, lead, t, dm.group(1))
                for d in decls:
                    d.extern = extern
                mod.globals.extend(decls)


# ---- what the other rooms ask of a PTX text, answered from the one parse


@dataclass(slots=True)
class PtxEntry:
    """A kernel (``.entry``) as a caller of it sees it: where its name is and what it takes."""

    name: str
    line: int  # 0-based line of the name
    col: int
    decl_line: int  # line of the .entry directive (annotations sit above it)
    param_types: tuple[str, ...]  # ".u64", ".u32", ".b8" (a byte array for a struct) …
    param_names: tuple[str, ...]


def entries_of(module: PtxModule) -> list[PtxEntry]:
    return [
        PtxEntry(
            f.name,
            f.name_span.start.line,
            f.name_span.start.col,
            f.span.start.line,
            tuple(p.type for p in f.params),
            tuple(p.name for p in f.params),
        )
        for f in module.entries
    ]


def find_entries(text: str) -> list[PtxEntry]:
    """The kernels of a PTX text, in file order (code lenses, GPU tests, the VS Code client).

    The same header reading as ``parse_ptx``, without building the module: a file of 20,000
    kernels is read in a fraction of a second."""
    clean = blank_comments(text)
    t = TextPositions(clean)
    found = []
    pos = 0
    while m := _FUNC_RE.search(clean, pos):
        h, resume = _read_header(clean, m)
        pos = max(resume, m.end())
        if h is None or not h.is_entry:
            continue
        name = t.pos(h.name_start)
        fields = _param_fields(clean, *h.params) if h.params else []
        found.append(
            PtxEntry(
                clean[h.name_start : h.name_end],
                name.line,
                name.col,
                t.pos(m.start()).line,
                tuple(f.type for f in fields),
                tuple(f.name for f in fields),
            )
        )
    return found


def ptx_version(text: str) -> tuple[int, int] | None:
    """The ``.version`` directive's (major, minor), or None."""
    return scan_header(blank_comments(text))[0]


def ptx_target(text: str) -> str | None:
    """The first sm_XX of the ``.target`` directive, or None."""
    return scan_header(blank_comments(text))[1]


def with_version(text: str, version: tuple[int, int]) -> str:
    """``text`` with its ``.version`` directive set to ``version`` (unchanged without one)."""
    m = _VERSION_RE.search(blank_comments(text))
    if not m:
        return text
    return f"{text[: m.start(1)]}{version[0]}.{version[1]}{text[m.end(2) :]}"


_PROVENANCE_RE = re.compile(r"^\s*//\s*(?:ptxls-)?source\s*:\s*(\S+\.cu\w*)", re.M | re.I)


def provenance_source(text: str) -> str | None:
    """The CUDA file a lowered .ptx came from, if its provenance header names one
    ('// source: path/to/file.cu' or '// ptxls-source: ...')."""
    m = _PROVENANCE_RE.search(text)
    return m.group(1) if m else None


# Special registers of the PTX ISA (chapter "Special Registers"); matched by name prefix so
# numbered and suffixed forms (%envreg3, %lanemask_lt, %cluster_ctaid) are covered.
_SPECIAL = re.compile(
    r"^%(tid|ntid|laneid|warpid|nwarpid|ctaid|nctaid|smid|nsmid|gridid|is_explicit_cluster|"
    r"clusterid|nclusterid|cluster_ctaid|cluster_nctaid|cluster_ctarank|cluster_nctarank|"
    r"lanemask_(eq|le|lt|ge|gt)|clock|clock_hi|clock64|pm[0-7]|pm[0-7]_64|envreg\d+|"
    r"globaltimer|globaltimer_lo|globaltimer_hi|reserved_smem_offset_\w+|total_smem_size|"
    r"aggr_smem_size|dynamic_smem_size|current_graph_exec|warpsz|WARP_SZ)$"
)


def is_special_register(name: str) -> bool:
    """%tid, %ctaid, %laneid, %clock64, %envreg3 … — predeclared by the ISA."""
    return bool(_SPECIAL.match(name))


def module_globals(text: str) -> list[str]:
    """Names of the module-scope ``.global`` variables a PTX text defines (a kernel's state across
    launches, which the GPU test resets before each one); ``.extern`` ones live elsewhere."""
    return global_names(parse_ptx(text)[0])


def global_names(module: PtxModule) -> list[str]:
    """``module_globals`` of a module already parsed (the lowering loop's one parse)."""
    return list(
        dict.fromkeys(d.name for d in module.globals if d.kind == ".global" and not d.extern)
    )
