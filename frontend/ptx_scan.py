"""The tolerant PTX scan: the top-level ``.entry``/``.func`` declarations of a text that may not
be PTX yet, each with its extent and whether its body closes.

Not ``ptx.py``'s reader, on purpose: a model's reply (``lowering/extract.py`` reads it with this
scan) is prose with PTX in it, unbalanced braces, several modules, a body cut off at the token
limit, and the verdict on it needs whether each body closed, which ``parse_ptx`` does not say.
Linear in the text: comments and strings are blanked in one pass (``blank_comments_and_strings``;
``ptx.blank_comments`` keeps a string's quotes, this one blanks them too), then one scan of
braces, semicolons and directives.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

_FUNC_DIRECTIVE = re.compile(r"\.(entry|func)\b")
# after .func: an optional return-parameter list, then the name (bounded: no backtracking
# across the text)
_FUNC_NAME = re.compile(
    r"[ \t\n]{0,200}(?:\([^()]{0,4000}\)[ \t\n]{0,200})?([A-Za-z_$%][\w$]{0,200})"
)
_ENTRY_NAME = re.compile(r"[ \t\n]{0,200}([A-Za-z_$%][\w$]{0,200})")


_OPENER = re.compile(r'//|/\*|"')


def blank_comments_and_strings(text: str) -> str:
    """The text with comments and string literals replaced by spaces (newlines kept), so that
    braces, names and directives can be searched for in code only. One pass: each search
    starts where the last comment or string ended."""
    out: list[str] = []
    i, n = 0, len(text)
    search = _OPENER.search
    while True:
        m = search(text, i)
        if m is None:
            out.append(text[i:])
            break
        j, tok = m.start(), m.group()
        out.append(text[i:j])
        if tok == "//":
            k = text.find("\n", j)
            k = n if k < 0 else k
        elif tok == "/*":
            k = text.find("*/", j + 2)
            k = n if k < 0 else k + 2
        else:  # a string ends at its quote, or at the line's end when unclosed
            nl = text.find("\n", j + 1)
            nl = n if nl < 0 else nl
            k = text.find('"', j + 1, nl)
            k = nl if k < 0 else k + 1
        span = text[j:k]
        out.append(re.sub(r"[^\n]", " ", span) if "\n" in span else " " * len(span))
        i = k
    return "".join(out)


@dataclass
class Function:
    kind: str  # "entry" | "func"
    name: str
    start: int  # offset of the line where its declaration starts
    end: int  # offset just past its closing brace (or its ';', or the end of the text)
    closed: bool  # a body that closes, or a prototype ending in ';'
    is_definition: bool


@dataclass
class Module:
    text: str
    code: str  # comments and strings blanked
    functions: list[Function] = field(default_factory=list)

    def entries(self) -> list[Function]:
        return [f for f in self.functions if f.kind == "entry"]

    def declares(self, kernel: str | None) -> bool:
        return any(f.name == kernel for f in self.entries()) if kernel else bool(self.entries())


def analyse(text: str) -> Module:
    """The top-level .entry/.func declarations of a stretch of PTX with their extents."""
    code = blank_comments_and_strings(text)
    # top-level brace spans and ';' positions, in one pass
    spans: list[tuple[int, int]] = []  # (open, close+1) of bodies at depth 0
    semis: list[int] = []
    depth, opened = 0, -1
    directive_at: list[tuple[int, str]] = []
    for m in re.finditer(r"[{};]|\.(?:entry|func)\b", code):
        tok = m.group()
        if tok == "{":
            if depth == 0:
                opened = m.start()
            depth += 1
        elif tok == "}":
            if depth > 0:
                depth -= 1
                if depth == 0:
                    spans.append((opened, m.end()))
        elif tok == ";":
            if depth == 0:
                semis.append(m.start())
        elif depth == 0:
            directive_at.append((m.start(), tok[1:]))
    if depth > 0:
        spans.append((opened, -1))  # a body that never closes
    module = Module(text, code)
    span_starts = [s for s, _ in spans]
    newlines = [m.start() for m in re.finditer("\n", code)]
    for k, (at, kind) in enumerate(directive_at):
        after = at + len(kind) + 1
        named = (_FUNC_NAME if kind == "func" else _ENTRY_NAME).match(code, after)
        if not named:
            continue
        name = named.group(1)
        limit = directive_at[k + 1][0] if k + 1 < len(directive_at) else len(code)
        b = bisect.bisect_left(span_starts, named.end())
        body = spans[b] if b < len(spans) and span_starts[b] < limit else None
        s = bisect.bisect_left(semis, named.end())
        semi = semis[s] if s < len(semis) and semis[s] < limit else None
        nl = bisect.bisect_left(newlines, at)
        line_start = newlines[nl - 1] + 1 if nl > 0 else 0
        if semi is not None and (body is None or semi < body[0]):
            fn = Function(kind, name, line_start, semi + 1, True, False)
        elif body is not None:
            closed = body[1] >= 0
            fn = Function(kind, name, line_start, body[1] if closed else len(code), closed, True)
        else:
            fn = Function(kind, name, line_start, len(code), False, False)
        module.functions.append(fn)
    return module
