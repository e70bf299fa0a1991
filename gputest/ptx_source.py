"""Just enough of PTX for the harness: the ``.version``, ``.target`` and each ``.entry`` with its
line and parameter types (to check a spec against the kernel's real ABI). The full parser lives
in diagnostics/; this room must import without it on the GPU machine."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .cuda_source import strip_comments


@dataclass
class PtxEntry:
    name: str
    line: int  # 0-based line of the name
    col: int
    decl_line: int  # line of the .entry/.visible directive (annotations sit above it)
    param_types: list[str]  # ".u64", ".u32", ...
    param_names: list[str]


_ENTRY = re.compile(r"^[ \t]*((?:\.visible|\.weak)\s+)?\.entry\s+([\w$.]+)\s*\(([^)]*)\)", re.M)
_PARAM = re.compile(r"\.param\s+(?:\.align\s+\d+\s+)?(\.\w+)\s+([\w$]+)(\s*\[\s*\d*\s*\])?")


def find_entries(text: str) -> list[PtxEntry]:
    code = strip_comments(text)
    entries = []
    # Lines are counted from the previous entry on, not from the start of the file each time:
    # that was quadratic (20,000 entries: 11 s of the event loop for one code-lens request).
    counted_to, newlines = 0, 0

    def line_of(pos: int) -> int:
        nonlocal counted_to, newlines
        newlines += code.count("\n", counted_to, pos)
        counted_to = pos
        return newlines

    for m in _ENTRY.finditer(code):
        name_at = m.start(2)
        decl_line = line_of(m.start() + (len(m.group(0)) - len(m.group(0).lstrip())))
        line = line_of(name_at)
        col = name_at - (code.rfind("\n", 0, name_at) + 1)
        params = _PARAM.findall(m.group(3))
        entries.append(
            PtxEntry(
                m.group(2),
                line,
                col,
                decl_line,
                [t for t, _, _ in params],
                [n for _, n, _ in params],
            )
        )
    return entries


def ptx_version(text: str) -> tuple[int, int] | None:
    m = re.search(r"^\s*\.version\s+(\d+)\.(\d+)", strip_comments(text), re.M)
    return (int(m.group(1)), int(m.group(2))) if m else None


def ptx_target(text: str) -> str | None:
    m = re.search(r"^\s*\.target\s+([\w,\s]+?)\s*$", strip_comments(text), re.M)
    return m.group(1).split(",")[0].strip() if m else None


def provenance_source(text: str) -> str | None:
    """The CUDA file a lowered .ptx came from, if its provenance header names one
    ('// source: path/to/file.cu' or '// ptxls-source: ...')."""
    m = re.search(r"^\s*//\s*(?:ptxls-)?source\s*:\s*(\S+\.cu\w*)", text, re.M | re.I)
    return m.group(1) if m else None
