"""The offline, deterministic lowering: ``nvcc -ptx`` of the .cu, reduced to the kernel asked for.

nvcc names entries by their mangled C++ name (``_Z7vec_addPKfS0_Pfi``); the result is renamed
to the plain kernel name so it is called like the source and like an LLM lowering of it (the
header says so). nvcc writes the newest ``.version`` it knows (the pip wheel's 13.5: 9.5), which
an older driver's JIT refuses (the H200's CUDA 13.0 driver takes at most 9.0). The ``.version``
asked of the model (``target_isa.choose_target``: the local ptxas's highest, capped by this GPU's
measured driver) is the one nvcc's output is lowered to, when ptxas accepts the text at it; the
header says so.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field

from ptxls.frontend.ptx import parse_ptx, ptx_version, with_version
from ptxls.toolchain.discovery import ToolNotFound, find_nvcc, find_ptxas
from ptxls.toolchain.nvcc import nvcc_to_ptx

from .perf import Resources
from .ptx_check import PtxasUnavailable, compile_check
from .target_isa import choose_target


@dataclass
class NvccLowering:
    ok: bool
    ptx: str = ""
    message: str = ""
    tool: str = ""
    entry: str = ""  # the entry's name in ``ptx``
    notes: list[str] = field(default_factory=list)  # renames, version changes, dropped entries
    compile_summary: str = ""  # "ptxas: ok" on the result
    usage: Resources | None = None  # the entry's ptxas -v numbers, from that same check
    rejected: bool = False  # nvcc ran and found errors in the source (the user's code is wrong)


def plain_name(mangled: str) -> str:
    """``_Z7vec_addPKfS0_Pfi`` → ``vec_add``; extern "C" names come back unchanged."""
    m = re.match(r"_Z(\d+)", mangled)
    if not m:
        return mangled
    n, start = int(m.group(1)), m.end()
    return mangled[start : start + n] or mangled


def _entry_blocks(ptx: str) -> list[tuple[str, int, int]]:
    """(name, start, end) offsets of every .entry, from its directive line to its closing brace."""
    blocks = []
    for f in parse_ptx(ptx)[0].entries:
        start, end = f.offsets
        start = ptx.rfind("\n", 0, start) + 1
        # a "// .globl name" comment right above belongs to the entry (nvcc may put a blank
        # line between them)
        above = ptx[:start].rstrip()
        prev = above.rfind("\n") + 1
        if ".globl" in above[prev:]:
            start = prev
        blocks.append((f.name, start, end))
    return blocks


def select_entry(ptx: str, kernel: str | None, rename: bool = True) -> tuple[str, str, list[str]]:
    """Keep only ``kernel``'s entry (all entries when None); rename mangled → plain.
    Returns (ptx, entry name, notes); entry name "" when the kernel is not in the module."""
    notes: list[str] = []
    blocks = _entry_blocks(ptx)
    if kernel:
        wanted = [b for b in blocks if b[0] == kernel or plain_name(b[0]) == kernel]
        if not wanted:
            return ptx, "", [f"no entry for kernel '{kernel}' in nvcc's output"]
        if len(wanted) > 1:
            notes.append(f"{len(wanted)} overloads of '{kernel}': kept the first ({wanted[0][0]})")
        keep = wanted[0]
        for name, start, end in sorted((b for b in blocks if b is not keep), key=lambda b: -b[1]):
            ptx = ptx[:start] + ptx[end:]
            notes.append(f"dropped entry {name}")
        entry = keep[0]
    else:
        entry = blocks[0][0] if blocks else ""
    names = [entry] if kernel else [b[0] for b in blocks]
    if rename:
        plain_counts: dict[str, int] = {}
        for n in names:
            plain_counts[plain_name(n)] = plain_counts.get(plain_name(n), 0) + 1
        for n in names:
            p = plain_name(n)
            if p != n and plain_counts[p] == 1 and not re.search(rf"\b{re.escape(p)}\b", ptx):
                ptx = re.sub(rf"\b{re.escape(n)}", p, ptx)  # entry and its _param_N names
                notes.append(f"entry {n} renamed to {p}")
                if n == entry:
                    entry = p
    return re.sub(r"\n{3,}", "\n\n", ptx), entry, notes


async def _lower_version(ptx: str, arch: str, ptxas_path: str | None) -> tuple[str, str | None]:
    """Lower nvcc's ``.version`` to the one the model would be asked for (what the local ptxas
    and this GPU's driver take); keep it only if ptxas accepts the text there. (ptx, note)."""
    have = ptx_version(ptx)
    if have is None:
        return ptx, None
    try:
        tool = await asyncio.to_thread(find_ptxas, ptxas_path)  # may probe
    except ToolNotFound:
        return ptx, None
    target = await choose_target(arch, ptxas_path=ptxas_path)  # the loop's cached answer
    if target.problem:
        return ptx, None
    major, minor = (int(x) for x in target.isa.split("."))  # "9.0"
    cap = (major, minor)
    if have <= cap:
        return ptx, None
    lowered = with_version(ptx, cap)
    try:
        check = await compile_check(lowered, arch=arch, ptxas_path=tool.path)
    except PtxasUnavailable:
        return ptx, None
    if not check.ok:
        return (
            ptx,
            f".version {have[0]}.{have[1]} kept: at {target.isa} ptxas reports {check.summary()}",
        )
    return lowered, (
        f".version {have[0]}.{have[1]} (nvcc) lowered to {target.isa}, {target.why} "
        f"(checked with ptxas {tool.version})"
    )


async def lower_with_nvcc(
    cu_text: str,
    *,
    file_path: str | None = None,
    kernel: str | None = None,
    arch: str = "sm_90",
    nvcc_path: str | None = None,
    ptxas_path: str | None = None,
    rename: bool = True,
    timeout: float = 120.0,
) -> NvccLowering:
    """Compile ``cu_text`` with nvcc to PTX. Compile errors are data in the result's message."""
    try:
        nvcc = await asyncio.to_thread(find_nvcc, nvcc_path)  # may probe: never on the loop
    except ToolNotFound as e:
        return NvccLowering(False, message=str(e))
    try:
        run = await nvcc_to_ptx(cu_text, nvcc, file_path=file_path, arch=arch, timeout=timeout)
    except OSError as e:
        return NvccLowering(
            False, message=f"could not start {nvcc.path}: {e}", tool=nvcc.describe()
        )
    if run.result.timed_out:
        return NvccLowering(
            False, message=f"nvcc did not finish within {timeout:g} s", tool=nvcc.describe()
        )
    if run.ptx is None:
        err = (run.result.stderr or run.result.stdout).strip().replace(run.temp_dir + "/", "")
        return NvccLowering(
            False, message=f"nvcc failed:\n{err}", tool=nvcc.describe(), rejected=True
        )
    ptx = run.ptx
    ptx, entry, notes = select_entry(ptx, kernel, rename)
    if kernel and not entry:
        return NvccLowering(False, ptx, notes[0], nvcc.describe(), "", notes)
    ptx, note = await _lower_version(ptx, arch, ptxas_path)
    if note:
        notes.append(note)
    usage = None
    try:
        check = await compile_check(ptx, arch=arch, ptxas_path=ptxas_path)
        summary = f"{check.summary()} ({check.tool})"
        ok, usage = check.ok, check.resources(entry or None)
    except PtxasUnavailable as e:
        summary, ok = f"not assembled: {e}", True
    return NvccLowering(
        ok,
        ptx,
        "nvcc lowering " + ("done" if ok else "failed ptxas"),
        nvcc.describe(),
        entry,
        notes,
        summary,
        usage,
    )
