"""Turn ``ptxls bench --json`` runs into the committed results: the table and the JSON (with
the machine facts) under bench/results/, and ``fewshot/measured.json``, the figures the editor
shows beside each library kernel.

    python3 bench/library_publish.py RUN.json [LATER_RUN.json ...] [--machine h200]

writes bench/results/library/<machine>-<date>.{json,md} (--name: another benchmark folder).

With several runs, a kernel's row comes from the last run that has it (a kernel changed after
the first run is measured again in a later one); every row's ratios are still from one run —
ours, the nvcc build and PyTorch side by side — and the table says which run each row is from.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

from ptxls.gputest.bench import BenchRow, format_bench, geomean

ROOT = Path(__file__).resolve().parent.parent

KEEP = ("n", "status", "time_ms", "nvcc_ms", "torch_ms", "vs_nvcc", "vs_torch", "gbps",
        "pct_ceiling", "tflops")  # fmt: skip


def merge(runs: list[tuple[str, dict]]) -> tuple[list[BenchRow], dict, dict[str, str]]:
    """Rows by kernel, the last run's winning; the last run's machine facts; kernel → run."""
    by_kernel: dict[str, BenchRow] = {}
    source: dict[str, str] = {}
    machine: dict = {}
    fields = set(BenchRow.__dataclass_fields__)
    for name, data in runs:
        machine = data.get("machine", machine)
        for r in data["rows"]:
            by_kernel[r["kernel"]] = BenchRow(**{k: v for k, v in r.items() if k in fields})
            source[r["kernel"]] = name
    return [by_kernel[k] for k in sorted(by_kernel)], machine, source


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+", help="the JSON ptxls bench --json wrote, oldest first")
    ap.add_argument("--name", default="library", help="the benchmark folder under bench/results")
    ap.add_argument("--machine", default="h200")
    ap.add_argument("--date", default=datetime.date.today().isoformat())
    args = ap.parse_args()
    runs = [(Path(p).name, json.loads(Path(p).read_text())) for p in args.runs]
    rows, machine, source = merge(runs)
    results = ROOT / "bench" / "results" / args.name
    results.mkdir(parents=True, exist_ok=True)
    stem = f"{args.machine}-{args.date}"
    data = {"machine": machine, "geomean_vs_nvcc": geomean([r.vs_nvcc for r in rows]),
            "runs": [name for name, _ in runs], "row_from": source,
            "rows": [r.to_dict() for r in rows]}  # fmt: skip
    (results / f"{stem}.json").write_text(json.dumps(data, indent=2, default=str) + "\n")
    table = format_bench(rows, machine)
    if len(runs) > 1:
        table += "\n\nEach row from one run (ours, nvcc and PyTorch side by side): " + "; ".join(
            f"{k}: {v}" for k, v in sorted(source.items())
        )
    (results / f"{stem}.md").write_text(
        f"# ptxls bench — the kernel library on {machine.get('name') or machine.get('device')}"
        f" ({args.date})\n\n" + table + "\n"
    )
    measured = {
        "device": machine.get("name") or machine.get("device", ""),
        "driver": machine.get("driver_version", ""),
        "date": args.date,
        "source": f"bench/results/{args.name}/{stem}.json",
        "kernels": {
            r.kernel: {k: getattr(r, k) for k in KEEP}
            for r in rows
            if r.status == "pass" and r.time_ms and not r.flags
        },
    }
    (ROOT / "fewshot" / "measured.json").write_text(json.dumps(measured, indent=2) + "\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
