"""How long `ptxls --version` and `ptxls check` on a small file take, beside a bare Python.

    .venv/bin/python bench/cli_startup.py [--repeats 15] [--before REV] [--part NAME]

Each run starts a fresh process and waits for it to end: ``python -c pass`` (the interpreter's
own start, the floor), the ``ptxls`` console script with ``--version``, and with ``check
examples/vec_add.ptx`` (48 lines: ptxas runs on it, the same as a person typing the command).
The commands are interleaved run by run, so the machine's load falls on all of them alike; the
wall time is from just before the start to the exit, the CPU time (user + system, the process
and the children it waited for, ptxas included) comes from ``wait4`` and is not inflated by the
load. With ``--before REV`` the two ptxls commands also run against a git worktree of REV
(through PYTHONPATH, the way the console script imports ``ptxls.cli.main``), interleaved too.

Writes bench/results/cli-startup/<machine>-<date>[-part].json (and .md). Goal (issue 22):
both commands at most 0.25 s on the 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from rev_tree import importable_at

from lowering_common import machine
from machine import ROOT, result_path

GOAL_S = 0.25
SCRIPT = Path(sys.executable).parent / "ptxls"  # the console script pip generated


def _commands(small: str) -> dict[str, list[str]]:
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "ptxls --version": [str(SCRIPT), "--version"],
        "ptxls check": [str(SCRIPT), "check", small],
    }


def _once(args: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds with waited-for children, exit status)."""
    started = time.perf_counter()
    p = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)  # fmt: skip
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - started
    p.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, p.returncode


def _summary(walls: list[float], cpus: list[float]) -> dict:
    return {
        "median_s": round(statistics.median(walls), 3),
        "min_s": round(min(walls), 3),
        "cpu_median_s": round(statistics.median(cpus), 3),
        "cpu_min_s": round(min(cpus), 3),
        "runs_s": [round(t, 3) for t in walls],
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--before", help="a git revision to measure side by side (a worktree)")
    ap.add_argument("--part", default="", help="suffix of the result's file name")
    args = ap.parse_args()
    small = str(ROOT / "examples" / "vec_add.ptx")
    env = dict(os.environ)
    # as installed: bytecode cached (pip compiles it at install); the uncounted first round
    # writes what is missing
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTHONPATH", None)
    runs: list[tuple[str, list[str], dict[str, str]]] = [
        (name, cmd, env) for name, cmd in _commands(small).items()
    ]
    load_before = [round(x, 2) for x in os.getloadavg()]
    with ExitStack() as stack:
        if args.before:
            before_env = dict(env, PYTHONPATH=stack.enter_context(importable_at(args.before)))
            runs += [
                (f"{name} (before)", cmd, before_env)
                for name, cmd in _commands(small).items()
                if name.startswith("ptxls")
            ]
        walls: dict[str, list[float]] = {name: [] for name, _, _ in runs}
        cpus: dict[str, list[float]] = {name: [] for name, _, _ in runs}
        codes: dict[str, set[int]] = {name: set() for name, _, _ in runs}
        for _name, cmd, run_env in runs:  # warm the file cache and the bytecode; not counted
            _once(cmd, run_env)
        for _ in range(args.repeats):
            for name, cmd, run_env in runs:
                wall, cpu, code = _once(cmd, run_env)
                walls[name].append(wall)
                cpus[name].append(cpu)
                codes[name].add(code)
    result = {
        "machine": machine(),
        # the 2-core machine is shared: its load (1, 5, 15 min) says how busy it was
        "load_average_before": load_before,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "what": "seconds from starting the command to its exit (a fresh process each run), "
        f"interleaved, {args.repeats} runs each; the small file is examples/vec_add.ptx",
        "goal_s": GOAL_S,
        "repeats": args.repeats,
        "before": args.before,
        "commands": {
            name: dict(_summary(walls[name], cpus[name]), exit_codes=sorted(codes[name]))
            for name in walls
        },
    }
    text = json.dumps(result, indent=2)
    print(text)
    result_path("cli-startup", "json", args.part).write_text(text + "\n")
    md = [
        "# ptxls --version and ptxls check: start to exit",
        "",
        f"{result['what']}, on {result['machine']['host']} ({result['machine']['cpus']} CPUs, "
        f"Python {result['machine']['python']}; load average {load_before[0]} before and "
        f"{result['load_average_after'][0]} after the runs: the machine is shared). "
        f"Goal: {GOAL_S} s.",
        "",
        "CPU: user + system seconds of the process and the children it waited for (wait4).",
        "",
        "| command | wall median (s) | wall min (s) | CPU median (s) | exit |",
        "|---|---|---|---|---|",
    ]
    for name, r in result["commands"].items():
        md.append(
            f"| `{name}` | {r['median_s']} | {r['min_s']} | {r['cpu_median_s']} | "
            f"{', '.join(map(str, r['exit_codes']))} |"
        )
    result_path("cli-startup", "md", args.part).write_text("\n".join(md) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
