"""Performance feedback: what ``ptxas -v`` says about a kernel's resources (read by
``ptxls.frontend.ptxas_report`` from the compile check's own run), and the concrete ask that
follows from it and from its time against the nvcc-compiled source."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ptxls.frontend.ptxas_report import EntryUsage


@dataclass
class Resources:
    registers: int | None = None
    spill_stores: int = 0  # bytes
    spill_loads: int = 0
    stack: int = 0
    smem: int = 0
    tool: str = ""

    @classmethod
    def from_usage(cls, usage: EntryUsage | None, tool: str = "") -> Resources:
        """One function's ``ptxas -v`` numbers (none known when ``usage`` is None)."""
        if usage is None:
            return cls(tool=tool)
        return cls(
            registers=usage.registers,
            spill_stores=usage.spill_stores,
            spill_loads=usage.spill_loads,
            stack=usage.stack_frame,
            smem=usage.shared_static,
            tool=tool,
        )

    def text(self) -> str:
        if self.registers is None:
            return "unknown (ptxas -v gave no usage)"
        spills = self.spill_stores + self.spill_loads
        return (
            f"{self.registers} registers, {spills} bytes spilled, {self.stack} bytes stack, "
            f"{self.smem} bytes shared memory"
        )


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
