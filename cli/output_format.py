"""``--format {text,markdown,json}`` for the subcommands whose output is structured.

``text`` (the default) is plain text for a terminal; ``markdown`` is what the editor's hovers
show; ``json`` is for scripts. ``--json`` stays as a short form of ``--format json``.
"""

from __future__ import annotations

import argparse
import re

FORMATS = ("text", "markdown", "json")


def add_format_argument(parser: argparse.ArgumentParser, *, json_alias: bool = True) -> None:
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help="output format: text for a terminal (default), markdown, or json",
    )
    if json_alias:
        parser.add_argument("--json", action="store_true", help="same as --format json")


def chosen_format(args: argparse.Namespace) -> str:
    if getattr(args, "json", False):
        return "json"
    return getattr(args, "format", None) or "text"


_TABLE_RULE = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?$")


def markdown_to_text(markdown: str) -> str:
    """Plain text from the small Markdown ptxls writes: emphasis and code marks removed,
    tables as aligned columns (numbers right-aligned where the table says so)."""
    out: list[str] = []
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        if (
            lines[i].lstrip().startswith("|")
            and i + 1 < len(lines)
            and _TABLE_RULE.match(lines[i + 1].strip())
        ):
            j = i + 2
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                j += 1
            out += _table(lines[i], lines[i + 1], lines[i + 2 : j])
            i = j
            continue
        out.append(_inline(lines[i]))
        i += 1
    return "\n".join(out)


def _inline(line: str) -> str:
    line = line.replace("**", "").replace("`", "")
    # a whole line in _italics_ (report footers)
    if len(line) > 2 and line.startswith("_") and line.endswith("_"):
        line = line[1:-1]
    return line


def _cells(row: str) -> list[str]:
    return [_inline(c.strip()) for c in row.strip().strip("|").split("|")]


def _table(header: str, rule: str, rows: list[str]) -> list[str]:
    head = _cells(header)
    body = [_cells(r) for r in rows]
    right = [c.strip().endswith(":") and not c.strip().startswith(":") for c in _cells(rule)]
    widths = [max(len(r[k]) if k < len(r) else 0 for r in [head, *body]) for k in range(len(head))]

    def fmt(cells: list[str]) -> str:
        parts = []
        for k, w in enumerate(widths):
            cell = cells[k] if k < len(cells) else ""
            parts.append(cell.rjust(w) if k < len(right) and right[k] else cell.ljust(w))
        return "  ".join(parts).rstrip()

    return [fmt(head), fmt(["-" * w for w in widths]), *[fmt(r) for r in body]]
