"""A tolerant PTX parser: module directives, functions, parameters, registers, labels, uses.

It reads what the editor features need (lints, outline, go-to-definition, test specs) and never
raises on bad input: whatever it cannot make sense of is skipped, and structural problems it is
certain of (unbalanced braces) come back as data in ``PtxModule.structure_problems``.

Positions are 0-based (line, column) in the original text. Comments and string literals are
blanked out first, keeping every other character where it was, so positions stay exact.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

IDENT = r"[A-Za-z_$%][\w$]*"
_IDENT_RE = re.compile(IDENT)


@dataclass(frozen=True)
class Pos:
    line: int
    col: int


@dataclass(frozen=True)
class Span:
    start: Pos
    end: Pos


@dataclass
class PtxParam:
    name: str
    type: str  # ".u64", ".f32", ".b8" …
    span: Span  # of the name
    state_space_hint: str = ""  # ".ptr .global" etc. when given
    align: int | None = None
    array: str = ""  # "[16]" for byte arrays (structs by value)


@dataclass
class Decl:
    """A declared name: a register, register range, or variable inside a function."""

    name: str  # for ranges, the prefix ("%r" of %r<5>)
    kind: str  # ".reg", ".local", ".shared", ".param", ".const", ".global"
    type: str
    span: Span
    count: int | None = None  # %r<5> → 5 (declares %r0 … %r4)

    def declares(self, reg: str) -> bool:
        if self.count is None:
            return reg == self.name
        if not reg.startswith(self.name):
            return False
        suffix = reg[len(self.name) :]
        return suffix.isdigit() and int(suffix) < self.count


class _LazySpan:
    """A span computed when first read: a big kernel has tens of thousands of register uses,
    and only the few that a check reports ever need a line and column."""

    __slots__ = ("_t", "_start", "_end", "_span")

    def __init__(self, t: _Text, start: int, end: int) -> None:
        self._t, self._start, self._end, self._span = t, start, end, None

    def get(self) -> Span:
        if self._span is None:
            self._span = self._t.span(self._start, self._end)
        return self._span


class Use:
    """A name used as an operand, and where (``span``, 0-based)."""

    __slots__ = ("name", "_span")

    def __init__(self, name: str, span: Span | _LazySpan) -> None:
        self.name = name
        self._span = span

    @property
    def span(self) -> Span:
        if isinstance(self._span, _LazySpan):
            self._span = self._span.get()
        return self._span

    def __repr__(self) -> str:
        return f"Use({self.name!r}, {self.span})"


@dataclass
class PtxFunction:
    name: str
    is_entry: bool
    span: Span  # the whole function, header to closing brace (or header only)
    name_span: Span
    params: list[PtxParam] = field(default_factory=list)
    return_params: list[PtxParam] = field(default_factory=list)
    body: Span | None = None  # from "{" to "}" inclusive; None for a prototype
    decls: list[Decl] = field(default_factory=list)
    labels: dict[str, Span] = field(default_factory=dict)
    register_uses: list[Use] = field(default_factory=list)
    branch_targets: list[Use] = field(default_factory=list)
    symbol_uses: list[Use] = field(default_factory=list)  # non-% names used as operands
    directives: dict[str, str] = field(default_factory=dict)  # .maxntid 256, 1, 1 …


@dataclass
class StructureProblem:
    message: str
    span: Span


@dataclass
class PtxModule:
    version: tuple[int, int] | None = None
    version_span: Span | None = None
    targets: list[str] = field(default_factory=list)
    target_span: Span | None = None
    address_size: int | None = None
    functions: list[PtxFunction] = field(default_factory=list)
    globals: list[Decl] = field(default_factory=list)
    structure_problems: list[StructureProblem] = field(default_factory=list)

    @property
    def entries(self) -> list[PtxFunction]:
        return [f for f in self.functions if f.is_entry]

    @property
    def arch(self) -> str | None:
        """The sm_XX of the .target directive, if any (first one that names an SM)."""
        for t in self.targets:
            if t.startswith("sm_"):
                return t
        return None

    def function_at(self, line: int) -> PtxFunction | None:
        for f in self.functions:
            if f.span.start.line <= line <= f.span.end.line:
                return f
        return None


class _Text:
    """Offset ↔ (line, col) conversion for one text."""

    def __init__(self, text: str):
        self.text = text
        self.starts = [0]
        for m in re.finditer("\n", text):
            self.starts.append(m.end())

    def pos(self, offset: int) -> Pos:
        line = bisect.bisect_right(self.starts, offset) - 1
        return Pos(line, offset - self.starts[line])

    def span(self, start: int, end: int) -> Span:
        return Span(self.pos(start), self.pos(end))


_BLANK_RE = re.compile(r'//[^\n]*|/\*.*?(?:\*/|\Z)|"(?:[^"\\\n]|\\.)*"?', re.DOTALL)


def blank_comments(text: str) -> str:
    """Comments and string contents replaced by spaces (newlines kept), same length."""

    def repl(m: re.Match[str]) -> str:
        s = m.group(0)
        if s.startswith('"'):
            return '"' + re.sub(r"[^\n]", " ", s[1:-1]) + ('"' if len(s) > 1 else "")
        return re.sub(r"[^\n]", " ", s)

    return _BLANK_RE.sub(repl, text)


_VERSION_RE = re.compile(r"(?m)^\s*\.version\s+(\d+)\.(\d+)")
_TARGET_RE = re.compile(r"(?m)^\s*\.target\s+([^\n;]*)")
_ADDR_RE = re.compile(r"(?m)^\s*\.address_size\s+(\d+)")
_FUNC_RE = re.compile(r"\.(entry|func)\b")
_DECL_RE = re.compile(r"^\s*\.(reg|local|shared|param|const|global)\b([^;]*)$", re.DOTALL)
_LABEL_RE = re.compile(r"(?m)^[ \t]*([A-Za-z_$][\w$]*)[ \t]*:(?!:)")
_BRANCH_RE = re.compile(r"\b(bra(?:\.uni)?)\s+([A-Za-z_$][\w$]*)\s*;")
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


def parse_ptx(text: str) -> tuple[PtxModule, list[StructureProblem]]:
    """Parse a PTX module. Never raises; returns the module and the structural problems."""
    clean = blank_comments(text)
    t = _Text(clean)
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

    _check_braces(clean, t, mod)

    pos = 0
    bodies: list[tuple[int, int]] = []
    while True:
        m = _FUNC_RE.search(clean, pos)
        if not m:
            break
        func, end = _parse_function(clean, t, m)
        pos = max(end, m.end())
        if func is not None:
            mod.functions.append(func)
            if func.body is not None:
                bodies.append((m.start(), end))
    _parse_module_decls(clean, t, mod, bodies)
    return mod, mod.structure_problems


def _check_braces(clean: str, t: _Text, mod: PtxModule) -> None:
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


def _matching(clean: str, open_at: int, open_ch: str, close_ch: str) -> int:
    """Offset just past the bracket that closes the one at ``open_at`` (or len(clean))."""
    depth = 0
    for m in re.compile("[" + re.escape(open_ch + close_ch) + "]").finditer(clean, open_at):
        if m.group(0) == open_ch:
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return m.end()
    return len(clean)


def _parse_params(clean: str, t: _Text, start: int, end: int) -> list[PtxParam]:
    params = []
    inner = clean[start:end]
    offset = start
    for piece in inner.split(","):
        words = list(re.finditer(r"\S+", piece))
        if not words:
            offset += len(piece) + 1
            continue
        types = [w.group(0) for w in words if w.group(0).startswith(".")]
        names = [w for w in words if not w.group(0).startswith(".")]
        if names:
            name_m = names[-1]
            raw = name_m.group(0)
            name = re.match(r"[\w$%]+", raw)
            if name:
                ns = offset + name_m.start()
                align = None
                align_words = [w.group(0) for w in words]
                if ".align" in align_words:
                    idx = align_words.index(".align")
                    if idx + 1 < len(align_words) and align_words[idx + 1].isdigit():
                        align = int(align_words[idx + 1])
                scalar_types = [x for x in types if x not in (".param", ".align", ".ptr")]
                space = " ".join(x for x in types if x in (".global", ".shared", ".const"))
                params.append(
                    PtxParam(
                        name=name.group(0),
                        type=next(
                            (x for x in scalar_types if x not in (".global", ".shared", ".const")),
                            "",
                        ),
                        span=t.span(ns, ns + len(name.group(0))),
                        state_space_hint=space,
                        align=align,
                        array=raw[len(name.group(0)) :],
                    )
                )
        offset += len(piece) + 1
    return params


def _parse_function(clean: str, t: _Text, m: re.Match[str]) -> tuple[PtxFunction | None, int]:
    is_entry = m.group(1) == "entry"
    i = m.end()
    n = len(clean)
    while i < n and clean[i].isspace():
        i += 1
    return_params: list[PtxParam] = []
    if not is_entry and i < n and clean[i] == "(":
        close = _matching(clean, i, "(", ")")
        return_params = _parse_params(clean, t, i + 1, close - 1)
        i = close
        while i < n and clean[i].isspace():
            i += 1
    name_m = _IDENT_RE.match(clean, i)
    if not name_m:
        return None, i
    name = name_m.group(0)
    i = name_m.end()
    while i < n and clean[i].isspace():
        i += 1
    params: list[PtxParam] = []
    if i < n and clean[i] == "(":
        close = _matching(clean, i, "(", ")")
        params = _parse_params(clean, t, i + 1, close - 1)
        i = close
    # Performance directives, then the body or a ';' (a prototype / .extern declaration).
    j = i
    while j < n and clean[j] not in "{;":
        j += 1
    header_tail = clean[i:j]
    func = PtxFunction(
        name=name,
        is_entry=is_entry,
        span=t.span(m.start(), j),
        name_span=t.span(name_m.start(), name_m.end()),
        params=params,
        return_params=return_params,
    )
    for d in _DIRECTIVE_RE.finditer(header_tail):
        func.directives[d.group(1)] = " ".join(d.group(2).split())
    if j >= n or clean[j] == ";":
        return func, j + 1
    body_end = _matching(clean, j, "{", "}")
    func.body = t.span(j, body_end)
    func.span = t.span(m.start(), body_end)
    _parse_body(clean, t, j + 1, body_end - 1, func)
    return func, body_end


def _statements(clean: str, start: int, end: int):
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


def _parse_decl(stmt: str, offset: int, t: _Text, kind: str) -> list[Decl]:
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


_BODY_DECL_RE = re.compile(r"(?<![\w.$%])\.(reg|local|shared|param|const|global)\b[^;{}]*")
_BODY_DIRECTIVE_RE = re.compile(
    r"(?<![\w.$%])\.(?:pragma|loc|file|branchtargets|calltargets|callprototype|section)\b[^;{}]*"
)
_SYMBOL_USE_RE = re.compile(r"\[\s*([A-Za-z_$][\w$]*)")


def _parse_body(clean: str, t: _Text, start: int, end: int, func: PtxFunction) -> None:
    """Whole-body regex passes (C speed) rather than a Python loop per statement: a 24k-line
    nvcc kernel parses in tens of milliseconds."""
    for lm in _LABEL_RE.finditer(clean, start, end):
        func.labels.setdefault(lm.group(1), t.span(lm.start(1), lm.end(1)))
    skip: list[tuple[int, int]] = []  # declaration and directive statements: no uses inside
    for dm in _BODY_DECL_RE.finditer(clean, start, end):
        func.decls.extend(_parse_decl(dm.group(0), dm.start(), t, dm.group(1)))
        skip.append((dm.start(), dm.end()))
    for dm in _BODY_DIRECTIVE_RE.finditer(clean, start, end):
        skip.append((dm.start(), dm.end()))
    skip.sort()
    skip_starts = [a for a, _ in skip]

    def skipped(offset: int) -> bool:
        i = bisect.bisect_right(skip_starts, offset) - 1
        return i >= 0 and offset < skip[i][1]

    for rm in _REG_USE_RE.finditer(clean, start, end):
        if not skipped(rm.start()):
            func.register_uses.append(Use(rm.group(0), _LazySpan(t, rm.start(), rm.end())))
    for bm in _BRANCH_RE.finditer(clean, start, end):
        func.branch_targets.append(Use(bm.group(2), t.span(bm.start(2), bm.end(2))))
    for sm in _SYMBOL_USE_RE.finditer(clean, start, end):
        if not skipped(sm.start()):
            func.symbol_uses.append(Use(sm.group(1), _LazySpan(t, sm.start(1), sm.end(1))))


def _parse_module_decls(clean: str, t: _Text, mod: PtxModule, bodies: list[tuple[int, int]]):
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
            for prefix in (".visible ", ".extern ", ".weak "):
                if stripped.startswith(prefix):
                    lead += len(prefix)
                    stripped = stripped[len(prefix) :].lstrip()
            dm = _DECL_RE.match(stripped)
            if dm and dm.group(1) in ("global", "shared", "const", "reg"):
                mod.globals.extend(_parse_decl(stripped, lead, t, dm.group(1)))
