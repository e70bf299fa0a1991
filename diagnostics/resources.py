"""What a kernel costs the SM: ``ptxas -v`` usage per function (read by
``ptxls.frontend.ptxas_report``) and the occupancy it implies.

Occupancy follows the CUDA occupancy calculator (``cuda_occupancy.h`` of CUDA 13.x, the
functions named in ``ArchLimits``): registers are allocated per warp in units of 256 and split
over 4 sub-partitions; shared memory is allocated per block in units of 128 bytes (256 on
Volta/Turing) plus 1 KB the driver reserves per block from Ampere on. The per-SM totals (resident
threads, shared memory, opt-in shared memory per block) are the CUDA C++ Programming Guide's
"Technical Specifications per Compute Capability" table (sm_87, whose row we could not confirm,
is left out rather than guessed). Only static shared memory is known
from ptxas; dynamic shared memory is whatever the launch passes, so it can be given.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass

from ptxls.frontend.demangle import readable
from ptxls.frontend.ptx import parse_ptx, scan_header
from ptxls.frontend.ptxas_report import EntryUsage, parse_ptxas_verbose
from ptxls.toolchain.discovery import find_ptxas
from ptxls.toolchain.ptxas import run_ptxas

DEFAULT_BLOCK_SIZE = 256
WARP = 32


@dataclass(frozen=True)
class ArchLimits:
    """Per-SM limits of one compute capability."""

    max_threads_per_sm: int  # Programming Guide table
    max_blocks_per_sm: int  # cudaOccMaxBlocksPerMultiprocessor
    smem_per_sm: int  # bytes, the largest carveout (Programming Guide; cudaOccAlignUpShmemSize…)
    smem_per_block_optin: int  # bytes a block may opt in to (Programming Guide)
    reserved_smem_per_block: int  # bytes the driver keeps per block (1 KB from sm_80)
    smem_alloc_unit: int  # cudaOccSMemAllocationGranularity
    barriers_per_block_slot: int  # cudaOccMaxBlocksPerSMBlockBarrierLimit: 2 or 1 per block
    regs_per_sm: int = 65536
    regs_per_block: int = 65536
    max_regs_per_thread: int = 255  # what ptxas will allocate (the header's 256 counts R255)
    reg_alloc_unit: int = 256  # registers per warp, cudaOccRegAllocationGranularity
    sub_partitions: int = 4  # cudaOccSubPartitionsPerMultiprocessor

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // WARP


_KB = 1024
ARCH_LIMITS: dict[int, ArchLimits] = {
    70: ArchLimits(2048, 32, 96 * _KB, 96 * _KB, 0, 256, 2),
    72: ArchLimits(2048, 32, 96 * _KB, 96 * _KB, 0, 256, 2),
    75: ArchLimits(1024, 16, 64 * _KB, 64 * _KB, 0, 256, 2),
    80: ArchLimits(2048, 32, 164 * _KB, 163 * _KB, _KB, 128, 2),
    86: ArchLimits(1536, 16, 100 * _KB, 99 * _KB, _KB, 128, 1),
    89: ArchLimits(1536, 24, 100 * _KB, 99 * _KB, _KB, 128, 1),
    90: ArchLimits(2048, 32, 228 * _KB, 227 * _KB, _KB, 128, 2),
    100: ArchLimits(2048, 32, 228 * _KB, 227 * _KB, _KB, 128, 2),
    103: ArchLimits(2048, 32, 228 * _KB, 227 * _KB, _KB, 128, 1),
    120: ArchLimits(1536, 24, 100 * _KB, 99 * _KB, _KB, 128, 1),
    121: ArchLimits(1536, 24, 100 * _KB, 99 * _KB, _KB, 128, 1),
}


def arch_number(arch: str) -> int | None:
    """sm_90a → 90; None for anything that is not sm_NN."""
    m = re.fullmatch(r"(?:sm|compute)_(\d+)[af]?", arch.strip())
    return int(m.group(1)) if m else None


def limits_for(arch: str) -> ArchLimits | None:
    n = arch_number(arch)
    return ARCH_LIMITS.get(n) if n is not None else None


@dataclass
class Occupancy:
    block_size: int
    dynamic_smem: int
    blocks_per_sm: int
    active_warps: int
    max_warps: int
    limited_by: list[str]  # the limits that set blocks_per_sm ("registers", "shared memory" …)
    limits: dict[str, int]  # blocks per SM each resource alone allows
    note: str = ""  # why no block fits, when none does

    @property
    def percent(self) -> float:
        return 100.0 * self.active_warps / self.max_warps if self.max_warps else 0.0


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def occupancy(
    registers: int,
    shared_static: int,
    barriers: int,
    block_size: int,
    limits: ArchLimits,
    dynamic_smem: int = 0,
) -> Occupancy:
    """Resident blocks and warps per SM, as cudaOccMaxActiveBlocksPerMultiprocessor computes
    them with the default carveout (the driver picks the largest shared memory it needs)."""
    warps_per_block = max(1, -(-block_size // WARP))
    result = {}
    note = ""
    # Warps and blocks the SM can hold at all.
    result["warps"] = limits.max_warps_per_sm // warps_per_block
    result["blocks"] = limits.max_blocks_per_sm
    # Registers: per warp, in allocation units, per sub-partition.
    regs_per_warp = _round_up(max(registers, 1) * WARP, limits.reg_alloc_unit)
    regs_assumed = regs_per_warp * _round_up(warps_per_block, limits.sub_partitions)
    if registers > limits.max_regs_per_thread or regs_assumed > limits.regs_per_block:
        result["registers"] = 0
        note = f"{registers} registers × {block_size} threads exceed the per-block register file"
    else:
        per_sub = (limits.regs_per_sm // limits.sub_partitions) // regs_per_warp
        result["registers"] = (per_sub * limits.sub_partitions) // warps_per_block
    # Shared memory: static + dynamic + the driver's reserve, rounded to the allocation unit.
    smem = _round_up(
        shared_static + dynamic_smem + limits.reserved_smem_per_block, limits.smem_alloc_unit
    )
    if smem - limits.reserved_smem_per_block > limits.smem_per_block_optin:
        result["shared memory"] = 0
        note = f"{smem} bytes of shared memory per block exceed the {limits.smem_per_block_optin} a block may use"
    else:
        result["shared memory"] = limits.smem_per_sm // smem if smem else 1 << 30
    if barriers:
        result["barriers"] = limits.max_blocks_per_sm * limits.barriers_per_block_slot // barriers
    if block_size > 1024:
        result["warps"] = 0
        note = f"a block has at most 1024 threads, not {block_size}"
    blocks = min(result.values())
    return Occupancy(
        block_size=block_size,
        dynamic_smem=dynamic_smem,
        blocks_per_sm=blocks,
        active_warps=blocks * warps_per_block,
        max_warps=limits.max_warps_per_sm,
        limited_by=[k for k, v in result.items() if v == blocks],
        limits=result,
        note=note,
    )


def entry_occupancy(
    usage: EntryUsage, block_size: int | None = None, dynamic_smem: int = 0
) -> Occupancy | None:
    """The occupancy one function's ``ptxas -v`` numbers allow: at ``block_size`` threads, else
    the block size its PTX declares, else DEFAULT_BLOCK_SIZE. None when the registers are unknown
    or the arch is not in ARCH_LIMITS."""
    limits = limits_for(usage.arch)
    if limits is None or usage.registers is None:
        return None
    size = block_size or usage.block_size_hint or DEFAULT_BLOCK_SIZE
    return occupancy(
        usage.registers, usage.shared_static, usage.barriers, size, limits, dynamic_smem
    )


def block_size_hints(text: str) -> dict[str, int]:
    """Threads per block each entry declares (.reqntid, else .maxntid), by entry name."""
    module, _ = parse_ptx(text)
    return block_size_hints_of(module)


def block_size_hints_of(module) -> dict[str, int]:  # a PtxModule
    hints = {}
    for f in module.entries:
        for key in ("reqntid", "maxntid"):
            dims = re.findall(r"\d+", f.directives.get(key, ""))
            if dims:
                n = 1
                for d in dims:
                    n *= int(d)
                hints[f.name] = n
                break
    return hints


@dataclass
class UsageReport:
    entries: list[EntryUsage]
    tool: str = ""
    arch: str = ""
    error: str = ""  # ptxas's own words when it refused the PTX (then entries is empty)


async def usage_report(
    text: str, arch: str, ptxas_path: str | None = None, timeout: float = 60.0
) -> UsageReport:
    """Run ``ptxas -v`` on ``text`` for ``arch``. Raises ToolNotFound when there is no ptxas and
    OSError when it cannot start; PTX that ptxas rejects comes back as ``error``."""
    version, _ = scan_header(text)
    # discovery may probe the binary (--version): a worker thread, never the event loop
    tool = await asyncio.to_thread(find_ptxas, ptxas_path, needs_isa=version)
    run = await run_ptxas(text, tool=tool, arch=arch, extra_args=("-v",), timeout=timeout)
    report = UsageReport(entries=[], tool=tool.describe(), arch=arch)
    if run.timed_out:
        report.error = f"ptxas -v did not finish within {timeout:g} s"
        return report
    if run.returncode != 0:
        lines = [ln for ln in (run.stderr + run.stdout).splitlines() if "info" not in ln]
        report.error = "\n".join(lines[:20]) or f"ptxas exited with {run.returncode}"
        return report
    report.entries = parse_ptxas_verbose(run.stderr + "\n" + run.stdout, arch)
    hints = block_size_hints(text)
    for u in report.entries:
        u.block_size_hint = hints.get(u.name)
    return report


def _kb(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KB"


def format_usage_markdown(
    usage: EntryUsage | list[EntryUsage], block_size: int | None = None, dynamic_smem: int = 0
) -> str:
    """A hover-sized summary: one block per function, occupancy for entries."""
    items = usage if isinstance(usage, list) else [usage]
    parts = []
    for u in items:
        kind = "kernel" if u.is_entry else "function"
        lines = [f"**{kind} `{readable(u.name)}`** — ptxas -v, {u.arch}"]  # CUDA: demangled
        if u.registers is not None:
            lines.append(f"- registers: {u.registers} per thread")
        spill = f"**{u.spill_stores} B stored, {u.spill_loads} B loaded**" if u.spills else "none"
        lines.append(f"- spills: {spill}; stack frame {_kb(u.stack_frame)}")
        if u.is_entry:
            lines.append(f"- shared memory (static): {_kb(u.shared_static)}")
            if u.constant:
                banks = ", ".join(f"cmem[{b}] {_kb(n)}" for b, n in sorted(u.constant.items()))
                lines.append(f"- constant memory: {banks}")
            lines.append(f"- barriers: {u.barriers}")
        if u.compile_ms is not None:
            lines.append(f"- compile time: {u.compile_ms:g} ms")
        occ = entry_occupancy(u, block_size, dynamic_smem) if u.is_entry else None
        if occ is not None:
            src = (
                "given"
                if block_size
                else ("from .reqntid/.maxntid" if u.block_size_hint else "default")
            )
            lines.append(
                f"- occupancy at {occ.block_size} threads/block ({src}): "
                f"{occ.blocks_per_sm} blocks, {occ.active_warps}/{occ.max_warps} warps per SM "
                f"({occ.percent:.0f}%), limited by {', '.join(occ.limited_by)}"
            )
            if occ.note:
                lines.append(f"- {occ.note}")
        elif u.is_entry and limits_for(u.arch) is None:
            lines.append(f"- occupancy: no per-SM limits known for {u.arch}")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)
