"""Give a PTX module line info that points at its own lines.

ptxas and nvdisasm (and compute-sanitizer) can name the source line of each SASS instruction only
when the PTX carries `.file`/`.loc` directives. Hand-written or LLM-written PTX has none, so
`add_line_info` writes a `.file 1 "<name>"` and a `.loc 1 <line> 0` before every instruction, where
<line> is the instruction's 1-based line in the ORIGINAL text: a tool's "line 42" is then line 42 of
the buffer the user sees.

PTX that already has `.loc` (nvcc with -lineinfo, Triton) maps to its own source (.cu, .py): it is
returned unchanged and the result says so (`maps_to == "source"`).

Pure text: stdlib only, no IO, never raises. The scanner knows comments, strings, labels, vector
operands in braces (`{%r1, %r2}`), nested scopes and module-scope initialisers, so it never puts a
`.loc` inside a statement; text it cannot read as a PTX module is returned with `.loc`s only where
it found instruction starts in function bodies.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

_LABEL = re.compile(r"[A-Za-z_$%][A-Za-z0-9_$]*\s*$")
_FUNCTION_HEADER = re.compile(r"(?<![\w$.])\.(?:entry|func)\b")
_LOC_DIRECTIVE = re.compile(r"(?<![\w$.])\.loc\b")
_FILE_DIRECTIVE = re.compile(r"(?<![\w$.])\.file\s+(\d+)")


@dataclass(frozen=True)
class LineInfoText:
    """PTX ready for `ptxas -lineinfo`.

    `maps_to` is "ptx" when the `.loc`s were added here and name lines of the original PTX (file
    index `file_index`, called `file_name`), "source" when the PTX already carried its own line
    info (nvcc, Triton) and was left as it was, and "none" when the text has no instruction.
    """

    text: str
    maps_to: str
    file_name: str
    file_index: int
    instruction_lines: tuple[int, ...] = ()
    # 1-based lines of `text` that the original does not have (a tool's message about "line N"
    # of `text` names original line `original_line(N)`)
    added_lines: tuple[int, ...] = ()

    def original_line(self, line: int) -> int:
        """The original line of line `line` of `text` (a ptxas error, a sanitizer report)."""
        return line - bisect.bisect_right(self.added_lines, line)


def with_line_info(ptx_text: str, file_name: str) -> str:
    """The PTX with `.file`/`.loc` directives mapping each instruction to its original line."""
    return add_line_info(ptx_text, file_name).text


def add_line_info(ptx_text: str, file_name: str) -> LineInfoText:
    """Like `with_line_info`, and says where the lines point (see `LineInfoText`)."""
    try:
        return _add_line_info(ptx_text, file_name)
    except Exception:  # a reader never fails on user text: give it back untouched
        return LineInfoText(ptx_text, "none", file_name, 0)


def _add_line_info(ptx_text: str, file_name: str) -> LineInfoText:
    scan = _scan(ptx_text)
    if scan.has_loc:
        return LineInfoText(ptx_text, "source", file_name, 0)
    if not scan.instruction_starts:
        return LineInfoText(ptx_text, "none", file_name, 0)
    index = max(scan.file_indexes, default=0) + 1
    pieces: list[str] = []
    added: list[int] = []
    last = 0
    for offset, line in scan.instruction_starts:
        shift = line + len(added)  # where the original line `line` is in the text so far
        line_start = ptx_text.rfind("\n", 0, offset) + 1
        before = ptx_text[line_start:offset]
        indent = before[: len(before) - len(before.lstrip())]
        if before.strip():  # after a label or another statement on the same line
            pieces.append(ptx_text[last:offset])
            pieces.append(f"\n{indent}.loc {index} {line} 0\n{indent}")
            added += [shift + 1, shift + 2]  # the .loc, then the rest of the line
        else:
            pieces.append(ptx_text[last:line_start])
            pieces.append(f"{indent}.loc {index} {line} 0\n")
            added.append(shift)
            pieces.append(ptx_text[line_start:offset])
        last = offset
    pieces.append(ptx_text[last:])
    if not ptx_text.endswith("\n"):
        pieces.append("\n")
    pieces.append(f'.file {index} "{_quoted(file_name)}"\n')
    lines = tuple(line for _, line in scan.instruction_starts)
    return LineInfoText("".join(pieces), "ptx", file_name, index, lines, tuple(added))


def _quoted(file_name: str) -> str:
    clean = "".join(ch for ch in file_name if ch >= " " and ch != "\x7f")
    return clean.replace("\\", "/").replace('"', "'")


@dataclass
class _Scan:
    # (offset of the instruction's first character, its 1-based line); one per line at most
    instruction_starts: list[tuple[int, int]]
    has_loc: bool
    file_indexes: list[int]


class _Scanner:
    """One pass over the text. `depth` counts block braces; `body_depth` is the depth of the
    current function body (0 outside); `operand_braces` counts braces inside one statement."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.line = 1
        self.depth = 0
        self.body_depth = 0
        self.operand_braces = 0
        self.stmt_start: int | None = None  # first character of the statement being read
        self.stmt_line = 0
        self.module_start = 0  # where the current module-scope statement began
        self.starts: list[tuple[int, int]] = []
        self.last_line = 0

    def run(self) -> _Scan:
        text, n, i = self.text, len(self.text), 0
        while i < n:
            ch = text[i]
            if ch == "/" and text.startswith("//", i):
                end = text.find("\n", i)
                i = n if end < 0 else end
                continue
            if ch == "/" and text.startswith("/*", i):
                end = text.find("*/", i + 2)
                end = n if end < 0 else end + 2
                self.line += text.count("\n", i, end)
                i = end
                continue
            if ch == '"':
                end = i + 1
                while end < n and text[end] not in '"\n':
                    end += 2 if text[end] == "\\" else 1
                self._char(i, "x")  # a string is part of the statement
                i = min(end + 1, n)
                continue
            if ch == "\n":
                self.line += 1
            elif not ch.isspace():
                self._char(i, ch)
            i += 1
        plain = _strip_comments_and_strings(text)
        return _Scan(
            self.starts,
            bool(_LOC_DIRECTIVE.search(plain)),
            [int(m.group(1)) for m in _FILE_DIRECTIVE.finditer(plain)],
        )

    def _char(self, i: int, ch: str) -> None:
        in_body = self.body_depth > 0
        if ch == "{":
            self._open_brace(i, in_body)
        elif ch == "}":
            self._close_brace(i)
        elif ch == ";":
            self._end_statement(i, in_body)
        elif ch == ":" and in_body and self.stmt_start is not None and self.operand_braces == 0:
            if _LABEL.match(self.text[self.stmt_start : i]):
                self.stmt_start = None  # a label: the instruction (if any) starts after it
        elif self.stmt_start is None:
            self.stmt_start, self.stmt_line = i, self.line

    def _open_brace(self, i: int, in_body: bool) -> None:
        header = not in_body and self.depth == 0 and self._is_header(i)
        if self.stmt_start is not None and not header:
            self.operand_braces += 1  # {%r1, %r2} or an initialiser {1, 2, 3}
            return
        if header:
            self.body_depth = 1
        self.depth += 1
        self.stmt_start = None

    def _close_brace(self, i: int) -> None:
        if self.operand_braces:
            self.operand_braces -= 1
            return
        self.depth = max(self.depth - 1, 0)
        if self.depth < self.body_depth:
            self.body_depth = 0
            self.last_line = 0
        self.stmt_start = None
        if self.depth == 0:
            self.module_start = i + 1

    def _end_statement(self, i: int, in_body: bool) -> None:
        start = self.stmt_start
        complete = in_body and start is not None and self.operand_braces == 0
        new_line = self.stmt_line != self.last_line
        if complete and start is not None and self.text[start] != "." and new_line:
            self.starts.append((start, self.stmt_line))
            self.last_line = self.stmt_line
        if self.operand_braces == 0:
            self.stmt_start = None
            if self.depth == 0:
                self.module_start = i + 1

    def _is_header(self, i: int) -> bool:
        statement = _strip_comments_and_strings(self.text[self.module_start : i])
        return bool(_FUNCTION_HEADER.search(statement))


def _scan(text: str) -> _Scan:
    return _Scanner(text).run()


def _strip_comments_and_strings(text: str) -> str:
    return re.sub(r'//[^\n]*|/\*.*?(?:\*/|$)|"(?:\\.|[^"\\\n])*"?', " ", text, flags=re.S)
