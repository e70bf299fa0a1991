"""The ``ref:`` evaluator against issue 25's bombs: peak memory and time of each hostile call
(function × calling form, tests/ref_bomb_cases.py), before and after the shape rules.

    .venv/bin/python bench/ref_bombs.py [--before COMMIT] [--timeout 20] [--limit-gib 5]

Each case runs in a fresh child (so its peak resident memory is its own), with the address
space capped (``--limit-gib``: a case that allocates more fails with MemoryError, said as
such) and a wall-clock limit (``--timeout``: the child is killed, said as such). "before" is
``gputest/numpy_ref.py`` of ``--before`` (default: the last commit before ref_limits.py),
loaded as a standalone module; "after" is the working tree's. Writes
bench/results/trust/<machine>-<date>.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from ref_bomb_cases import CASES  # noqa: E402

from machine import gpu_name, result_path  # noqa: E402

CHILD = """
import importlib.util, json, resource, sys, time
limit = int(sys.argv[3]) << 30
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
import numpy as np
if sys.argv[1] == "after":
    from ptxls.gputest import numpy_ref
else:
    spec = importlib.util.spec_from_file_location("numpy_ref_before", sys.argv[1])
    numpy_ref = importlib.util.module_from_spec(spec); spec.loader.exec_module(numpy_ref)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
t = time.monotonic()
try:
    numpy_ref.run(sys.argv[2], {"x": np.arange(1000, dtype=np.float64), "n": 1000}, deadline_s=60)
    outcome = "ran"
except numpy_ref.RefError as e:
    outcome = "refused: " + str(e).split("': ", 1)[-1][:90]
except MemoryError:
    outcome = "MemoryError at the address-space cap"
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
print(json.dumps({"outcome": outcome, "seconds": round(time.monotonic() - t, 3),
                  "peak_mb": peak, "start_mb": base}))
"""


def _peak_mb(pid: int) -> int | None:
    """The child's peak resident memory so far (VmHWM), read while it runs."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def run_case(which: str, program: str, timeout: float, limit_gib: int) -> dict:
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, which, program, str(limit_gib)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    started, peak = time.monotonic(), None
    while proc.poll() is None and time.monotonic() - started < timeout:
        peak = max(peak or 0, _peak_mb(proc.pid) or 0)
        time.sleep(0.05)
    if proc.poll() is None:
        peak = max(peak or 0, _peak_mb(proc.pid) or 0)
        proc.kill()
        proc.communicate()
        return {"outcome": f"still running after {timeout:g} s (killed)", "seconds": timeout,
                "peak_mb": peak}  # fmt: skip
    out, err = proc.communicate()
    try:
        return json.loads(out.strip().splitlines()[-1])
    except (IndexError, ValueError):
        tail = (err or "").strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
        return {"outcome": "crashed: " + tail[0][:90], "seconds": None, "peak_mb": peak}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="3f4090e")
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--limit-gib", type=int, default=5)
    ap.add_argument("--out", default=None, help="a folder (default: bench/results/trust/)")
    args = ap.parse_args()
    old = subprocess.run(["git", "show", f"{args.before}:gputest/numpy_ref.py"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    rows = []
    with tempfile.TemporaryDirectory(prefix="ptxls-refbombs-") as tmp:
        before_path = Path(tmp) / "numpy_ref_before.py"
        before_path.write_text(old)
        for function, form, program in CASES:
            row = {"function": function, "form": form, "program": program}
            row["before"] = run_case(str(before_path), program, args.timeout, args.limit_gib)
            row["after"] = run_case("after", program, args.timeout, args.limit_gib)
            rows.append(row)
            print(json.dumps(row), flush=True)
    machine = {"platform": platform.platform(), "python": platform.python_version(),
               "cpu_count": os.cpu_count(), "gpu": gpu_name(),
               "note": "shared 2-core machine, 8 people working on it at the time"}  # fmt: skip
    report = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": machine,
              "before": args.before, "timeout_s": args.timeout, "address_space_cap_gib":
              args.limit_gib, "rows": rows}  # fmt: skip
    stem = result_path("trust", "json").with_suffix("")
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        stem = Path(args.out) / stem.name
    stem.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    after_ok = all(r["after"]["outcome"].startswith("refused") for r in rows)
    peaks = [r["after"]["peak_mb"] or 0 for r in rows]
    lines = [
        "# `ref:` evaluator bombs, before and after the shape rules (issue 25)",
        "",
        f"{report['when']}, {machine['platform']}, {machine['cpu_count']} CPUs, Python "
        f"{machine['python']} ({machine['note']}). Command: `.venv/bin/python bench/ref_bombs.py "
        f"--before {args.before}`. Each case in a fresh child capped at {args.limit_gib} GiB of "
        f"address space and {args.timeout:g} s; peak = the child's peak resident memory "
        "(numpy imported: ~30 MB).",
        "",
        "| function | form | before: outcome | before: peak MB | before: s | after: outcome | "
        "after: peak MB | after: s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        b, a = r["before"], r["after"]
        lines.append(
            f"| `{r['function']}` | {r['form']} | {b['outcome'][:60]} | {b['peak_mb']} | "
            f"{b['seconds']} | {a['outcome'][:60]} | {a['peak_mb']} | {a['seconds']} |"
        )
    lines += ["", f"After: {'every case refused' if after_ok else 'NOT every case refused'}, "
              f"largest peak {max(peaks)} MB."]  # fmt: skip
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print(f"wrote {stem}.json and .md")
    return 0 if after_ok else 1


if __name__ == "__main__":
    sys.exit(main())
