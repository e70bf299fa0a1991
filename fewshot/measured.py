"""The library's measured figures, as the editor shows them ("verified softmax, 1.12× nvcc on
H200"): ``measured.json`` beside this file, written from a committed ``ptxls bench`` run by
``bench/library_publish.py``. Reading never raises: no file, or a kernel not in it, reads as
"not measured yet".
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

MEASURED = Path(__file__).resolve().parent / "measured.json"


@dataclass(frozen=True)
class Figures:
    kernel: str
    device: str  # "NVIDIA H200"
    n: int | None = None
    status: str = ""
    time_ms: float | None = None
    nvcc_ms: float | None = None
    torch_ms: float | None = None
    vs_nvcc: float | None = None
    vs_torch: float | None = None
    gbps: float | None = None
    pct_ceiling: float | None = None
    tflops: float | None = None
    measured_on: str = ""  # date of the run

    @property
    def short_device(self) -> str:
        return self.device.replace("NVIDIA ", "") or "GPU"

    def one_line(self) -> str:
        """'1.12× nvcc, 1.30× PyTorch on H200' (only what was measured)."""
        bits = []
        if self.vs_nvcc:
            bits.append(f"{self.vs_nvcc:.2f}× nvcc")
        if self.vs_torch:
            bits.append(f"{self.vs_torch:.2f}× PyTorch")
        if not bits:
            return f"measured on {self.short_device}"
        return ", ".join(bits) + f" on {self.short_device}"

    def markdown(self) -> str:
        def ms(v):
            return "—" if v is None else (f"{v * 1000:.1f} µs" if v < 1 else f"{v:.3f} ms")

        rows = [f"**{self.kernel}** — {self.one_line()}", "", "| | |", "|:--|--:|"]
        rows.append(f"| size n | {self.n} |")
        rows.append(f"| time (median) | {ms(self.time_ms)} |")
        if self.nvcc_ms:
            rows.append(f"| nvcc -O3 of reference.cu | {ms(self.nvcc_ms)} ({self.vs_nvcc:.2f}×) |")
        if self.torch_ms:
            rows.append(f"| PyTorch | {ms(self.torch_ms)} ({self.vs_torch:.2f}×) |")
        if self.tflops:
            rows.append(f"| rate | {self.tflops:.1f} TFLOP/s |")
        elif self.gbps:
            pct = f" ({self.pct_ceiling:.0f} % of copy)" if self.pct_ceiling else ""
            rows.append(f"| bandwidth | {self.gbps:.0f} GB/s{pct} |")
        rows += ["", f"_{self.device}, {self.measured_on}; every timed launch verified_"]
        return "\n".join(rows)


def load_measured(path: Path | None = None) -> dict[str, Figures]:
    path = path or MEASURED
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or not isinstance(data.get("kernels"), dict):
        return {}
    known = set(Figures.__dataclass_fields__) - {"kernel", "device", "measured_on"}
    out = {}
    for name, fig in data["kernels"].items():
        if isinstance(fig, dict):
            values = {k: v for k, v in fig.items() if k in known}
            out[name] = Figures(name, str(data.get("device", "")),
                                measured_on=str(data.get("date", "")), **values)  # fmt: skip
    return out
