"""The offline, deterministic lowering: ``nvcc -ptx`` of the .cu, reduced to the kernel asked for.

nvcc names entries by their mangled C++ name (``_Z7vec_addPKfS0_Pfi``); the result is renamed
to the plain kernel name so it is called like the source and like an LLM lowering of it (the
header says so). nvcc from the pip wheel writes ``.version 9.5``, which the H200's driver JIT
refuses (docs/gpu-facts.md); when the local ptxas accepts the same text at a lower ``.version`` that the
driver takes, the version is lowered and the header says that too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ptxls.toolchain.discovery import ToolNotFound, find_nvcc, find_ptxas
from ptxls.toolchain.nvcc import nvcc_to_ptx

from .ptx_check import PtxasUnavailable, compile_check

# Highest PTX ISA a driver's JIT takes decides whether a lower .version is worth trying for files
# meant to be JIT-loaded (cubins work regardless). Asked of this GPU's driver when there is one;
# without a GPU, the CUDA 13.0 driver's limit (docs/gpu-facts.md).
DRIVER_MAX_ISA = (9, 0)  # the fallback when no GPU can be asked (CUDA 13.0 driver: <= 9.0)


async def _driver_cap() -> tuple[tuple[int, int], str]:
    """(max ISA of the JIT the PTX will meet, where that number comes from): this GPU's driver
    when there is one (measured, not assumed), else the CUDA 13.0 driver's documented 9.0."""
    import asyncio

    try:
        from ptxls.toolchain.gpu_probe import probe_gpu

        info = await asyncio.to_thread(probe_gpu)
    except Exception:  # noqa: BLE001 - no probe: the documented fallback
        info = None
    if info is not None and info.available and info.max_ptx_isa:
        return info.max_ptx_isa, f"this GPU's driver (CUDA {info.driver_cuda})"
    return DRIVER_MAX_ISA, "the CUDA 13.0 driver"


_ENTRY = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+([A-Za-z_$][\w$]*)", re.MULTILINE)
_VERSION = re.compile(r"^(\s*\.version\s+)(\d+)\.(\d+)", re.MULTILINE)


@dataclass
class NvccLowering:
    ok: bool
    ptx: str = ""
    message: str = ""
    tool: str = ""
    entry: str = ""  # the entry's name in ``ptx``
    notes: list[str] = field(default_factory=list)  # renames, version changes, dropped entries
    compile_summary: str = ""  # "ptxas: ok" on the result


def plain_name(mangled: str) -> str:
    """``_Z7vec_addPKfS0_Pfi`` → ``vec_add``; extern "C" names come back unchanged."""
    m = re.match(r"_Z(\d+)", mangled)
    if not m:
        return mangled
    n, start = int(m.group(1)), m.end()
    return mangled[start : start + n] or mangled


def _entry_blocks(ptx: str) -> list[tuple[str, int, int]]:
    """(name, start, end) of every .entry, from its directive line to its closing brace."""
    blocks = []
    for m in _ENTRY.finditer(ptx):
        start = ptx.rfind("\n", 0, m.start()) + 1
        # a "// .globl name" comment right above belongs to the entry
        prev = ptx.rfind("\n", 0, max(start - 1, 0)) + 1
        if ".globl" in ptx[prev:start]:
            start = prev
        brace = ptx.find("{", m.end())
        depth, end = 0, len(ptx)
        for i in range(brace, len(ptx)):
            if ptx[i] == "{":
                depth += 1
            elif ptx[i] == "}":
                depth -= 1
                if depth == 0:
                    end = i + 1
                    break
        blocks.append((m.group(1), start, end))
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
    """Try the highest .version both the local ptxas and the driver take; keep it only if ptxas
    accepts the text at that version. Returns (ptx, note)."""
    m = _VERSION.search(ptx)
    if not m:
        return ptx, None
    have = (int(m.group(2)), int(m.group(3)))
    try:
        tool = find_ptxas(ptxas_path)
    except ToolNotFound:
        return ptx, None
    driver_max, driver_words = await _driver_cap()
    cap = min(driver_max, tool.max_ptx_isa or driver_max)
    if have <= cap:
        return ptx, None
    lowered = _VERSION.sub(lambda mm: f"{mm.group(1)}{cap[0]}.{cap[1]}", ptx, count=1)
    try:
        check = await compile_check(lowered, arch=arch, ptxas_path=tool.path)
    except PtxasUnavailable:
        return ptx, None
    if not check.ok:
        return (
            ptx,
            f".version {have[0]}.{have[1]} kept: at {cap[0]}.{cap[1]} ptxas reports {check.summary()}",
        )
    return lowered, (
        f".version {have[0]}.{have[1]} (nvcc) lowered to {cap[0]}.{cap[1]} so {driver_words}'s "
        f"JIT and ptxas {tool.version} accept it (checked with ptxas)"
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
        nvcc = find_nvcc(nvcc_path)
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
        return NvccLowering(False, message=f"nvcc failed:\n{err}", tool=nvcc.describe())
    ptx = run.ptx
    ptx, entry, notes = select_entry(ptx, kernel, rename)
    if kernel and not entry:
        return NvccLowering(False, ptx, notes[0], nvcc.describe(), "", notes)
    ptx, note = await _lower_version(ptx, arch, ptxas_path)
    if note:
        notes.append(note)
    try:
        check = await compile_check(ptx, arch=arch, ptxas_path=ptxas_path)
        summary = f"{check.summary()} ({check.tool})"
        ok = check.ok
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
    )
