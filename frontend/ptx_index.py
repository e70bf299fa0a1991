"""Names in a parsed PTX module: what is under the cursor, where it is defined, where it is used,
and the outline. Plain data for the editor features (definition, references, hover, symbols).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .ptx import Decl, Pos, PtxFunction, PtxModule, Span, is_special_register

# A dotted token as written: ld.global.v4.f32, %tid.x, .maxntid, $L__BB0_2, @%p1 (without @).
_TOKEN = re.compile(r"[%.$A-Za-z_][\w$.:]*")


@dataclass(frozen=True)
class NameRef:
    kind: str  # "register", "label", "param", "function", "word"
    name: str
    span: Span  # where the cursor's occurrence is
    function: PtxFunction | None


@dataclass(frozen=True)
class OutlineItem:
    name: str
    kind: str  # "entry", "function", "label", "variable"
    span: Span
    selection: Span
    children: tuple[OutlineItem, ...] = ()
    detail: str = ""


def token_at(line_text: str, col: int) -> tuple[str, int, int] | None:
    """The dotted token covering ``col`` (or ending right at it), with its columns."""
    for m in _TOKEN.finditer(line_text):
        if m.start() <= col <= m.end():
            return m.group(0), m.start(), m.end()
    return None


def _inside(span: Span, line: int, col: int) -> bool:
    return (span.start.line, span.start.col) <= (line, col) <= (span.end.line, span.end.col)


def name_at(module: PtxModule, line: int, col: int) -> NameRef | None:
    """The register, label, parameter or function name at (line, col), if any."""
    for f in module.functions:
        if _inside(f.name_span, line, col):
            return NameRef("function", f.name, f.name_span, f)
    func = module.function_at(line)
    if func is None:
        return None
    for p in func.params:
        if _inside(p.span, line, col):
            return NameRef("param", p.name, p.span, func)
    for use in func.symbol_uses:
        if use.span.start.line == line and _inside(use.span, line, col):
            kind = "param" if any(p.name == use.name for p in func.params) else "word"
            return NameRef(kind, use.name, use.span, func)
    for use in func.register_uses:
        if use.span.start.line == line and _inside(use.span, line, col):
            if is_special_register(use.name):
                return None  # predeclared (%tid, %laneid …): the ISA docs answer for it
            return NameRef("register", use.name, use.span, func)
    for d in func.decls:
        if _inside(d.span, line, col):
            return NameRef("register" if d.kind == ".reg" else "word", d.name, d.span, func)
    for name, span in func.labels.items():
        if _inside(span, line, col):
            return NameRef("label", name, span, func)
    for use in func.branch_targets:
        if _inside(use.span, line, col):
            return NameRef("label", use.name, use.span, func)
    return None


def declaration_of(ref: NameRef, module: PtxModule) -> Decl | None:
    func = ref.function
    decls = (func.decls if func else []) + module.globals
    for d in decls:
        if d.declares(ref.name):
            return d
    return None


def definition(ref: NameRef, module: PtxModule) -> Span | None:
    func = ref.function
    if ref.kind == "function":
        return ref.function.name_span if ref.function else None
    if ref.kind == "label" and func:
        return func.labels.get(ref.name)
    if ref.kind == "param" and func:
        for p in func.params:
            if p.name == ref.name:
                return p.span
    decl = declaration_of(ref, module)
    return decl.span if decl else None


def references(ref: NameRef, module: PtxModule, include_declaration: bool = True) -> list[Span]:
    func = ref.function
    spans: list[Span] = []
    if func is None:
        return spans
    if ref.kind == "label":
        spans = [u.span for u in func.branch_targets if u.name == ref.name]
    elif ref.kind == "param":
        spans = [u.span for u in func.symbol_uses if u.name == ref.name]
    elif ref.kind == "register":
        spans = [u.span for u in func.register_uses if u.name == ref.name]
    if include_declaration:
        d = definition(ref, module)
        if d is not None:
            spans.insert(0, d)
    return spans


def outline(module: PtxModule) -> list[OutlineItem]:
    items = []
    for d in module.globals:
        if d.kind in (".global", ".shared", ".const"):
            items.append(
                OutlineItem(d.name, "variable", d.span, d.span, detail=f"{d.kind} {d.type}".strip())
            )
    for func in module.functions:
        labels = tuple(
            OutlineItem(name, "label", span, span)
            for name, span in sorted(func.labels.items(), key=lambda kv: kv[1].start.line)
        )
        params = ", ".join(f"{p.type} {p.name}".strip() for p in func.params)
        items.append(
            OutlineItem(
                func.name,
                "entry" if func.is_entry else "function",
                func.span,
                func.name_span,
                labels,
                detail=f"({params})",
            )
        )
    return items


def describe_register(ref: NameRef, module: PtxModule) -> str:
    decl = declaration_of(ref, module)
    if decl is None:
        return f"`{ref.name}` is not declared in `{ref.function.name if ref.function else '?'}`"
    declared = f"{decl.kind} {decl.type} {decl.name}" + (
        f"<{decl.count}>" if decl.count is not None else ""
    )
    uses = sum(1 for u in ref.function.register_uses if u.name == ref.name) if ref.function else 0
    line = decl.span.start.line + 1
    return f"`{ref.name}`: declared by `{declared};` on line {line}; {used_times(uses)}"


def used_times(n: int) -> str:
    """'not used', 'used once', 'used 3 times'."""
    return "not used" if n == 0 else "used once" if n == 1 else f"used {n} times"


def position(line: int, col: int) -> Pos:
    return Pos(line, col)
