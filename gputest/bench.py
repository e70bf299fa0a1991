"""``ptxls bench``'s engine: each kernel at its benchmark sizes through the GPU test harness
(so every timed launch is verified and starts from the verified state), against the nvcc -O3
build of its CUDA reference and, where torch is importable on the GPU machine, PyTorch on the
same inputs. Plain Python returning dataclasses; the CLI (``cli/bench.py``) prints them.

Ratios are "times faster": ``nvcc time / our time`` and ``torch time / our time`` (> 1: ours
is faster). Memory-bound kernels report GB/s (the fewest bytes they must move, from the
spec's ``bench.bytes``) and that as a share of the copy bandwidth the worker measured on the
same GPU; compute-bound ones report TFLOP/s.
"""

from __future__ import annotations

import math
import subprocess
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ptxls.frontend.ptx import find_entries, ptx_target

from .api import run_gpu_test
from .library_spec import library_resolution, spec_json_beside
from .spec_source import SpecSource, resolve_spec

LIBRARY = Path(__file__).resolve().parent.parent / "fewshot" / "kernels"
BENCH_TIMEOUT_S = 90.0  # per harness step (one size: inputs, reference, launches, checks)


@dataclass
class BenchRow:
    kernel: str
    path: str
    status: str  # the GPU test's: pass | fail | no-gpu | ...
    n: int | None = None
    summary: str = ""
    bound: str = "memory"
    time_ms: float | None = None  # median of the timed launches
    min_ms: float | None = None
    max_ms: float | None = None
    runs: int = 0
    nvcc_ms: float | None = None
    nvcc_min_ms: float | None = None
    nvcc_max_ms: float | None = None
    vs_nvcc: float | None = None  # nvcc time / ours
    torch_op: str = ""
    torch_ms: float | None = None
    vs_torch: float | None = None  # torch time / ours
    torch_note: str = ""
    gbps: float | None = None
    ceiling_gbps: float | None = None
    pct_ceiling: float | None = None
    tflops: float | None = None
    flags: list[str] = field(default_factory=list)
    rerun_ms: float | None = None  # the shortcut probe: launched on its own previous output
    baseline_note: str = ""  # when the nvcc build itself was wrong
    device: dict = field(default_factory=dict)
    load_path: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def library_kernels(root: Path | None = None) -> dict[str, Path]:
    """name → kernel.ptx of every library folder that has one and a spec.json."""
    root = root or LIBRARY
    if not root.is_dir():
        return {}
    return {
        d.name: d / "kernel.ptx"
        for d in sorted(root.iterdir())
        if (d / "kernel.ptx").is_file() and (d / "spec.json").is_file()
    }


async def prepare_library(paths: list[str], supervisor=None, arch: str | None = None) -> int:
    """Every build the benchmark of ``paths`` needs (ptxas for each kernel, nvcc for each
    library reference), all at once before the first kernel runs: the GPU host's cores compile
    side by side, and each test then finds its builds in build.py's cache (keyed by source
    hash, arch and tool, exactly as the test asks). Returns how many builds ran; 0 without a
    GPU (the tests say why). ``arch``: as ``ptxls bench --arch`` (default: the device's)."""
    import asyncio

    from . import build
    from .api import _arch_for, gpu_available
    from .supervisor import shared_supervisor

    sup = supervisor or shared_supervisor()
    ok, _ = await gpu_available(sup)
    if not ok:
        return 0
    device_arch = (sup.device or {}).get("arch", "sm_90")
    jobs = []
    for path in paths:
        text = Path(path).read_text(errors="replace")
        target = arch or _arch_for(ptx_target(text), device_arch)
        jobs.append(build.assemble_ptx(text, target))
        beside = spec_json_beside(path)
        if beside is None:
            continue
        for entry in find_entries(text):
            res = library_resolution(text, entry.name, beside, explicit=False)
            if res is not None and res.reference_source:
                jobs.append(build.compile_cuda(res.reference_source, entry.name, target))
    await asyncio.gather(*jobs)
    return len(jobs)


def bench_sizes(ptx_text: str, kernel: str, ptx_path: str, spec_path: str | None) -> list[int]:
    """The spec's ``bench.sizes``, else its largest test size (the one that times the kernel
    rather than the launch)."""
    wanted = SpecSource("ptx", ptx_text, kernel, ptx_path, spec_file=spec_path or "",
                        spec_json_beside=True)  # fmt: skip
    spec = resolve_spec(wanted).spec
    if spec is None:
        return []
    sizes = (spec.bench or {}).get("sizes") or []
    if sizes:
        return [int(s) for s in sizes]
    return [max(spec.sizes)] if spec.sizes else []


async def bench_file(
    ptx_path: str,
    kernel: str | None = None,
    *,
    ref: str | None = None,
    spec_path: str | None = None,
    sizes: list[int] | None = None,
    on_progress: Callable[[str], None] | None = None,
    **kw,
) -> list[BenchRow]:
    """Every kernel of a .ptx file (or the one named) at its benchmark sizes."""
    path = Path(ptx_path)
    text = path.read_text(errors="replace")
    names = [kernel] if kernel else [e.name for e in find_entries(text)]
    ref_text = Path(ref).read_text(errors="replace") if ref else None
    rows = []
    for name in names:
        use = sizes or bench_sizes(text, name, str(path), spec_path)
        report = await run_gpu_test(
            text, name, ptx_path=str(path), reference_cuda=ref_text, reference_path=ref,
            sizes=use or None, spec_path=spec_path, torch_baseline=True, device="gpu",
            timeout_s=kw.pop("timeout_s", BENCH_TIMEOUT_S), on_progress=on_progress, **kw,
        )  # fmt: skip
        rows.append(row_from_report(report, str(path)))
    return rows


def row_from_report(report, path: str) -> BenchRow:
    row = BenchRow(report.kernel, path, report.status, summary=report.summary,
                   device=report.device, load_path=report.load_path)  # fmt: skip
    timed = [c for c in report.cases if c.time_ms or (c.timing or {}).get("flags")]
    case = max(timed, key=lambda c: c.n) if timed else (report.cases[-1] if report.cases else None)
    if case is None:
        return row
    t = case.timing or {}
    row.n = case.n
    row.flags = list(t.get("flags", []))
    row.rerun_ms = t.get("rerun_ms")
    if case.suspicious:
        row.flags += [m for m in case.messages if m.startswith("suspicious")]
    row.time_ms, row.min_ms, row.max_ms, row.runs = (
        case.time_ms, t.get("min_ms"), t.get("max_ms"), t.get("runs", 0))  # fmt: skip
    row.nvcc_ms, row.nvcc_min_ms, row.nvcc_max_ms = (
        case.ref_time_ms, t.get("ref_min_ms"), t.get("ref_max_ms"))  # fmt: skip
    if row.time_ms and row.nvcc_ms:
        row.vs_nvcc = row.nvcc_ms / row.time_ms
    if t.get("baseline") and t["baseline"] != "ok":
        row.baseline_note = f"the nvcc build is wrong: {t['baseline']}"
    if t.get("ref_wrong"):
        row.baseline_note = f"the nvcc build was wrong in a timed launch: {t['ref_wrong']}"
    row.torch_op = t.get("torch_op", "")
    row.torch_ms = t.get("torch_ms")
    if t.get("torch_error"):
        row.torch_note = t["torch_error"]
    elif t.get("torch_check") and t["torch_check"] != "ok":
        row.torch_note = f"torch result {t['torch_check']}"
    if row.time_ms and row.torch_ms:
        row.vs_torch = row.torch_ms / row.time_ms
    row.gbps = case.gbps
    row.ceiling_gbps = report.copy_ceiling_gbps
    if row.gbps and row.ceiling_gbps:
        row.pct_ceiling = 100 * row.gbps / row.ceiling_gbps
    row.tflops = t.get("tflops")
    row.bound = t.get("bound", "memory")
    return row


def geomean(values: list[float]) -> float | None:
    vals = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


def machine_facts(device: dict | None = None) -> dict:
    """Device, driver and clocks (nvidia-smi when present) for the results file."""
    facts = {
        "device": (device or {}).get("name", ""),
        "driver_cuda": (device or {}).get("driver_cuda", ""),
    }
    query = "name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.limit"
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20,
        )  # fmt: skip
        line = out.stdout.strip().splitlines()[0] if out.stdout.strip() else ""
        if line:
            keys = query.split(",")
            facts.update(dict(zip(keys, [v.strip() for v in line.split(",")], strict=False)))
    except (OSError, subprocess.SubprocessError, IndexError):
        pass
    return facts


def _ms(v: float | None) -> str:
    if v is None:
        return "—"
    return f"{v * 1000:.1f} µs" if v < 1 else f"{v:.3f} ms"


def _x(v: float | None) -> str:
    return f"{v:.2f}×" if v else "—"


def format_bench(rows: list[BenchRow], facts: dict | None = None) -> str:
    """A markdown table, one row per kernel, then the geometric mean and every flag/note."""
    lines = [
        "| kernel | n | result | time (median, min–max) | nvcc -O3 | vs nvcc | PyTorch | vs torch "
        "| rate | % of copy ceiling |",
        "|:---|---:|:---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        spread = f" ({_ms(r.min_ms)}–{_ms(r.max_ms)})" if r.min_ms is not None else ""
        rate = (f"{r.tflops:.1f} TFLOP/s" if r.tflops
                else f"{r.gbps:.0f} GB/s" if r.gbps else "—")  # fmt: skip
        pct = f"{r.pct_ceiling:.0f} %" if r.pct_ceiling and r.bound == "memory" else "—"
        result = r.status.upper() if r.status != "pass" else "pass"
        if r.flags:
            result += " (flagged)"
        lines.append(
            f"| {r.kernel} | {r.n if r.n is not None else '—'} | {result} | {_ms(r.time_ms)}{spread} "
            f"| {_ms(r.nvcc_ms)} | {_x(r.vs_nvcc)} | {_ms(r.torch_ms)} | {_x(r.vs_torch)} "
            f"| {rate} | {pct} |"
        )
    g = geomean([r.vs_nvcc for r in rows if r.vs_nvcc])
    lines.append("")
    if g:
        lines.append(f"geometric mean vs nvcc -O3: **{g:.2f}×** over "
                     f"{sum(1 for r in rows if r.vs_nvcc)} kernels")  # fmt: skip
    ceiling = next((r.ceiling_gbps for r in rows if r.ceiling_gbps), None)
    if ceiling:
        lines.append(
            f"copy ceiling measured on this GPU: {ceiling:.0f} GB/s (bytes read + written)"
        )
    for r in rows:
        for note in [*r.flags, r.baseline_note, r.torch_note]:
            if note:
                lines.append(f"- {r.kernel}: {note}")
        if r.status != "pass" and r.summary:
            lines.append(f"- {r.kernel}: {r.summary.splitlines()[0]}")
    if facts:
        shown = ", ".join(f"{k} {v}" for k, v in facts.items() if v)
        lines.append(f"_{shown}_")
    return "\n".join(lines)
