"""What the PTX reader (``ptx.py``) returns — a module, its functions, parameters,
declarations and the names used as operands — and where each is: 0-based (line, column)
positions, turned from offsets in the text by ``TextPositions``.

Plain data: nothing here reads PTX. ``ptx.py`` builds these and re-exports them, so a caller
imports them from the reader.
"""

from __future__ import annotations

import bisect
import itertools
import operator
from dataclasses import dataclass, field
from typing import NamedTuple


class Pos(NamedTuple):  # a tuple: a big kernel makes hundreds of thousands of them
    line: int
    col: int


class Span(NamedTuple):
    start: Pos
    end: Pos


@dataclass(slots=True)
class PtxParam:
    name: str
    type: str  # ".u64", ".f32", ".b8" …
    span: Span  # of the name
    state_space_hint: str = ""  # ".ptr .global" etc. when given
    align: int | None = None
    array: str = ""  # "[16]" for byte arrays (structs by value)


@dataclass(slots=True)
class Decl:
    """A declared name: a register, register range, or variable inside a function."""

    name: str  # for ranges, the prefix ("%r" of %r<5>)
    kind: str  # ".reg", ".local", ".shared", ".param", ".const", ".global"
    type: str
    span: Span
    count: int | None = None  # %r<5> → 5 (declares %r0 … %r4)
    extern: bool = False  # ``.extern``: declared here, defined in another module

    def declares(self, reg: str) -> bool:
        if self.count is None:
            return reg == self.name
        if not reg.startswith(self.name):
            return False
        suffix = reg[len(self.name) :]
        return suffix.isdigit() and int(suffix) < self.count


class ShiftedPositions:
    """Positions in a text for offsets counted from ``base`` (a use found in a copy of a body)."""

    __slots__ = ("_t", "_base")

    def __init__(self, t: TextPositions, base: int) -> None:
        self._t, self._base = t, base

    def span(self, start: int, end: int) -> Span:
        return self._t.span(self._base + start, self._base + end)


class Use:
    """A name used as an operand, and where (``span``, 0-based).

    A big kernel has tens of thousands of register uses, and only the few that a check reports
    ever need a line and column: given the text and offsets instead of a span, the span is
    computed when first read."""

    __slots__ = ("name", "_span", "_t", "_at")

    def __init__(
        self,
        name: str,
        span: Span | None,
        t: TextPositions | ShiftedPositions | None = None,
        at: tuple[int, int] = (0, 0),
    ) -> None:
        self.name = name
        self._span = span
        self._t = t
        self._at = at  # [start, end) offsets for t, when span is None

    @property
    def span(self) -> Span:
        if self._span is None:
            assert self._t is not None, "a Use without a span is given its text"
            self._span = self._t.span(*self._at)
            self._t = None
        return self._span

    def __repr__(self) -> str:
        return f"Use({self.name!r}, {self.span})"


@dataclass(slots=True)
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
    offsets: tuple[int, int] = (0, 0)  # [start, end) of ``span`` in the text, to cut it out


@dataclass(slots=True)
class StructureProblem:
    message: str
    span: Span


@dataclass(slots=True)
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


class TextPositions:
    """Offset ↔ (line, col) conversion for one text."""

    def __init__(self, text: str):
        self.text = text
        self.starts = line_starts(text)

    def pos(self, offset: int) -> Pos:
        line = bisect.bisect_right(self.starts, offset) - 1
        # tuple.__new__ directly: a NamedTuple's own __new__ is a Python function, and a big
        # kernel asks for tens of thousands of positions
        return _new_tuple(Pos, (line, offset - self.starts[line]))

    def span(self, start: int, end: int) -> Span:
        starts = self.starts
        a = bisect.bisect_right(starts, start) - 1
        if start <= end and (a + 1 == len(starts) or end < starts[a + 1]):
            b = a  # the usual case: a name on one line, one search
        else:
            b = bisect.bisect_right(starts, end) - 1
        return _new_tuple(
            Span,
            (
                _new_tuple(Pos, (a, start - starts[a])),
                _new_tuple(Pos, (b, end - starts[b])),
            ),
        )


_new_tuple = tuple.__new__


def line_starts(text: str) -> list[int]:
    """The offset each line of ``text`` starts at (lines end at '\\n'); shared with the
    next caller that asks for the same text: read it, never change it."""
    global _last_starts
    last = _last_starts
    if last[0] is text:
        return last[1]
    # line i starts after lines 0..i-1 and their '\n's: a split and sums, all in C
    lengths = map(operator.add, map(len, text.split("\n")), itertools.repeat(1))
    starts = list(itertools.accumulate(lengths, initial=0))
    starts.pop()  # after the last line: no line starts there
    _last_starts = (text, starts)
    return starts


# The last text's line starts: the parse and the availability lint of one check both ask.
_last_starts: tuple[str, list[int]] = ("", [0])
