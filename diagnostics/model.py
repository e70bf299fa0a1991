"""Plain data the diagnostics engine returns; server/ turns it into LSP types."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    HINT = "hint"


@dataclass(frozen=True)
class Fix:
    """An edit that resolves a problem: ``old_text`` at (line, col) becomes ``new_text``.

    ``old_text`` lets whoever applies it later check that the buffer still says what the check
    saw (an editor asks for the fix after more edits)."""

    title: str  # "Declare %r<7> on line 16 (covers %r6)"
    line: int  # 0-based
    col: int
    old_text: str
    new_text: str


@dataclass(frozen=True)
class Problem:
    """One finding on a 0-based line, columns in characters of that line (end exclusive)."""

    line: int
    col: int
    end_col: int
    severity: Severity
    message: str
    source: str  # "ptxas", "ptxls", "nvcc", "nvrtc", "gpu-test"
    end_line: int | None = None  # None: same as line
    code: str | None = None
    fix: Fix | None = None  # the edit that would resolve it, where one is certain

    @property
    def last_line(self) -> int:
        return self.line if self.end_line is None else self.end_line

    def compiler_style(self, path: str) -> str:
        """``FILE:LINE:COL: error: message`` with 1-based line and column, as compilers print."""
        return f"{path}:{self.line + 1}:{self.col + 1}: {self.severity.value}: {self.message}"


@dataclass
class CheckResult:
    """What one check of a buffer found, and what ran to find it."""

    problems: list[Problem] = field(default_factory=list)
    tool: str = ""  # "ptxas 13.5 (nvidia-cuda-nvcc wheel: …)"
    arch: str = ""
    notes: list[str] = field(default_factory=list)  # things to tell the user once, not per line
    ran_tool: bool = True  # False when only in-process checks ran (e.g. save-only mode)
    usage: list = field(default_factory=list)  # resources.EntryUsage per function, with -v
    cubin: bytes | None = None  # ptxas's output, with PtxCheckOptions.want_cubin

    @property
    def error_count(self) -> int:
        return sum(1 for p in self.problems if p.severity is Severity.ERROR)
