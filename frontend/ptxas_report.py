"""The one reader of ``ptxas -v`` output: registers, spills, stack, shared and constant memory,
barriers and compile time per function. Running ptxas is the toolchain's (toolchain/ptxas.py);
what the numbers mean for occupancy is diagnostics/resources.py.

ptxas prints, per function (the shape has been stable across CUDA 11–13)::

    ptxas info    : 0 bytes gmem, 256 bytes cmem[3]
    ptxas info    : Compiling entry function '_Z6kernelPf' for 'sm_80'
    ptxas info    : Function properties for _Z6kernelPf
        952 bytes stack frame, 1904 bytes spill stores, 1940 bytes spill loads
    ptxas info    : Used 32 registers, used 1 barriers, 4096 bytes smem, 360 bytes cmem[0]
    ptxas info    : Compile time = 54.846 ms
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass
class EntryUsage:
    """``ptxas -v`` numbers for one function (bytes unless named otherwise)."""

    name: str
    arch: str
    is_entry: bool = True
    registers: int | None = None
    spill_stores: int = 0
    spill_loads: int = 0
    stack_frame: int = 0
    cumulative_stack: int = 0  # the frame plus what its callees need
    shared_static: int = 0
    constant: dict[int, int] = field(default_factory=dict)  # bank → bytes (cmem[0] = params)
    barriers: int = 0
    compile_ms: float | None = None
    block_size_hint: int | None = None  # threads from .reqntid/.maxntid, when the PTX says
    module_gmem: int = 0  # module-level .global bytes (shared by every function)
    module_constant: int = 0  # module-level .const bytes (cmem[3] and the like)

    @property
    def spills(self) -> bool:
        return bool(self.spill_stores or self.spill_loads)


_COMPILING = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
_PROPERTIES = re.compile(r"Function properties for '?([^'\s]+)'?")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_BARRIERS = re.compile(r"used (\d+) barriers")
_SMEM = re.compile(r"(\d+)(?:\+(\d+))? bytes smem")
_CMEM = re.compile(r"(\d+) bytes cmem\[(\d+)\]")
_CUMULATIVE = re.compile(r"(\d+) bytes cumulative stack size")
_GMEM = re.compile(r"(\d+) bytes gmem")
_TIME = re.compile(r"Compile time = ([\d.]+) ms")


def parse_ptxas_verbose(output: str, arch: str = "") -> list[EntryUsage]:
    """Every function ``ptxas -v`` reported, entries first, each in the order ptxas gave.

    Never raises: lines it does not know are skipped."""
    by_name: dict[str, EntryUsage] = {}
    order: list[str] = []
    current: EntryUsage | None = None  # the entry being compiled ("Used …" lines belong to it)
    props: EntryUsage | None = None  # the function whose frame line comes next
    gmem = module_cmem = 0

    def get(name: str, is_entry: bool) -> EntryUsage:
        if name not in by_name:
            by_name[name] = EntryUsage(name=name, arch=arch, is_entry=is_entry)
            order.append(name)
        u = by_name[name]
        u.is_entry = u.is_entry or is_entry
        return u

    for line in output.splitlines():
        if m := _COMPILING.search(line):
            current = get(m.group(1), True)
            current.arch = m.group(2)
            continue
        if m := _PROPERTIES.search(line):
            props = get(m.group(1), False)
        if (m := _FRAME.search(line)) and props is not None:
            props.stack_frame, props.spill_stores, props.spill_loads = map(int, m.groups())
            continue
        if (m := _GMEM.search(line)) and "Used" not in line:
            gmem = int(m.group(1))
            module_cmem = sum(int(c.group(1)) for c in _CMEM.finditer(line))
            continue
        if (m := _USED.search(line)) and current is not None:
            current.registers = int(m.group(1))
            if b := _BARRIERS.search(line):
                current.barriers = int(b.group(1))
            if s := _SMEM.search(line):
                current.shared_static = int(s.group(1)) + int(s.group(2) or 0)
            if c := _CUMULATIVE.search(line):
                current.cumulative_stack = int(c.group(1))
            current.constant = {int(c.group(2)): int(c.group(1)) for c in _CMEM.finditer(line)}
            continue
        if (m := _TIME.search(line)) and current is not None:
            current.compile_ms = float(m.group(1))
    found = [by_name[n] for n in order]
    compiled_for = next((u.arch for u in found if u.is_entry and u.arch), arch)
    for u in found:
        u.arch = u.arch or compiled_for
        u.module_gmem, u.module_constant = gmem, module_cmem
        if not u.cumulative_stack:
            u.cumulative_stack = u.stack_frame
    return [u for u in found if u.is_entry] + [u for u in found if not u.is_entry]


def entry_named(usage: list[EntryUsage], kernel: str | None = None) -> EntryUsage | None:
    """``kernel``'s usage, or the first entry's when ``kernel`` is None."""
    entries = [u for u in usage if u.is_entry]
    if kernel is None:
        return entries[0] if entries else None
    return next((u for u in usage if u.name == kernel), None)
