"""Views of a SassReport: the Compiler Explorer-style listing (the PTX or source line as a comment
above the SASS it became), Markdown, JSON, and the hover text for one PTX line.

Plain strings and dicts; the CLI prints them, the server writes/returns them.
"""

from __future__ import annotations

from ptxls.frontend.demangle import demangle, readable, short_name

from .sass import SassEntry, SassReport

HOVER_MAX_INSTRUCTIONS = 24
_CLASS_ORDER = (
    "memory", "constant", "tensor", "float", "integer", "conversion", "move", "sync", "control",
    "other",
)  # fmt: skip


def entry_summary(entry: SassEntry, arch: str) -> str:
    """ "vec_add: 10 registers, 18 instructions (memory 4, integer 5, …)"."""
    regs = f"{entry.registers} registers" if entry.registers is not None else "registers unknown"
    spills = ""
    if entry.usage and entry.usage.spills:
        spills = (
            f", spills {entry.usage.spill_stores} B stored / {entry.usage.spill_loads} B loaded"
        )
    classes = ", ".join(f"{c} {entry.class_counts[c]}" for c in _ordered(entry.class_counts))
    kind = "entry" if entry.is_entry else "function"
    return (
        f"{readable(entry.name)} ({kind}, {arch}): {regs}{spills}, "
        f"{entry.instruction_count} instructions ({classes})"
    )


def _ordered(counts: dict[str, int]) -> list[str]:
    return sorted(counts, key=lambda c: (_CLASS_ORDER.index(c) if c in _CLASS_ORDER else 99, c))


def selected(report: SassReport, kernel: str | None) -> list[SassEntry]:
    if not kernel:
        return report.entries
    return [e for e in report.entries if e.name == kernel]


def render_text(report: SassReport, kernel: str | None = None) -> str:
    """The listing a person reads: per function a summary, then each group of SASS under the
    PTX line (and, for nvcc/Triton PTX, the source line) it came from."""
    out = [
        f"// SASS of {report.source_name or report.file_name} for {report.arch}, by {' and '.join(report.tools)}",
        _mapping_note(report),
        "// A view for reading: edits here are not written back to the source.",
    ]
    for entry in selected(report, kernel):
        out += ["", f"// ==== {entry_summary(entry, report.arch)}", f"{entry.name}:"]
        out += _entry_lines(report, entry)
    return "\n".join(out) + "\n"


def _mapping_note(report: SassReport) -> str:
    if report.lines_map_to == "source":
        return (
            f"// '// {report.source_name or 'source'}:N:' is the source line, "
            "'//   ptx:N:' the PTX line, of the SASS below it."
        )
    if report.lines_map_to == "ptx":
        return f"// '// {report.file_name}:N:' is the PTX line of the SASS below it."
    return "// No line information (cuobjdump lists instructions only; install nvdisasm)."


def _entry_lines(report: SassReport, entry: SassEntry) -> list[str]:
    ptx_lines = report.ptx_text.splitlines()
    source_lines = (report.source_text or "").splitlines()
    out: list[str] = []
    last_ptx = last_source = None
    for instruction in entry.instructions:
        if instruction.base == "NOP" and instruction is entry.instructions[-1]:
            break
        for label in entry.labels.get(instruction.address, []):
            out.append(f"{label}:")
        if report.lines_map_to == "source" and instruction.source_line != last_source:
            last_source = instruction.source_line
            if last_source is not None:
                text = _line(source_lines, last_source)
                out.append(
                    f"// {report.source_name or instruction.source_file}:{last_source}: {text}"
                )
        if instruction.ptx_line != last_ptx:
            last_ptx = instruction.ptx_line
            if last_ptx is not None:
                where = "  ptx" if report.lines_map_to == "source" else report.file_name
                out.append(f"// {where}:{last_ptx}: {_line(ptx_lines, last_ptx)}")
        out.append(f"        /*{instruction.address:04x}*/  {instruction.text} ;")
    return _without_padding(out)


def _without_padding(lines: list[str]) -> list[str]:
    """Drop the trailing NOPs that only align the section."""
    while lines and lines[-1].endswith(" NOP ;"):
        lines.pop()
    return lines


def _line(lines: list[str], n: int) -> str:
    return lines[n - 1].strip()[:200] if 1 <= n <= len(lines) else ""


def render_markdown(report: SassReport, kernel: str | None = None) -> str:
    out = [f"# SASS of `{report.source_name or report.file_name}` ({report.arch})", ""]
    if not report.ok:
        out += ["ptxas/nvdisasm failed:", "", "```", *report.errors, "```"]
        return "\n".join(out) + "\n"
    out += ["| function | registers | instructions | by class |", "|---|---:|---:|---|"]
    for e in selected(report, kernel):
        classes = ", ".join(f"{c} {e.class_counts[c]}" for c in _ordered(e.class_counts))
        regs = "?" if e.registers is None else str(e.registers)
        out.append(f"| `{short_name(e.name)}` | {regs} | {e.instruction_count} | {classes} |")
    out += ["", "```", render_text(report, kernel).rstrip("\n"), "```"]
    return "\n".join(out) + "\n"


def to_json(report: SassReport, kernel: str | None = None) -> dict:
    return {
        "ok": report.ok,
        "file": report.file_name,
        "arch": report.arch,
        "lines_map_to": report.lines_map_to,
        "tools": report.tools,
        "errors": report.errors,
        "functions": [_entry_json(e) for e in selected(report, kernel)],
    }


def _entry_json(entry: SassEntry) -> dict:
    usage = entry.usage
    return {
        "name": entry.name,
        "signature": demangle(entry.name),  # the C++ signature of a CUDA kernel, else the name
        "is_entry": entry.is_entry,
        "registers": entry.registers,
        "spill_stores": usage.spill_stores if usage else None,
        "spill_loads": usage.spill_loads if usage else None,
        "shared_static": usage.shared_static if usage else None,
        "instruction_count": entry.instruction_count,
        "class_counts": entry.class_counts,
        "opcode_counts": entry.opcode_counts,
        "instructions": [
            {
                "address": i.address,
                "predicate": i.predicate,
                "opcode": i.opcode,
                "operands": i.operands,
                "ptx_line": i.ptx_line,
                "source_file": i.source_file,
                "source_line": i.source_line,
            }
            for i in entry.instructions
            if i.base != "NOP"
        ],
    }


def hover_markdown(report: SassReport, line: int) -> str | None:
    """The SASS instructions that 1-based PTX line `line` became, or None when there are none."""
    found = report.at_ptx_line(line)
    if not found:
        return None
    functions = {name for name, _ in found}
    rows = [
        (f"{name}: " if len(functions) > 1 else "") + f"/*{i.address:04x}*/ {i.text}"
        for name, i in found[:HOVER_MAX_INSTRUCTIONS]
    ]
    more = len(found) - len(rows)
    tail = [f"… and {more} more (Show SASS for all)"] if more > 0 else []
    plural = "s" if len(found) != 1 else ""
    return "\n".join(
        [
            f"**SASS** ({report.arch}): {len(found)} instruction{plural} from this line",
            "```",
            *rows,
            "```",
            *tail,
        ]
    )
