"""Where `ptxls bench` over the whole library spends its time, per kernel: the parent's spans
(``build``: ptxas and nvcc, a cache hit ~0; ``hello``; ``worker_request``: the request's round
trip) and the harness's laps summed over the kernel's bench sizes (``inputs``, ``upload``,
``kernel``, ``download``, ``reference``, ``check``, ``baseline``, ``timed_setup``,
``timed_launches``, ``timed_inputs_check``, ``shortcut_probe``, ``timing``: the reference's and
PyTorch's timing), ``worker_other`` = worker_request minus the laps; and each kernel's timed
launches' spread (max / median). It runs `ptxls bench`'s own engine (cli/bench.py's loop, one
shared worker), so its wall is the bench's.

    python bench/library_profile.py [KERNEL ...] --out FILE.json   # on the GPU host
    python bench/library_profile.py --report BEFORE.json AFTER.json  # the markdown, side by side
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import gputest_profile as prof  # bench/ is the script's folder (instruments the api)

from ptxls.gputest import bench as gbench
from ptxls.gputest.supervisor import shared_supervisor

from machine import gpu_name, result_path


async def main(names: list[str]) -> dict:
    prof.instrument()
    reports = []
    row_from_report = gbench.row_from_report

    def keep(report, path):
        reports.append(report)
        return row_from_report(report, path)

    gbench.row_from_report = keep
    lib = gbench.library_kernels()
    todo = [(n, lib[n]) for n in (names or list(lib))]
    kernels = []
    t_all = time.perf_counter()
    try:
        prepare = getattr(gbench, "prepare_library", None)
        if prepare is not None:  # builds ahead of the loop (`ptxls bench`'s own step)
            prof.SPANS.clear()
            t0 = time.perf_counter()
            await prepare([str(p) for _, p in todo])
            kernels.append({"kernel": "(prepare)", "total": round(time.perf_counter() - t0, 3),
                            **{k: round(v, 3) for k, v in prof.SPANS.items()}})  # fmt: skip
        for name, path in todo:
            prof.SPANS.clear()
            reports.clear()
            t0 = time.perf_counter()
            rows = await gbench.bench_file(str(path), name)
            total = time.perf_counter() - t0
            parts = {k: round(v, 3) for k, v in prof.SPANS.items()}
            laps: dict[str, float] = defaultdict(float)
            spread = []
            for rep in reports:
                for c in rep.cases:
                    for k, v in (c.phases or {}).items():
                        laps[k] += v
                    t = c.timing or {}
                    if c.time_ms and t.get("max_ms"):
                        spread.append(
                            {"n": c.n, "runs": t.get("runs"), "min_ms": t.get("min_ms"),
                             "median_ms": c.time_ms, "max_ms": t.get("max_ms"),
                             "max_over_median": round(t["max_ms"] / c.time_ms, 3)})  # fmt: skip
            parts.update({k: round(v, 3) for k, v in laps.items()})
            parts["worker_other"] = round(parts.get("worker_request", 0) - sum(laps.values()), 3)
            kernels.append({"kernel": name, "total": round(total, 3),
                            "status": [r.status for r in rows], "flags": [r.flags for r in rows],
                            "time_ms": [r.time_ms for r in rows],
                            "nvcc_ms": [r.nvcc_ms for r in rows],
                            "torch_ms": [r.torch_ms for r in rows],
                            "parts": parts, "spread": spread})  # fmt: skip
            print(f"{name:<16} {total:6.2f} s  {json.dumps(parts)}", flush=True)
    finally:
        await shared_supervisor().close()
    wall = time.perf_counter() - t_all
    sums: dict[str, float] = defaultdict(float)
    for k in kernels:
        for p, v in (k.get("parts") or {}).items():
            sums[p] += v
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "gpu": gpu_name(),
        "python": sys.version.split()[0],
        "wall_s": round(wall, 2),
        "sum_by_part_s": {k: round(v, 2) for k, v in sorted(sums.items(), key=lambda x: -x[1])},
        "worst_spread": max(
            (s["max_over_median"] for k in kernels for s in k.get("spread", [])), default=None
        ),  # fmt: skip
        "median_kernel_s": statistics.median(k["total"] for k in kernels if "status" in k),
        "kernels": kernels,
    }


def report(before: dict, after: dict) -> str:
    """Per-part sums and per-kernel totals, before and after, as markdown."""
    parts = sorted(set(before["sum_by_part_s"]) | set(after["sum_by_part_s"]),
                   key=lambda k: -before["sum_by_part_s"].get(k, 0))  # fmt: skip
    lines = ["# `ptxls bench` over the library, where the time goes: before and after", "",
             f"Measured by bench/library_profile.py on {after['gpu']} (before {before['date']}, "
             f"after {after['date']}); one shared worker, as `ptxls bench` runs.", "",
             f"wall: before **{before['wall_s']} s**, after **{after['wall_s']} s** "
             f"({before['wall_s'] / after['wall_s']:.1f}× faster); widest timed spread (max / "
             f"median): before {before['worst_spread']}, after {after['worst_spread']}", "",
             "| part (s, summed over kernels) | before | after |", "|:--|--:|--:|"]  # fmt: skip
    for k in parts:
        lines.append(
            f"| {k} | {before['sum_by_part_s'].get(k, 0)} | {after['sum_by_part_s'].get(k, 0)} |"
        )
    lines += ["", "| kernel (s) | before | after | status after |", "|:--|--:|--:|:--|"]
    b = {k["kernel"]: k for k in before["kernels"]}
    for k in after["kernels"]:
        lines.append(f"| {k['kernel']} | {b.get(k['kernel'], {}).get('total', '—')} | {k['total']} "
                     f"| {', '.join(k.get('status', []))} |")  # fmt: skip
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("kernels", nargs="*")
    ap.add_argument("--report", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    if a.report:
        print(report(*(json.loads(p.read_text()) for p in a.report)), end="")
        sys.exit(0)
    result = asyncio.run(main(a.kernels))
    out = a.out or result_path("library-profile", "json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"wall {result['wall_s']} s; by part: {json.dumps(result['sum_by_part_s'])}")
    print(f"worst timed spread (max/median): {result['worst_spread']}")
