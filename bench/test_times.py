"""How long the two test commands take: `make test-fast` (the inner loop) and `make test` (all).

    .venv/bin/python bench/test_times.py [fast] [full] [--part NAME] [--workers N]

Runs `make setup` first (untimed: a changed pyproject.toml would otherwise time a reinstall),
then each target once, as a person types it. The wall time is from the start to make's exit;
the CPU time (user + system of make and every process it waited for: the pytest workers, the
servers and CLIs they started, ptxas, nvcc; a process killed and never reaped is not counted) comes from ``wait4`` and is less inflated by other
work on the machine than the wall time, so the load average before and after is recorded too.
The pytest summary line (passed, failed, skipped, pytest's own seconds) is kept as printed.

Writes bench/results/test-times/<machine>-<date>[-part].json (and .md). Goals (issue 24, item
4): `make test-fast` under 2 minutes, `make test` under 5 on the 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from lowering_common import machine
from machine import ROOT, result_path

TARGETS = {"fast": ("test-fast", 120), "full": ("test", 300)}  # make target, goal in seconds
# pytest's last line, with -q ("3 failed, 3110 passed in 239.11s (0:03:59)") or without (in ===)
SUMMARY = re.compile(
    r"^=*\s*(?P<counts>\d+ (?:failed|passed|skipped|error)[^\n]*?) in (?P<secs>[\d.]+)s", re.M
)


def _run(target: str, workers: str) -> dict:
    load_before = os.getloadavg()
    started = time.perf_counter()
    p = subprocess.Popen(["make", target, f"TEST_WORKERS={workers}"], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    out = p.stdout.read() if p.stdout else ""
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - started
    found = SUMMARY.findall(out)
    counts, pytest_s = (found[-1][0], float(found[-1][1])) if found else ("", None)
    return {
        "target": f"make {target}",
        "workers": workers,
        "exit_status": os.waitstatus_to_exitcode(status),
        "wall_s": round(wall, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "pytest_s": pytest_s,
        "summary": counts,
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "slowest": re.findall(r"^([\d.]+s (?:call|setup|teardown)\s+\S.*)$", out, re.M)[:10],
        "failed": re.findall(r"^FAILED (\S+)", out, re.M),
        # the assertion lines of the failures, so a failure in a timing run can be read later
        "failure_lines": re.findall(r"^E .*$", out, re.M)[:60],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("which", nargs="*", choices=sorted(TARGETS), default=["fast", "full"])
    ap.add_argument("--part", default="", help="a suffix for the result's file name")
    ap.add_argument("--workers", default="auto", help="pytest-xdist workers (make TEST_WORKERS)")
    args = ap.parse_args()
    subprocess.run(["make", "setup"], cwd=ROOT, check=True)
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                         text=True).stdout.strip()  # fmt: skip
    runs = []
    for which in args.which:
        target, goal = TARGETS[which]
        run = _run(target, args.workers) | {"goal_s": goal}
        runs.append(run)
        print(f"make {target}: {run['wall_s']} s wall, {run['cpu_s']} s CPU, {run['summary']} "
              f"(load {run['load_before'][0]} -> {run['load_after'][0]})", flush=True)  # fmt: skip
    result = {"benchmark": "test-times", "machine": machine(), "cores": os.cpu_count(),
              "commit": rev, "runs": runs}  # fmt: skip
    path = result_path("test-times", "json", args.part)
    path.write_text(json.dumps(result, indent=2) + "\n")
    lines = [f"# Test times ({rev}, {os.cpu_count()} cores)", "",
             "| command | workers | wall s | CPU s | goal s | tests | load 1-min before → after |",
             "|---|---|---:|---:|---:|---|---|"]  # fmt: skip
    for r in runs:
        lines.append(f"| `{r['target']}` | {r['workers']} | {r['wall_s']} | {r['cpu_s']} | "
                     f"{r['goal_s']} | {r['summary']} | {r['load_before'][0]} → "
                     f"{r['load_after'][0]} |")  # fmt: skip
    path.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print(path.relative_to(ROOT))


if __name__ == "__main__":
    main()
