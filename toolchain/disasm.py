"""Finding and running the disassemblers: nvdisasm (SASS with line info) and cuobjdump.

Search order, as for ptxas: an explicit path (setting or --nvdisasm flag) → PTXLS_NVDISASM /
PTXLS_CUOBJDUMP → PATH → the ``nvidia-cuda-nvdisasm`` / ``nvidia-cuda-cuobjdump`` wheels (they
install into the same ``nvidia/cu13/bin`` folder as the nvcc wheel's ptxas). Both run as killable
processes with byte-capped output, like ptxas.

nvdisasm is preferred: with ``-g`` it names the source line of each SASS instruction (the
``.file``/``.loc`` of the PTX) and with ``-gp`` the PTX line (from the ``.nv_debug_line_sass``
section ``ptxas -lineinfo`` writes). cuobjdump ``-sass`` is the fallback: the same instructions
without lines. ``cuobjdump -res-usage`` gives registers, stack and shared memory per function.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .discovery import Tool, ToolNotFound, find_tool
from .process import ProcessResult, run_killable

WHEELS = {"nvdisasm": "nvidia-cuda-nvdisasm", "cuobjdump": "nvidia-cuda-cuobjdump"}
DISASM_OUTPUT_BYTES = 64 << 20  # a large kernel's listing with line comments is tens of MB


def _find(name: str, explicit: str | None) -> Tool:
    try:
        tool = find_tool(name, explicit)
    except ToolNotFound as exc:
        raise ToolNotFound(how_to_get(name, str(exc))) from None
    if tool.origin == "nvidia-cuda-nvcc wheel":  # discovery names the folder by ptxas's wheel
        tool = dataclasses.replace(tool, origin=f"{WHEELS[name]} wheel")
    return tool


def how_to_get(name: str, reason: str = "") -> str:
    """The sentence a user reads when `name` is missing."""
    asked = reason.startswith(("the configured", f"PTXLS_{name.upper()}="))
    first = reason.split("; ")[0].split(". ")[0] if asked else f"{name} not found"
    return (
        f"{first}. Install it with 'pip install {WHEELS[name]}' (in the environment ptxls runs "
        f"in), put a CUDA toolkit's bin/ on PATH, or set PTXLS_{name.upper()} to the binary."
    )


def find_nvdisasm(explicit: str | None = None) -> Tool:
    """Raises ToolNotFound (its message says how to get one) when none is usable."""
    return _find("nvdisasm", explicit)


def find_cuobjdump(explicit: str | None = None) -> Tool:
    return _find("cuobjdump", explicit)


@dataclass(frozen=True)
class Disassembler:
    """The tool that will read a cubin and what it can tell."""

    tool: Tool
    has_lines: bool  # nvdisasm: lines per instruction; cuobjdump: instructions only


def find_disassembler(nvdisasm: str | None = None, cuobjdump: str | None = None) -> Disassembler:
    """nvdisasm when there is one, else cuobjdump; ToolNotFound (saying how to get nvdisasm)
    when neither is usable. A configured path that does not exist is an error, not skipped."""
    try:
        return Disassembler(find_nvdisasm(nvdisasm), has_lines=True)
    except ToolNotFound as missing:
        if nvdisasm or os.environ.get("PTXLS_NVDISASM"):
            raise  # the person asked for that binary: say it is missing, use no other
        try:
            return Disassembler(find_cuobjdump(cuobjdump), has_lines=False)
        except ToolNotFound:
            raise missing from None


def listing_args(disassembler: Disassembler, cubin_path: str) -> list[str]:
    if disassembler.has_lines:
        # code only; source lines (-g) and PTX lines (-gp) as "//## File ..., line N" comments
        return [disassembler.tool.path, "-c", "-g", "-gp", cubin_path]
    return [disassembler.tool.path, "-sass", cubin_path]


async def _run_on_cubin(
    args_for: Callable[[str], list[str]], cubin: bytes, timeout: float
) -> ProcessResult:
    with tempfile.TemporaryDirectory(prefix="ptxls-sass-") as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        return await run_killable(args_for(str(path)), timeout=timeout, cap=DISASM_OUTPUT_BYTES)


async def disassemble(
    cubin: bytes, disassembler: Disassembler, *, timeout: float = 60.0
) -> ProcessResult:
    """The SASS listing of `cubin`. Raises OSError only when the tool cannot be started."""
    return await _run_on_cubin(lambda p: listing_args(disassembler, p), cubin, timeout)


async def resource_usage(cubin: bytes, tool: Tool, *, timeout: float = 30.0) -> ProcessResult:
    """``cuobjdump -res-usage``: REG/STACK/SHARED/LOCAL per function."""
    return await _run_on_cubin(lambda p: [tool.path, "-res-usage", p], cubin, timeout)


def which_cuobjdump(explicit: str | None = None) -> Tool | None:
    try:
        return find_cuobjdump(explicit)
    except ToolNotFound:
        return None
