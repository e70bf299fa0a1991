"""What ptxas made of a PTX module: its SASS per function, each instruction mapped to its PTX line.

PTX text + arch → ``.loc`` directives naming the PTX's own lines (frontend.line_info; PTX from
nvcc or Triton keeps its ``.loc`` into the .cu/.py) → ONE ``ptxas -lineinfo -v`` run (the cubin
and the register/spill numbers) → nvdisasm ``-c -g -gp`` (or cuobjdump ``-sass`` without lines)
→ per-function instructions with their PTX line (and source line for nvcc/Triton PTX), register
count and instruction counts per opcode class. No GPU is needed.

From CUDA: ``sass_for_cuda`` gets nvcc's ``-lineinfo`` PTX first. From Triton: call
``sass_for_ptx`` with Triton's PTX (it carries ``.loc`` into the .py) and ``source_text``.

Raises ToolNotFound when ptxas or a disassembler is missing (its message says how to get one)
and OSError when a tool cannot be started; anything wrong with the user's text is in the report.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field, replace

from ptxls.frontend.line_info import LineInfoText, add_line_info
from ptxls.frontend.ptx import find_entries, ptx_target, ptx_version
from ptxls.frontend.sass import SassFunction, SassInstruction, parse_res_usage, parse_sass
from ptxls.toolchain.disasm import (
    disassemble,
    find_disassembler,
    resource_usage,
    which_cuobjdump,
)
from ptxls.toolchain.discovery import find_nvcc, find_ptxas
from ptxls.toolchain.nvcc import nvcc_to_ptx
from ptxls.toolchain.ptxas import run_ptxas

from .resources import EntryUsage, parse_ptxas_verbose

DEFAULT_ARCH = "sm_90"
_LINE_REF = re.compile(r"line (\d+)")


@dataclass(frozen=True)
class SassOptions:
    arch: str | None = None  # None: the PTX's .target (else sm_90)
    file_name: str = "kernel.ptx"  # the name messages and the view use
    ptxas_path: str | None = None
    nvdisasm_path: str | None = None
    cuobjdump_path: str | None = None
    nvcc_path: str | None = None
    timeout: float = 60.0
    source_text: str | None = None  # the .cu/.py the PTX's .loc lines point into (for the view)
    source_name: str | None = None


@dataclass
class SassEntry:
    name: str
    is_entry: bool
    instructions: list[SassInstruction]
    usage: EntryUsage | None = None
    instruction_count: int = 0
    class_counts: dict[str, int] = field(default_factory=dict)
    opcode_counts: dict[str, int] = field(default_factory=dict)
    labels: dict[int, list[str]] = field(default_factory=dict)

    @property
    def registers(self) -> int | None:
        return self.usage.registers if self.usage else None

    def by_ptx_line(self) -> dict[int, list[SassInstruction]]:
        lines: dict[int, list[SassInstruction]] = {}
        for instruction in self.instructions:
            if instruction.ptx_line is not None:
                lines.setdefault(instruction.ptx_line, []).append(instruction)
        return lines


@dataclass
class SassReport:
    ok: bool
    arch: str
    file_name: str
    ptx_text: str
    lines_map_to: str = "none"  # "ptx": PTX lines; "source": the .cu/.py too; "none": no lines
    entries: list[SassEntry] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # ptxas's words, lines of the original text
    # the errors are not the text's fault: a tool timed out, crashed or is missing
    cannot_run: bool = False
    tools: list[str] = field(default_factory=list)
    source_text: str | None = None
    source_name: str | None = None

    def entry(self, name: str) -> SassEntry | None:
        return next((e for e in self.entries if e.name == name), None)

    def find(self, kernel: str) -> SassEntry | None:
        """The function named `kernel`: its PTX name, or a CUDA kernel's plain name
        (``saxpy`` for ``_Z5saxpyfPKfPfi``)."""
        return self.entry(kernel) or next(
            (e for e in self.entries if plain_name(e.name) == kernel), None
        )

    def at_ptx_line(self, line: int) -> list[tuple[str, SassInstruction]]:
        """(function, instruction) for every SASS instruction from 1-based PTX line `line`."""
        return [
            (entry.name, instruction)
            for entry in self.entries
            for instruction in entry.instructions
            if instruction.ptx_line == line
        ]


async def sass_for_ptx(ptx_text: str, options: SassOptions = SassOptions()) -> SassReport:
    """Assemble `ptx_text` once with line info, disassemble, map each instruction to its line."""
    arch = options.arch or ptx_target(ptx_text) or DEFAULT_ARCH
    # discovery may probe binaries (--version): a worker thread, never the event loop
    ptxas = await asyncio.to_thread(find_ptxas, options.ptxas_path, needs_isa=ptx_version(ptx_text))
    disassembler = await asyncio.to_thread(
        find_disassembler, options.nvdisasm_path, options.cuobjdump_path
    )
    # the scan and the listing's reading are plain Python over megabytes for a big kernel:
    # worker threads, so a server's event loop keeps answering
    lined = await asyncio.to_thread(add_line_info, ptx_text, options.file_name)
    report = SassReport(
        ok=False,
        arch=arch,
        file_name=options.file_name,
        ptx_text=ptx_text,
        lines_map_to=lined.maps_to if disassembler.has_lines else "none",
        tools=[ptxas.describe(), disassembler.tool.describe()],
        source_text=options.source_text,
        source_name=options.source_name,
    )
    run = await run_ptxas(
        lined.text,
        tool=ptxas,
        arch=arch,
        extra_args=("-lineinfo", "-v"),
        want_cubin=True,
        timeout=options.timeout,
        file_name=options.file_name,
    )
    if run.timed_out or run.returncode != 0 or run.cubin is None:
        report.errors = _ptxas_errors(run, lined, options.timeout)
        report.cannot_run = run.timed_out or run.crashed
        return report
    usage = parse_ptxas_verbose(run.stderr + "\n" + run.stdout, arch)
    listing_run = await disassemble(run.cubin, disassembler, timeout=options.timeout)
    if listing_run.timed_out or listing_run.returncode != 0:
        name = disassembler.tool.name
        said = listing_run.stderr.strip()[:2000] or f"exit status {listing_run.returncode}"
        report.errors = [f"{name} failed: {'timed out' if listing_run.timed_out else said}"]
        report.cannot_run = True
        return report
    functions = (await asyncio.to_thread(parse_sass, listing_run.stdout)).functions
    report.entries = await asyncio.to_thread(_entries, functions, usage, lined, ptx_text)
    await _fill_missing_registers(report, run.cubin, options)
    report.ok = True
    return report


def plain_name(mangled: str) -> str:
    """``_Z7vec_addPKfS0_Pfi`` → ``vec_add``; other names come back unchanged."""
    m = re.match(r"_Z(\d+)", mangled)
    if not m:
        return mangled
    return mangled[m.end() : m.end() + int(m.group(1))] or mangled


def _ptxas_errors(run, lined: LineInfoText, timeout: float) -> list[str]:
    if run.timed_out:
        return [f"ptxas did not finish within {timeout:g} s"]
    said = [ln for ln in (run.stderr + "\n" + run.stdout).splitlines() if ln.strip()]
    said = [ln for ln in said if "ptxas info" not in ln and not ln.startswith("    ")]
    if lined.maps_to == "ptx":  # name the user's lines, not those of the text with .loc added
        said = [_LINE_REF.sub(lambda m: f"line {lined.original_line(int(m[1]))}", s) for s in said]
    said = list(dict.fromkeys(said))  # one line per distinct message (inlined code repeats them)
    return said[:50] or [f"ptxas exited with status {run.returncode}"]


def _entries(
    functions: list[SassFunction], usage: list[EntryUsage], lined: LineInfoText, ptx_text: str
) -> list[SassEntry]:
    by_name = {u.name: u for u in usage}
    order = {e.name: i for i, e in enumerate(find_entries(ptx_text))}
    entries = []
    for function in functions:
        instructions = [_ptx_mapped(i, lined) for i in function.instructions]
        entries.append(
            SassEntry(
                name=function.name,
                is_entry=function.is_entry or function.name in order,
                instructions=instructions,
                usage=by_name.get(function.name),
                instruction_count=function.instruction_count,
                class_counts=function.class_counts(),
                opcode_counts=function.opcode_counts(),
                labels=function.labels,
            )
        )
    entries.sort(key=lambda e: (not e.is_entry, order.get(e.name, len(order))))
    return entries


def _ptx_mapped(instruction: SassInstruction, lined: LineInfoText) -> SassInstruction:
    """`ptx_line` as a line of the user's PTX. When the .loc were ours, -g names those lines and
    -gp lines of the text with .loc added; else -gp names lines of the text as the user has it."""
    if lined.maps_to != "ptx":
        return instruction
    line = instruction.source_line
    if line is None and instruction.ptx_line is not None:
        line = lined.original_line(instruction.ptx_line)
    return replace(instruction, ptx_line=line, source_file=None, source_line=None)


async def _fill_missing_registers(report: SassReport, cubin: bytes, options: SassOptions) -> None:
    """ptxas -v names every function it compiles; when it did not (a tool that prints less),
    ask cuobjdump -res-usage, which reads the cubin's own .nv.info."""
    missing = [e for e in report.entries if e.registers is None]
    if not missing:
        return
    tool = await asyncio.to_thread(which_cuobjdump, options.cuobjdump_path)
    if tool is None:
        return
    try:
        res = await resource_usage(cubin, tool, timeout=options.timeout)
    except OSError:
        return
    found = parse_res_usage(res.stdout)
    for entry in missing:
        if entry.name in found:
            entry.usage = EntryUsage(
                name=entry.name,
                arch=report.arch,
                is_entry=entry.is_entry,
                registers=found[entry.name].registers,
                stack_frame=found[entry.name].stack or 0,
                shared_static=found[entry.name].shared or 0,
            )


async def sass_for_cuda(
    cu_text: str, options: SassOptions = SassOptions(), *, file_path: str | None = None
) -> SassReport:
    """nvcc -lineinfo -ptx first (its .loc name the .cu lines), then `sass_for_ptx`. A CUDA
    compile error comes back as the report's errors."""
    arch = options.arch or DEFAULT_ARCH
    nvcc = await asyncio.to_thread(find_nvcc, options.nvcc_path)
    run = await nvcc_to_ptx(
        cu_text,
        nvcc,
        file_path=file_path,
        arch=arch,
        extra_args=("-lineinfo", "-O3"),
        timeout=options.timeout,
    )
    if run.ptx is None:
        said = (run.result.stderr or run.result.stdout).replace(run.temp_dir + "/", "").strip()
        timed_out = f"nvcc did not finish within {options.timeout:g} s"
        return SassReport(
            ok=False,
            arch=arch,
            file_name=run.source_name,
            ptx_text="",
            errors=[timed_out] if run.result.timed_out else said.splitlines()[:50],
            cannot_run=run.result.timed_out or run.result.crashed,
        )
    ptx = run.ptx.replace(run.temp_dir + "/", "")  # the .file names the user's file, not ours
    name = run.source_name
    ptx_options = replace(
        options, arch=arch, file_name=f"{name}.ptx", source_text=cu_text, source_name=name
    )
    return await sass_for_ptx(ptx, ptx_options)
