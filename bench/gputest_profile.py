"""Where the time of one "Run GPU test" goes: vec_add's 6 cases (against nvcc's vec_add.cu) through
gputest.api.run_gpu_test, cold (new worker, empty build cache) and warm (same worker, cached
builds), and one `ptxls bench` kernel (a library kernel at its benchmark sizes, numpy reference,
nvcc baseline and PyTorch timed beside it).

The split, in seconds (medians over the warm runs):
- parent side, timed by wrapping the api's own functions: ``spec`` (the spec from the paired
  CUDA / spec.json), ``spec_check``, ``hello`` (the worker's device answer), ``build`` (ptxas and
  nvcc; a cache hit costs ~0), ``worker_request`` (the request's round trip), ``report``
  (the reply read into the report), ``total`` (run_gpu_test from call to return). The builds run
  concurrently with ``hello``: the parts do not add up to the total.
- worker side, from the harness's own laps (``CaseRun.lap`` in gputest/harness.py, summed over
  the cases): ``inputs`` (generation), ``upload`` (allocation, poison, host→device), ``kernel``
  (the verified launch), ``download`` (device→host, inputs checked unchanged), ``reference``,
  ``check`` (every element compared), ``baseline``, and the timing loop: ``timed_setup`` (device
  copies of the verified outputs, the start state), ``timed_launches`` (re-poison, restore,
  reset globals, L2 flush, launch, verification of every timed launch), ``timed_inputs_check``,
  ``shortcut_probe``, ``timing`` (the rest: Triton/PyTorch baselines);
  ``worker_other`` = ``worker_request`` minus those (module loads, JSON, the pipe).
Older harnesses lap fewer steps (their timing loop is one ``timing``): the JSON keeps what came.

    python bench/gputest_profile.py --label after      # on the GPU host (bench/gputest_profile.sh)
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import statistics
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

from ptxls.gputest import api, build
from ptxls.gputest.bench import bench_file
from ptxls.gputest.supervisor import Supervisor

from machine import gpu_name, result_path  # bench/ is the script's folder

ROOT = Path(__file__).resolve().parent.parent
SPANS: dict[str, float] = defaultdict(float)  # this run's parent-side seconds by part


def _timed(name: str, fn):
    """``fn`` (sync or async) with its wall time added to SPANS[name]."""
    if asyncio.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def wrapped_async(*a, **kw):
            t0 = time.perf_counter()
            try:
                return await fn(*a, **kw)
            finally:
                SPANS[name] += time.perf_counter() - t0

        return wrapped_async

    @functools.wraps(fn)
    def wrapped(*a, **kw):
        t0 = time.perf_counter()
        try:
            return fn(*a, **kw)
        finally:
            SPANS[name] += time.perf_counter() - t0

    return wrapped


def instrument() -> None:
    """Wrap the api's steps in place (module globals are looked up at call time)."""
    for name, part in (("spec_for_ptx", "spec"), ("library_resolution", "spec"),
                       ("check_spec", "spec_check"), ("gpu_available", "hello"),
                       ("_read_reply", "report")):  # fmt: skip
        setattr(api, name, _timed(part, getattr(api, name)))
    for name in ("assemble_ptx", "compile_cuda"):
        setattr(build, name, _timed("build", getattr(build, name)))
    request = Supervisor.request

    async def timed_request(self, msg, *a, **kw):  # the run's round trip, not the hello's
        t0 = time.perf_counter()
        try:
            return await request(self, msg, *a, **kw)
        finally:
            if msg.get("op") == "run":
                SPANS["worker_request"] += time.perf_counter() - t0

    Supervisor.request = timed_request


def split(report, total: float) -> dict:
    """One run's parts: the parent's spans and the harness's laps summed over the cases."""
    parts = {k: round(v, 4) for k, v in SPANS.items()}
    laps: dict[str, float] = defaultdict(float)
    for c in report.cases:
        for k, v in (c.phases or {}).items():
            laps[k] += v
    parts.update({k: round(v, 4) for k, v in laps.items()})
    parts["worker_other"] = round(parts.get("worker_request", 0.0) - sum(laps.values()), 4)
    parts["total"] = round(total, 4)
    return parts


async def one(run) -> dict:
    SPANS.clear()
    t0 = time.perf_counter()
    report = await run()
    parts = split(report, time.perf_counter() - t0)
    parts["status"] = report.status
    parts["cache_entries"] = len(build._CACHE)
    parts["by_case"] = {str(c.n): c.phases for c in report.cases}
    spread = [(c.timing or {}).get("max_ms", 0) / c.time_ms for c in report.cases if c.time_ms]
    parts["timed_spread_max_over_median"] = round(max(spread), 3) if spread else None
    return parts


def medians(runs: list[dict]) -> dict:
    keys = {k for r in runs for k, v in r.items() if isinstance(v, int | float)}
    return {k: round(statistics.median(r.get(k, 0.0) for r in runs), 4) for k in sorted(keys)}


async def main(a) -> dict:
    instrument()
    ptx = (ROOT / "examples/vec_add.ptx").read_text()
    cu = (ROOT / "examples/vec_add.cu").read_text()

    def vec_add(sup):
        return lambda: api.run_gpu_test(ptx, "vec_add", reference_cuda=cu,
                                        reference_path="vec_add.cu", supervisor=sup)  # fmt: skip

    cold, warm = [], []
    for i in range(a.cold):
        build._CACHE.clear()
        sup = Supervisor()
        try:
            cold.append(await one(vec_add(sup)))
            if i == 0:
                for _ in range(a.warm):
                    warm.append(await one(vec_add(sup)))
        finally:
            await sup.close()
    bench = []
    kernel_ptx = ROOT / "fewshot/kernels" / a.bench_kernel / "kernel.ptx"
    sup = Supervisor()
    try:
        for _ in range(a.bench_runs):  # the first is cold (nvcc, the worker's start)
            SPANS.clear()
            t0 = time.perf_counter()
            rows = await bench_file(str(kernel_ptx), supervisor=sup)
            bench.append({**{k: round(v, 4) for k, v in SPANS.items()},
                          "total": round(time.perf_counter() - t0, 4),
                          "status": [r.status for r in rows],
                          "time_ms": [r.time_ms for r in rows]})  # fmt: skip
    finally:
        await sup.close()
    return {
        "label": a.label,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "gpu": gpu_name(),
        "python": sys.version.split()[0],
        "vec_add": {
            "cases": 6,
            "cold_median": medians(cold),
            "warm_median": medians(warm),
            "cold_runs": cold,
            "warm_runs": warm,
        },
        "bench_kernel": {"kernel": a.bench_kernel, "runs": bench},
    }


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--label", default="current")
    ap.add_argument("--warm", type=int, default=7)
    ap.add_argument("--cold", type=int, default=2)
    ap.add_argument("--bench-kernel", default="row_sum")
    ap.add_argument("--bench-runs", type=int, default=3, help="the first is cold; 0: none")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    result = asyncio.run(main(a))
    out = a.out or result_path("gputest-profile", "json", part=a.label)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    v = result["vec_add"]
    print(f"[{a.label}] vec_add cold median {v['cold_median'].get('total')} s, "
          f"warm median {v['warm_median'].get('total')} s")  # fmt: skip
    print("warm split:", json.dumps({k: x for k, x in v["warm_median"].items()}))
    print("bench kernel:", json.dumps(result["bench_kernel"]["runs"]))
