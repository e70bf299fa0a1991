"""How fast the emulator runs kernels: thread-instructions per second and wall time of single
launches (vec_add at 2^24 elements, softmax_rows, the decoupled look-back scan), and — on the
same launches in the same run — the vectorised engine against a deliberately simple per-thread
interpreter of the same decoded instructions (bench/emulator_per_thread.py).

Each launch's output is checked against the spec's numpy reference (a fast wrong answer would
not count). Wall times are of ``emulator.launch`` alone (inputs and reference excluded).

Writes bench/results/emulator-speed/<machine>-<date>.{json,md}.
Run: .venv/bin/python bench/emulator_speed.py [--quick]
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "emulator"))

import library_runner as LR  # noqa: E402
from emulator_per_thread import PerThread  # noqa: E402

from ptxls import emulator  # noqa: E402

from machine import result_path  # noqa: E402

# (kernel, n): both engines (the per-thread one takes seconds per 10^5 thread-instructions)
SIDE_BY_SIDE = [("vec_add", 1 << 16), ("softmax_rows", 17), ("scan_inclusive", 1 << 17)]
# vectorised only: the sizes the issue names (vec_add: the library kernel and examples/vec_add.ptx)
LARGE = [("vec_add", 1 << 24), ("examples/vec_add.ptx", 1 << 24), ("softmax_rows", 257), ("softmax_rows", 1048),
         ("scan_inclusive", 1000003), ("scan_inclusive", 4 << 20)]  # fmt: skip


def _per_thread_launch(module, kernel, grid, block, shared, params, mem, budget=None):
    g = tuple(list(grid) + [1, 1])[:3]
    b = tuple(list(block) + [1, 1])[:3]
    interp = PerThread(module, kernel, g, b, params, mem, shared)
    t0 = time.perf_counter()
    n = interp.run()
    res = emulator.LaunchResult(thread_instructions=n)
    res.wall_seconds = time.perf_counter() - t0
    return res


def run(kernel: str, n: int, per_thread: bool) -> dict:
    ptx = None
    if kernel.endswith(".ptx"):  # a PTX file run with the library kernel's spec of its name
        ptx = (HERE.parent / kernel).read_text()
        kernel_spec = Path(kernel).stem
    else:
        kernel_spec = kernel
    real = LR.emulator.launch
    if per_thread:
        LR.emulator.launch = _per_thread_launch
    try:
        launch = (
            {"grid": "ceil(n/256)", "block": "256", "shared": "0"} if ptx else None
        )  # one thread per element
        r = LR.run_kernel(
            kernel_spec, n, seed=1, ptx=ptx, budget=emulator.Budget(seconds=600), launch=launch
        )
    finally:
        LR.emulator.launch = real
    ti = r.result.thread_instructions if r.result else 0
    return {
        "kernel": kernel, "n": n, "engine": "per-thread" if per_thread else "vectorised",
        "correct": r.ok, "detail": r.detail[:200], "seconds": round(r.seconds, 4),
        "cpu_seconds": round(r.cpu_seconds, 4),
        "thread_instructions": ti, "thread_instructions_per_s": round(ti / r.seconds) if r.seconds else None,
        "hang": bool(r.result and r.result.hang),
    }  # fmt: skip


def main() -> None:
    quick = "--quick" in sys.argv
    rows = []
    pairs = []
    for kernel, n in SIDE_BY_SIDE:
        vec = run(kernel, n, False)
        pt = run(kernel, n, True)
        rows += [vec, pt]
        pairs.append({"kernel": kernel, "n": n, "speedup": round(pt["seconds"] / vec["seconds"], 1),
                      "cpu_speedup": round(pt["cpu_seconds"] / max(vec["cpu_seconds"], 1e-6), 1),
                      "vectorised_s": vec["seconds"], "per_thread_s": pt["seconds"],
                      "vectorised_cpu_s": vec["cpu_seconds"], "per_thread_cpu_s": pt["cpu_seconds"],
                      "both_correct": vec["correct"] and pt["correct"]})  # fmt: skip
        print(pairs[-1], flush=True)
    for kernel, n in LARGE if not quick else LARGE[:1]:
        rows.append(run(kernel, n, False))
        print(rows[-1], flush=True)
    facts = {
        "python": platform.python_version(), "machine": platform.machine(),
        "cpus": os.cpu_count(), "load_average": os.getloadavg(),
        "note": "shared 2-core machine; the load average at the end of the run is given because "
        "other jobs ran beside it: absolute times are pessimistic, the side-by-side ratios hold",
    }  # fmt: skip
    data = {"benchmark": "emulator-speed", "facts": facts, "side_by_side": pairs, "runs": rows}
    result_path("emulator-speed", "json").write_text(json.dumps(data, indent=1) + "\n")
    lines = [
        "# Emulator speed", "",
        f"Machine: {facts['cpus']} CPUs, Python {facts['python']}, load average {facts['load_average']}.",
        "Every run's output matched the spec's numpy reference unless marked.", "",
        "## Vectorised vs per-thread interpreter (same launches, same run)", "",
        "| kernel | n | vectorised s | per-thread s | speed-up (wall) | vectorised CPU s | per-thread CPU s | speed-up (CPU) |",
        "|---|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for p in pairs:
        ok = "" if p["both_correct"] else " (WRONG)"
        lines.append(f"| {p['kernel']} | {p['n']} | {p['vectorised_s']} | {p['per_thread_s']} | {p['speedup']}x{ok} "
                     f"| {p['vectorised_cpu_s']} | {p['per_thread_cpu_s']} | {p['cpu_speedup']}x |")  # fmt: skip
    lines += ["", "## Launches", "",
              "Wall seconds, and this process's CPU seconds (the machine is shared: CPU time is what",
              "the engine itself costs).", "",
              "| kernel | n | engine | wall s | CPU s | thread-instr | thread-instr/s (wall) | correct |",
              "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        lines.append(f"| {r['kernel']} | {r['n']} | {r['engine']} | {r['seconds']} | {r['cpu_seconds']} | {r['thread_instructions']:,} "
                     f"| {r['thread_instructions_per_s'] or 0:,} | {r['correct']} |")  # fmt: skip
    result_path("emulator-speed", "md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
