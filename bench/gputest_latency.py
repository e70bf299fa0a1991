"""Time from "Run GPU test" to the report for vec_add (6 cases, against nvcc), cold and warm.

cold: a new worker process (interpreter + cuInit + context + copy-ceiling measurement) and empty
build caches; warm: the same worker and cached builds, as a second click in the editor gets.
Writes JSON to --out (default bench/results/gputest-latency/<machine>-<date>.json) and prints a summary.
Targets (issue 3): ≤ 1 s warm, ≤ 2 s cold on the H200.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from ptxls.gputest import build
from ptxls.gputest.api import format_table, run_gpu_test
from ptxls.gputest.supervisor import Supervisor

from machine import gpu_name, result_path  # bench/ is the script's folder

ROOT = Path(__file__).resolve().parent.parent


async def one(sup: Supervisor, ptx: str, cu: str) -> tuple[float, object]:
    t0 = time.perf_counter()
    report = await run_gpu_test(ptx, "vec_add", reference_cuda=cu, reference_path="vec_add.cu",
                                supervisor=sup)  # fmt: skip
    return time.perf_counter() - t0, report


async def main(out: Path, warm_runs: int, cold_runs: int) -> int:
    ptx = (ROOT / "examples/vec_add.ptx").read_text()
    cu = (ROOT / "examples/vec_add.cu").read_text()
    cold, warm, last = [], [], None
    for _ in range(cold_runs):
        build._CACHE.clear()
        sup = Supervisor()
        try:
            dt, last = await one(sup, ptx, cu)
            cold.append(dt)
            for _ in range(warm_runs if not warm else 0):
                dt, last = await one(sup, ptx, cu)
                warm.append(dt)
        finally:
            await sup.close()
    result = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "gpu": gpu_name(),
        "device": last.device if last else {},
        "python": sys.version.split()[0],
        "cold_s": cold, "warm_s": warm,
        "cold_median_s": statistics.median(cold) if cold else None,
        "warm_median_s": statistics.median(warm) if warm else None,
        "status": last.status if last else None,
        "ratio_vs_nvcc": last.ratio if last else None,
        "gbps": last.timed_case.gbps if last and last.timed_case else None,
        "copy_ceiling_gbps": last.copy_ceiling_gbps if last else None,
        "phases_by_case": {str(c.n): c.phases for c in last.cases} if last else {},
        "table": format_table(last) if last else "",
    }  # fmt: skip
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(result["table"])
    print(
        f"\ncold (new worker, empty build cache): median {result['cold_median_s']:.3f} s of {cold}"
    )
    print(f"warm (same worker, cached builds):    median {result['warm_median_s']:.3f} s of {warm}")
    return 0 if last and last.passed else 1


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--warm", type=int, default=5)
    ap.add_argument("--cold", type=int, default=3)
    a = ap.parse_args()
    out = a.out or result_path("gputest-latency", "json")
    sys.exit(asyncio.run(main(out, a.warm, a.cold)))
