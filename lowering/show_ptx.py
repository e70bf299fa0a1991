""" "Show PTX for this kernel": nvcc's PTX for one kernel, with the CUDA source interleaved
(for a Triton kernel in a .py file: Triton's PTX with the Python lines, ``triton_reference``).

nvcc ``-lineinfo`` marks every instruction group with ``.loc FILE LINE COL``; before each group
whose source line changes we insert the source line as a comment, so a person reads the PTX
next to the CUDA it came from (the same view godbolt gives, in the editor).
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from pathlib import Path

from ptxls.frontend.languages import PYTHON, language_of
from ptxls.toolchain.discovery import ToolNotFound, find_nvcc
from ptxls.toolchain.nvcc import nvcc_to_ptx

from .nvcc_reference import select_entry

_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"', re.MULTILINE)
_LOC = re.compile(r"^(\s*)\.loc\s+(\d+)\s+(\d+)\s+\d+")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


@dataclass
class ShownPtx:
    ok: bool
    ptx: str = ""
    message: str = ""
    entry: str = ""
    mapped_lines: int = 0  # how many source lines the view points at


def interleave_source(ptx: str, source: str, source_name: str) -> tuple[str, int]:
    """Insert ``// name:LINE: text`` before each .loc that moves to a new line of ``source``."""
    main_ids = {fid for fid, path in _FILE.findall(ptx) if Path(path).name == source_name}
    src_lines = source.splitlines()
    out: list[str] = []
    last = None
    mapped: set[int] = set()
    for line in ptx.splitlines():
        m = _LOC.match(line)
        if m:
            n = int(m.group(3))
            if m.group(2) in main_ids and n != last and 1 <= n <= len(src_lines):
                # ptxas takes only ASCII, even in comments
                text = _NON_ASCII.sub("?", src_lines[n - 1].strip())
                out.append(f"{m.group(1)}// {source_name}:{n}: {text}")
                mapped.add(n)
                last = n
            continue  # .loc lines (also those into headers) are noise once the comment is there
        if (
            line.lstrip().startswith((".file", ".section"))
            or line.strip() == "}"
            and out
            and out[-1].strip().startswith(".section")
        ):
            continue
        out.append(line)
    return "\n".join(out) + "\n", len(mapped)


def _drop_debug_sections(ptx: str) -> str:
    """-lineinfo adds .section .debug_* blocks at the end; they are not for reading."""
    i = ptx.find("\t.section\t.debug")
    if i < 0:
        i = ptx.find(".section .debug")
    return ptx[:i].rstrip() + "\n" if i >= 0 else ptx


async def show_ptx(
    cu_text: str,
    *,
    kernel: str,
    file_path: str | None = None,
    arch: str = "sm_90",
    nvcc_path: str | None = None,
    timeout: float = 120.0,
) -> ShownPtx:
    if file_path and language_of(file_path) == PYTHON:
        return await show_triton_ptx(cu_text, kernel, file_path, arch, timeout)
    try:
        nvcc = await asyncio.to_thread(find_nvcc, nvcc_path)  # may probe: never on the loop
    except ToolNotFound as e:
        return ShownPtx(False, message=str(e))
    try:
        run = await nvcc_to_ptx(
            cu_text,
            nvcc,
            file_path=file_path,
            arch=arch,
            extra_args=("-lineinfo", "-O3"),
            timeout=timeout,
        )
    except OSError as e:
        return ShownPtx(False, message=f"could not start {nvcc.path}: {e}")
    name = run.source_name
    if run.result.timed_out:
        return ShownPtx(False, message=f"nvcc did not finish within {timeout:g} s")
    if run.ptx is None:
        err = (run.result.stderr or run.result.stdout).strip().replace(run.temp_dir + "/", "")
        return ShownPtx(False, message=f"nvcc failed:\n{err}")
    raw = run.ptx
    selected, entry, notes = select_entry(raw, kernel, rename=False)
    if not entry:
        return ShownPtx(
            False, message=notes[0] if notes else f"no kernel '{kernel}' in nvcc's output"
        )
    body, mapped = interleave_source(_drop_debug_sections(selected), cu_text, name)
    header = (
        f"// PTX of {kernel} from {name}, by {nvcc.describe()} -O3 -arch={arch} -lineinfo\n"
        f"// Each '// {name}:N:' comment is the CUDA line the instructions below it come from.\n"
        "// A view for reading: edits here are not written back to the source.\n"
    )
    return ShownPtx(
        True, header + body, f"{kernel}: PTX with {mapped} source lines mapped", entry, mapped
    )


async def show_triton_ptx(text: str, kernel: str, file_path: str, arch: str, timeout: float):
    """A Triton kernel: Triton's PTX (built from the kernel's own source, never running the
    file: lowering/triton_reference.py) with the Python lines from its ``.loc`` line info."""
    from ptxls.toolchain.triton_compile import source_name

    from .triton_reference import compile_kernel, drop_debug_sections

    build, result = await compile_kernel(text, kernel, file_path, arch, timeout)
    if not result.ok:
        return ShownPtx(False, message=result.message)
    assert build is not None  # compile_kernel returns a build with every result that is ok
    name = source_name(file_path)
    entry = (result.metadata or {}).get("name") or kernel
    body, mapped = interleave_source(drop_debug_sections(result.ptx), text, name)
    sig = " ".join(f"{k}={v}" for k, v in build.signature.items())
    consts = " ".join(f"{k}={v!r}" for k, v in build.constexprs.items())
    header = (
        f"// PTX of {kernel} from {name}, by Triton {result.version} for {arch}\n"
        f"// signature: {sig}; constexprs: {consts or 'none'}\n"
        f"// Each '// {name}:N:' comment is the Python line the instructions below it come from.\n"
        "// A view for reading: edits here are not written back to the source.\n"
    )
    return ShownPtx(
        True, header + body, f"{kernel}: PTX with {mapped} source lines mapped", entry, mapped
    )
