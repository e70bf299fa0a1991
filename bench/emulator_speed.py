"""How fast the emulator runs kernels: thread-instructions per second and wall time of single
launches (vec_add at 2^24 elements, softmax_rows, the decoupled look-back scan), and — on the
same launches in the same run — the vectorised engine against a deliberately simple per-thread
interpreter of the same decoded instructions (bench/emulator_per_thread.py).

Each launch's output is checked against the spec's numpy reference (a fast wrong answer would
not count). Wall times are of ``emulator.launch`` alone (inputs and reference excluded).

Also the whole command the issue names: ``ptxls test --device cpu examples/vec_add.ptx`` (a new
process each time: interpreter start, imports, ptxas, the worker, every spec size with its
inputs, reference, poison/guard/canary and inputs-unchanged checks, comparison), its wall time,
the CPU time of it and its children, and the sizes it ran (a replaced size is said). And beside
each launch the H200's kernel time for the same launch where a committed result gives it
(bench/results/emulator-speed/h200-<date>-times.json, made by bench/emulator_h200_times.py on
the GPU).

Side by side: each pair's vectorised time is the median of ``--repeat`` launches (default 5;
a launch of tens of milliseconds on a shared machine is one context switch from doubling),
the per-thread one a single launch (seconds long). With ``--before REV`` the vectorised
launches of the side-by-side pairs also run on REV's emulator (a git worktree, in a child
process) in the same run, against the same per-thread times: the ratio before and after.

Writes bench/results/emulator-speed/<machine>-<date>[-part].{json,md}.
Run: .venv/bin/python bench/emulator_speed.py [--quick] [--part NAME] [--repeat K] [--before REV]
"""

from __future__ import annotations

import json
import os
import platform
import resource
import statistics
import subprocess
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
SIDE_BY_SIDE = [("vec_add", 1 << 16), ("softmax_rows", 17), ("scan_inclusive", 1 << 17),
                ("scan_inclusive", 1 << 19)]  # fmt: skip
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


def median_run(kernel: str, n: int, repeat: int) -> dict:
    """run() of the vectorised engine ``repeat`` times: the median launch (wall and CPU each),
    every sample kept."""
    runs = [run(kernel, n, False) for _ in range(max(1, repeat))]
    row = dict(runs[0])
    for key in ("seconds", "cpu_seconds"):
        row[key] = round(statistics.median(r[key] for r in runs), 4)
        row[key + "_samples"] = [r[key] for r in runs]
    row["correct"] = all(r["correct"] for r in runs)
    ti = row["thread_instructions"]
    row["thread_instructions_per_s"] = round(ti / row["seconds"]) if row["seconds"] else None
    return row


def before_runs(rev: str, pairs: list[tuple[str, int]], repeat: int) -> list[dict]:
    """median_run of each pair on REV's emulator: this script in a child process whose
    ``ptxls`` is a worktree of REV (rev_tree.importable_at)."""
    from rev_tree import importable_at

    with importable_at(rev) as path:
        env = dict(os.environ, PYTHONPATH=path)
        args = [f"{k}:{n}" for k, n in pairs]
        out = subprocess.run([sys.executable, __file__, "--child", str(repeat), *args], env=env,
                             capture_output=True, text=True, timeout=1800, check=True)  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def h200_times() -> tuple[dict, str]:
    """{(kernel, n): kernel ms on the H200} from the latest committed GPU run
    (bench/results/emulator-speed/h200-<date>-times.json), and its file."""
    found = sorted((HERE / "results" / "emulator-speed").glob("h200-*-times.json"))
    if not found:
        return {}, ""
    H200 = found[-1]
    data = json.loads(H200.read_text())
    got = {(r["kernel"], r["n"]): r["time_ms"] for r in data["rows"] if r.get("time_ms")}
    return got, str(H200.relative_to(HERE.parent))


def whole_command(runs: int = 3) -> dict:
    """``ptxls test --device cpu examples/vec_add.ptx``, each run a new process: wall seconds,
    CPU seconds of the process and its children (ptxas, the emulator's worker), sizes run."""
    walls, cpus, report = [], [], {}
    exe = HERE.parent / ".venv" / "bin" / "ptxls"
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        out = subprocess.run([str(exe), "test", "--device", "cpu", "--json", "examples/vec_add.ptx"],
                             cwd=HERE.parent, capture_output=True, text=True, timeout=300)  # fmt: skip
        walls.append(round(time.perf_counter() - t0, 3))
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 3))
        try:
            report = json.loads(out.stdout)
            report = report[0] if isinstance(report, list) else report  # one report per kernel
        except (json.JSONDecodeError, IndexError):
            report = {"status": f"no JSON (exit {out.returncode}): {out.stderr[-300:]}"}
    return {"command": "ptxls test --device cpu examples/vec_add.ptx", "wall_s": walls,
            "cpu_s": cpus, "status": report.get("status"), "sizes": report.get("sizes"),
            "notes": [n for n in report.get("notes", []) if "emulated sizes" in n]}  # fmt: skip


def main() -> None:
    # the allocator settings the emulator's worker process runs with (emulator/device.py):
    # launches here cost what they cost in `ptxls test --device cpu`
    from ptxls.emulator import device

    device._tune_process()
    if "--child" in sys.argv:  # before_runs' child: REV's engine, one JSON line
        i = sys.argv.index("--child")
        repeat, specs = int(sys.argv[i + 1]), sys.argv[i + 2 :]
        got = [median_run(k, int(n), repeat) for k, n in (x.rsplit(":", 1) for x in specs)]
        print(json.dumps(got))
        return
    quick = "--quick" in sys.argv
    part = sys.argv[sys.argv.index("--part") + 1] if "--part" in sys.argv else ""
    repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 5
    before = sys.argv[sys.argv.index("--before") + 1] if "--before" in sys.argv else ""
    load_start = os.getloadavg()
    rows = []
    pairs = []
    old = {}
    if before:
        old = {(r["kernel"], r["n"]): r for r in before_runs(before, SIDE_BY_SIDE, repeat)}
        print({"before": before, "runs": list(old.values())}, flush=True)
    for kernel, n in SIDE_BY_SIDE:
        vec = median_run(kernel, n, repeat)
        pt = run(kernel, n, True)
        rows += [vec, pt]
        pairs.append({"kernel": kernel, "n": n, "speedup": round(pt["seconds"] / vec["seconds"], 1),
                      "cpu_speedup": round(pt["cpu_seconds"] / max(vec["cpu_seconds"], 1e-6), 1),
                      "vectorised_s": vec["seconds"], "per_thread_s": pt["seconds"],
                      "vectorised_cpu_s": vec["cpu_seconds"], "per_thread_cpu_s": pt["cpu_seconds"],
                      "vectorised_samples_s": vec["seconds_samples"],
                      "both_correct": vec["correct"] and pt["correct"]})  # fmt: skip
        b = old.get((kernel, n))
        if b is not None:
            pairs[-1].update({"before_rev": before, "before_vectorised_s": b["seconds"],
                              "before_vectorised_cpu_s": b["cpu_seconds"],
                              "before_samples_s": b["seconds_samples"],
                              "before_speedup": round(pt["seconds"] / b["seconds"], 1),
                              "before_cpu_speedup": round(pt["cpu_seconds"] / max(b["cpu_seconds"], 1e-6), 1),
                              "before_correct": b["correct"]})  # fmt: skip
        print(pairs[-1], flush=True)
    for kernel, n in LARGE if not quick else LARGE[:1]:
        rows.append(run(kernel, n, False))
        print(rows[-1], flush=True)
    cli = whole_command()
    print(cli, flush=True)
    h200, h200_source = h200_times()
    facts = {
        "python": platform.python_version(), "machine": platform.machine(),
        "cpus": os.cpu_count(), "load_average": os.getloadavg(),
        "note": "shared 2-core machine; the load average at the start and end of the run is given because "
        "other jobs ran beside it: absolute times are pessimistic, the side-by-side ratios hold",
    }  # fmt: skip
    facts["load_average_start"] = load_start
    facts["command"] = "python " + " ".join(["bench/emulator_speed.py", *sys.argv[1:]])
    facts["repeat"] = repeat
    data = {"benchmark": "emulator-speed", "facts": facts, "side_by_side": pairs, "runs": rows,
            "whole_command": cli, "h200_source": h200_source}  # fmt: skip
    result_path("emulator-speed", "json", part).write_text(json.dumps(data, indent=1) + "\n")
    lines = [
        "# Emulator speed", "",
        f"Machine: {facts['cpus']} CPUs, Python {facts['python']}, load average {facts['load_average_start']} at the start, {facts['load_average']} at the end.",
        "Every run's output matched the spec's numpy reference unless marked.", "",
        f"Command: `{facts['command']}`.", "",
        "## Vectorised vs per-thread interpreter (same launches, same run)", "",
        f"Vectorised: the median of {repeat} launches; per-thread: one launch.", "",
        "| kernel | n | vectorised s | per-thread s | speed-up (wall) | vectorised CPU s | per-thread CPU s | speed-up (CPU) |",
        "|---|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for p in pairs:
        ok = "" if p["both_correct"] else " (WRONG)"
        lines.append(f"| {p['kernel']} | {p['n']} | {p['vectorised_s']} | {p['per_thread_s']} | {p['speedup']}x{ok} "
                     f"| {p['vectorised_cpu_s']} | {p['per_thread_cpu_s']} | {p['cpu_speedup']}x |")  # fmt: skip
    if before:
        lines += ["", f"### The same pairs on the emulator of {before} (before), in this run", "",
                  f"Vectorised before: the median of {repeat} launches of {before}'s engine (a worktree, a "
                  "child process); per-thread: the same launch as above.", "",
                  "| kernel | n | vectorised s before | speed-up before (wall) | vectorised s now | speed-up now (wall) | speed-up before (CPU) | speed-up now (CPU) |",
                  "|---|---|---|---|---|---|---|---|"]  # fmt: skip
        for p in pairs:
            if "before_speedup" in p:
                ok = "" if p["before_correct"] else " (WRONG)"
                lines.append(f"| {p['kernel']} | {p['n']} | {p['before_vectorised_s']} | {p['before_speedup']}x{ok} "
                             f"| {p['vectorised_s']} | {p['speedup']}x | {p['before_cpu_speedup']}x | {p['cpu_speedup']}x |")  # fmt: skip
    lines += ["", "## The whole command", "",
              f"`{cli['command']}` (a new process each run; CPU = the process and its children): "
              f"wall {cli['wall_s']} s, CPU {cli['cpu_s']} s; {cli['status']}, sizes {cli['sizes']}"
              + (f"; {'; '.join(cli['notes'])}" if cli["notes"] else " (every spec size as it is)") + "."]  # fmt: skip
    lines += ["", "## Launches", "",
              "Wall seconds, and this process's CPU seconds (the machine is shared: CPU time is what",
              "the engine itself costs). H200 ms: the same launch's kernel time on the H200 (median of",
              f"the harness's timed runs), from {h200_source or 'no committed GPU result yet'}.", "",
              "| kernel | n | engine | wall s | CPU s | thread-instr | thread-instr/s (wall) | correct | H200 ms |",
              "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        gpu = h200.get((r["kernel"], r["n"]))
        lines.append(f"| {r['kernel']} | {r['n']} | {r['engine']} | {r['seconds']} | {r['cpu_seconds']} | {r['thread_instructions']:,} "
                     f"| {r['thread_instructions_per_s'] or 0:,} | {r['correct']} | {'' if gpu is None else round(gpu, 4)} |")  # fmt: skip
    result_path("emulator-speed", "md", part).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
