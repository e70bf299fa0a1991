"""The few-shot library in the editor: its kernels offered as completions in .ptx files
(outside any function: "softmax_rows — verified row softmax, 1.12× nvcc on H200"), a command
that opens a library kernel (``ptxls.openLibraryKernel``, arguments: uri of the current file,
kernel name), and a hover on a library kernel's ``.entry`` with its measured figures.

Cheap by design (providers never start work): the library and its figures are read once and
kept; the figures come from the committed ``fewshot/measured.json``.
"""

from __future__ import annotations

import re
from functools import lru_cache

from lsprotocol import types

from ptxls.fewshot.library import Example, load_examples
from ptxls.fewshot.measured import load_measured
from ptxls.frontend.ptx import find_entries

from .. import convert
from ..app import PtxlsServer, short_name
from ..convert import Completion

COMMAND = "ptxls.openLibraryKernel"
_HEADER = re.compile(r"^\s*\.(version|target|address_size)\b", re.MULTILINE)


@lru_cache(maxsize=1)
def _library() -> tuple[tuple[Example, ...], dict]:
    return tuple(load_examples()), load_measured()


def _title(ex: Example) -> str:
    """'row softmax with the row held in registers' from '# softmax_rows — row softmax ...'."""
    first = ex.description.splitlines()[0] if ex.description else ""
    return first.split("—", 1)[1].strip() if "—" in first else ex.name


def detail(ex: Example, figures: dict) -> str:
    """'verified row softmax ..., 1.05× nvcc on H200' — "verified" only when a committed
    benchmark run checked it (every timed launch is verified); else it says so."""
    fig = figures.get(ex.name)
    if fig is None:
        return f"{_title(ex)} (library kernel, not benchmarked yet)"
    return f"verified {_title(ex)}, {fig.one_line()}"


def _body(ex: Example, buffer_has_header: bool) -> str:
    """What the completion inserts: the whole file into an empty buffer, else everything from
    the first module-level declaration after the header (no second .version/.target)."""
    if not buffer_has_header:
        return ex.ptx
    lines = ex.ptx.splitlines(keepends=True)
    last_header = max((i for i, line in enumerate(lines) if _HEADER.match(line)), default=-1)
    return "".join(lines[last_header + 1 :]).lstrip("\n")


def completion_items(ls: PtxlsServer, text: str, in_function: bool) -> list[Completion]:
    if in_function:
        return []
    examples, figures = _library()
    has_header = bool(_HEADER.search(text))
    return [
        Completion(
            label=ex.name,
            kind="snippet",
            detail=detail(ex, figures),
            documentation_markdown=ex.description,
            insert_text=_body(ex, has_header),
            filter_text=f"{ex.name} {ex.family} {' '.join(ex.keywords)}",
            sort_text=f"~library {ex.name}",  # after the ISA's own words
        )
        for ex in examples
    ]


def hover(ls: PtxlsServer, params: types.HoverParams) -> types.Hover | None:
    doc = ls.open_document(params.text_document.uri)
    line = params.position.line
    if doc is None or line >= len(doc.lines):
        return None
    # the PTX reader on the hovered line alone: an .entry header starts on one line, and a
    # commented-out '// .entry softmax_rows' is no kernel
    entry = next(iter(find_entries(doc.lines[line])), None)
    if entry is None:
        return None
    start, end = entry.col, entry.col + len(entry.name)
    if not (start <= params.position.character <= end):
        return None
    examples, figures = _library()
    ex = next((e for e in examples if e.name == entry.name), None)
    if ex is None:
        return None
    fig = figures.get(ex.name)
    text = fig.markdown() if fig else f"**{ex.name}** — library kernel, not benchmarked yet"
    text += f"\n\nptxls library: {_title(ex)} (`fewshot/kernels/{ex.name}`)"
    return convert.markdown_hover(text, convert.line_range(line, start, end))


async def open_kernel(ls: PtxlsServer, uri: str = "", name: str = "", *_rest) -> dict:
    examples, figures = _library()
    ex = next((e for e in examples if e.name == name), None)
    if ex is None:
        known = ", ".join(e.name for e in examples) or "none"
        return {
            "ok": False,
            "summary": f"no library kernel '{short_name(name)}' (library: {known})",
        }
    target = (ex.folder / "kernel.ptx").as_uri()
    return {"ok": True, "uri": target, "summary": f"{ex.name}: {detail(ex, figures)}"}


def register(server: PtxlsServer) -> None:
    server.completion_providers.append(completion_items)
    server.hover_providers.append(hover)
    server.command(COMMAND)(open_kernel)
