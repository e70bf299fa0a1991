"""What each instruction class costs the emulator's engine: CPU seconds per scheduler step and
nanoseconds per thread, over launches of every library kernel (tests/emulator/library_runner.py),
the measurement behind emulator/simt.cost_of (the work units harness sizes are chosen by).

Each step's CPU time (time.process_time around Scheduler.step) is charged to its instruction's
class; per-thread cost = (class time - 40 us per step) / threads. The machine is shared: the
figures are for ranking and rough scale, not exact.

Writes bench/results/emulator-speed/<machine>-<date>-costs.{json,md}.
Run: .venv/bin/python bench/emulator_op_costs.py
"""

from __future__ import annotations

import collections
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "emulator"))

import library_runner as LR  # noqa: E402

from ptxls import emulator  # noqa: E402
from ptxls.emulator import device, simt  # noqa: E402
from ptxls.emulator.ops_mem import space_of  # noqa: E402

from machine import result_path  # noqa: E402

RUNS = [("hgemm_mma", 256), ("sgemm_128x128", 128), ("scan_inclusive", 524288),
        ("transpose", 512), ("softmax_rows", 257), ("stencil5", 1000), ("layernorm_rows", 257),
        ("row_sum", 1024), ("matmul_tiled", 128), ("histogram256", 1 << 20),
        ("reduce_sum", 1 << 20), ("bias_gelu_f16", 1 << 20), ("vec_add", 1 << 22)]  # fmt: skip
STEP_US = 40.0
FLOATS = ("f16", "bf16", "f16x2", "bf16x2", "f32", "f64")


def klass(ins) -> str:
    op = ins.op
    if op in ("ld", "st", "atom", "red", "cp"):
        return f"{op}.{space_of(ins)}"
    t = ins.mods[-1] if ins.mods else ""
    if t in FLOATS and op in ("add", "sub", "mul", "fma", "mad", "max", "min", "neg", "abs",
                              "setp", "selp", "cvt", "div"):  # fmt: skip
        return f"{op}.{'f16' if '16' in t else 'f'}"
    return op


def main() -> None:
    device._tune_process()  # as the worker runs
    spent: collections.Counter = collections.Counter()
    threads: collections.Counter = collections.Counter()
    steps: collections.Counter = collections.Counter()
    real = simt.Scheduler.step

    def step(self):
        pc = self._pick()
        ins = self.instrs[pc] if pc is not None and pc < len(self.instrs) else None
        n = self.groups[pc].size if pc is not None and pc in self.groups else 0
        t0 = time.process_time()
        out = real(self)
        if ins is not None:
            k = klass(ins)
            spent[k] += time.process_time() - t0
            threads[k] += n
            steps[k] += 1
        return out

    simt.Scheduler.step = step
    load = os.getloadavg()
    for name, n in RUNS:
        r = LR.run_kernel(name, n, seed=1, budget=emulator.Budget(seconds=600))
        print(name, n, r.ok, flush=True)
    rows = []
    for k, s in sorted(spent.items(), key=lambda kv: -kv[1]):
        per = max(s - STEP_US * 1e-6 * steps[k], 0.0) / max(threads[k], 1) * 1e9
        rows.append({"class": k, "cpu_s": round(s, 4), "steps": steps[k], "threads": threads[k],
                     "us_per_step": round(1e6 * s / steps[k], 1),
                     "ns_per_thread": round(per, 2)})  # fmt: skip
    data = {"benchmark": "emulator op costs", "runs": RUNS, "load_average": load, "rows": rows}
    result_path("emulator-speed", "json", "costs").write_text(json.dumps(data, indent=1) + "\n")
    lines = ["# What each instruction class costs the emulator", "",
             f"`.venv/bin/python bench/emulator_op_costs.py`; launches {RUNS}; load average "
             f"{tuple(round(x, 1) for x in load)} (shared 2-core machine).", "",
             "| class | CPU s | steps | threads | us/step | ns/thread (after 40 us/step) |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        lines.append(f"| {r['class']} | {r['cpu_s']} | {r['steps']} | {r['threads']:,} | "
                     f"{r['us_per_step']} | {r['ns_per_thread']} |")  # fmt: skip
    result_path("emulator-speed", "md", "costs").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
