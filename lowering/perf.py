"""Performance feedback: what ``ptxas -v`` says about a kernel's resources, and the concrete ask
that follows from it and from its time against the nvcc-compiled source.

    ptxas info    : Used 12 registers, used 0 barriers, 128 bytes smem
        0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ptxls.toolchain.discovery import ToolNotFound, find_ptxas
from ptxls.toolchain.ptxas import run_ptxas


@dataclass
class Resources:
    registers: int | None = None
    spill_stores: int = 0  # bytes
    spill_loads: int = 0
    stack: int = 0
    smem: int = 0
    tool: str = ""

    def text(self) -> str:
        if self.registers is None:
            return "unknown (ptxas -v gave no usage)"
        spills = self.spill_stores + self.spill_loads
        return (
            f"{self.registers} registers, {spills} bytes spilled, {self.stack} bytes stack, "
            f"{self.smem} bytes shared memory"
        )


def parse_usage(output: str, kernel: str | None = None) -> Resources:
    """Usage of ``kernel`` (the first entry when None) from ``ptxas -v`` output."""
    res = Resources()
    current = None
    for line in output.splitlines():
        m = re.search(r"(?:Compiling entry function|Function properties for) '?([\w$]+)'?", line)
        if m:
            current = m.group(1)
            continue
        if kernel and current and current != kernel:
            continue
        m = re.search(
            r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line
        )
        if m:
            res.stack, res.spill_stores, res.spill_loads = map(int, m.groups())
        m = re.search(r"Used (\d+) registers", line)
        if m:
            res.registers = int(m.group(1))
            s = re.search(r"(\d+) bytes smem", line)
            res.smem = int(s.group(1)) if s else 0
    return res


async def resource_usage(
    ptx: str, kernel: str | None = None, *, arch: str = "sm_90", ptxas_path: str | None = None
) -> Resources:
    try:
        tool = find_ptxas(ptxas_path)
        run = await run_ptxas(ptx, tool=tool, arch=arch, extra_args=("-v",), timeout=60)
    except (ToolNotFound, OSError):
        return Resources()
    res = parse_usage(run.stderr + "\n" + run.stdout, kernel)
    res.tool = tool.describe()
    return res


def perf_feedback(
    res: Resources, kernel_ms: float | None, reference_ms: float | None, ptx: str = ""
) -> str:
    """A specific ask, not "make it faster"."""
    lines = [f"ptxas -v: {res.text()}."]
    if kernel_ms is not None and reference_ms:
        ratio = kernel_ms / reference_ms
        lines.append(
            f"Time on the largest test size: {kernel_ms:.3f} ms vs {reference_ms:.3f} ms for the nvcc-compiled source ({ratio:.2f}x)."
        )
    asks = []
    if res.spill_stores or res.spill_loads:
        asks.append("cut register use so nothing spills (reuse registers, shorten live ranges)")
    if (
        ptx
        and re.search(r"ld\.global(\.nc)?\.(f32|b32|u32|s32)\b", ptx)
        and not re.search(r"\.v[24]\.", ptx)
    ):
        asks.append(
            "vectorize the global loads and stores (ld.global.v4.f32 / st.global.v4.f32 on 16-byte aligned "
            "indices, with a scalar tail for the last n % 4 elements)"
        )
    if res.registers and res.registers > 64:
        asks.append(f"use fewer registers than {res.registers} so more warps fit per SM")
    if not asks:
        asks.append(
            "reduce the instructions per element (fewer address computations, fold constants, "
            "use fma) and process several elements per thread"
        )
    lines.append("Make it faster: " + "; ".join(asks) + ".")
    lines.append(
        "Keep exactly the same results, entry name and parameters; reply with the whole module in one ```ptx block."
    )
    return "\n".join(lines)
