"""Turn a ``ptxls bench --json`` run into the committed results: the table and the JSON (with
the machine facts) under bench/results/, and ``fewshot/measured.json``, the figures the editor
shows beside each library kernel.

    python3 bench/library_publish.py RUN.json [--name library-h200]
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

from ptxls.gputest.bench import BenchRow, format_bench

ROOT = Path(__file__).resolve().parent.parent

KEEP = ("n", "status", "time_ms", "nvcc_ms", "torch_ms", "vs_nvcc", "vs_torch", "gbps",
        "pct_ceiling", "tflops")  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("run", help="the JSON ptxls bench --json wrote")
    ap.add_argument("--name", default="library-h200")
    ap.add_argument("--date", default=datetime.date.today().isoformat())
    args = ap.parse_args()
    data = json.loads(Path(args.run).read_text())
    rows = [BenchRow(**r) for r in data["rows"]]
    machine = data.get("machine", {})
    results = ROOT / "bench" / "results"
    (results / f"{args.name}.json").write_text(json.dumps(data, indent=2) + "\n")
    (results / f"{args.name}.md").write_text(
        f"# ptxls bench — the kernel library on {machine.get('name') or machine.get('device')}"
        f" ({args.date})\n\n" + format_bench(rows, machine) + "\n"
    )
    measured = {
        "device": machine.get("name") or machine.get("device", ""),
        "driver": machine.get("driver_version", ""),
        "date": args.date,
        "source": f"bench/results/{args.name}.json",
        "kernels": {
            r.kernel: {k: getattr(r, k) for k in KEEP}
            for r in rows
            if r.status == "pass" and r.time_ms and not r.flags
        },
    }
    (ROOT / "fewshot" / "measured.json").write_text(json.dumps(measured, indent=2) + "\n")
    print(format_bench(rows, machine))
    return 0


if __name__ == "__main__":
    sys.exit(main())
