"""The candidate blocks of a model's reply: every fenced block (any tag, any fence, indented
or nested in a list) and every stretch of bare PTX in the prose, as ``Segment``s.

Stage 2 of reading a reply (``extract.py`` has the rules and runs the stages). Bare PTX ends
where its own braces close and a line that is not PTX follows, so prose with ``{``/``}`` after
it cannot move the end; every line is scanned once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass
class Segment:
    text: str
    fenced: bool
    tag: str = ""
    closed: bool = True  # the fence closed (always True for bare PTX)
    first_line: int = 0  # 0-based line of the reply's answer text where the PTX starts


def _fence_open(line: str) -> tuple[str, int, str] | None:
    """(fence, indent, tag) when the line opens a fenced block."""
    stripped = line.lstrip(" \t")
    if stripped[:3] not in ("```", "~~~"):
        return None
    ch = stripped[0]
    n = len(stripped) - len(stripped.lstrip(ch))
    info = stripped[n:].strip()
    if ch == "`" and "`" in info:
        return None  # inline code on one line, not a fence
    tag = info.split()[0].lower().strip("{}.") if info else ""
    return ch * n, len(line) - len(stripped), tag


def _fence_close(line: str, fence: str) -> tuple[bool, str]:
    """(closes, code before the fence): a line of only the fence char (at least as long), or
    code followed by the fence ("}```" — models do write that)."""
    ch = fence[0]
    rest = line.rstrip()
    code = rest.rstrip(ch)
    if len(rest) - len(code) < len(fence):
        return False, ""
    return True, code if code.strip() else ""


_DIRECTIVE_START = (
    ".version",
    ".target",
    ".address_size",
    ".visible",
    ".entry",
    ".func",
    ".weak",
    ".extern",
    ".global",
    ".const",
    ".shared",
    ".file",
    ".pragma",
)


def starts_ptx(stripped: str) -> bool:
    return stripped.startswith(_DIRECTIVE_START)


def ptx_like(stripped: str) -> bool:
    """A line that can stand between PTX statements at brace depth 0 (a directive, a comment,
    a brace, the ')' closing a parameter list); prose after the PTX is none of these."""
    if not stripped:
        return True
    if stripped.startswith(("//", "/*", "{", "}", ")")):
        return True
    # a directive: a lowercase word after the dot (".NET is ..." or ". Note" is prose)
    return stripped[0] == "." and stripped[1:2].islower()


_SPECIAL = re.compile(r'[{}()"]|//|/\*|\*/')


def _line_braces(line: str, state: list[int]) -> None:
    """Update [brace depth, paren depth, in block comment] for one line, ignoring comments and
    strings. Only the line's special characters are visited (found by the regex engine)."""
    depth, paren, in_comment = state
    in_string = False
    for m in _SPECIAL.finditer(line):
        tok = m.group()
        if in_comment:
            if tok == "*/":
                in_comment = 0
            continue
        if in_string:
            in_string = tok != '"'
            continue
        if tok == "//":
            break
        if tok == "/*":
            in_comment = 1
        elif tok == '"':
            in_string = True
        elif tok == "{":
            depth += 1
        elif tok == "}":
            depth = max(depth - 1, 0)
        elif tok == "(":
            paren += 1
        elif tok == ")":
            paren = max(paren - 1, 0)
    state[:] = [depth, paren, in_comment]


def _bare_segments(lines: list[str], start: int, end: int) -> list[Segment]:
    """Stretches of PTX in prose lines [start, end): from a directive (with the comment lines
    right above it) until its braces close and a line that is not PTX follows."""
    out: list[Segment] = []
    i = start
    comment_from = None
    while i < end:
        stripped = lines[i].strip()
        if stripped.startswith("//"):
            if comment_from is None:
                comment_from = i
            i += 1
            continue
        if not starts_ptx(stripped):
            comment_from = None
            i += 1
            continue
        first = comment_from if comment_from is not None else i
        comment_from = None
        state = [0, 0, 0]
        j = i
        last_code = i
        while j < end:
            s = lines[j].strip()
            if state == [0, 0, 0] and j > i and not ptx_like(s):
                break
            _line_braces(lines[j], state)
            if s:
                last_code = j
            j += 1
        out.append(Segment("\n".join(lines[first : last_code + 1]) + "\n", False, "", True, first))
        i = j
    return out


def find_segments(lines: list[str], nested: bool = False) -> tuple[list[Segment], int]:
    """Fenced blocks and bare PTX stretches, in reply order; and the number of fences.

    A longer fence holding shorter ones (````` ````markdown ````` around prose and a
    ```` ```ptx ```` block, as models write when they quote a whole answer) is read for its
    inner blocks, one level deep, so each line is scanned at most twice."""
    out: list[Segment] = []
    fences = 0
    i, prose_from, n = 0, 0, len(lines)
    while i < n:
        opened = _fence_open(lines[i])
        if opened is None:
            i += 1
            continue
        out += _bare_segments(lines, prose_from, i)
        fence, indent, tag = opened
        fences += 1
        body: list[str] = []
        inner_fences = False
        j, closed = i + 1, False
        while j < n:
            closes, before = _fence_close(lines[j], fence)
            if closes:
                if before.strip():
                    body.append(before)
                closed = True
                break
            line = lines[j]
            if indent:  # a fence indented in a list: its body is indented as much
                k = len(line) - len(line.lstrip(" "))
                line = line[min(k, indent) :]
            if not nested and len(fence) > 3:
                inner = _fence_open(line)
                inner_fences = inner_fences or (
                    inner is not None and inner[0][0] == fence[0] and len(inner[0]) < len(fence)
                )
            body.append(line)
            j += 1
        if inner_fences:
            inner_segments, inner_count = find_segments(body, nested=True)
            for seg in inner_segments:
                seg.first_line += i + 1
            out += inner_segments
            fences += inner_count
        else:
            out.append(Segment("\n".join(body).strip("\n") + "\n", True, tag, closed, i + 1))
        i = j + 1
        prose_from = i
    out += _bare_segments(lines, prose_from, n)
    return out, fences
