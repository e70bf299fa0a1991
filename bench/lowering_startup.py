"""From `ptxls lower` to the first request the endpoint receives (CPU, the scripted endpoint).

    .venv/bin/python bench/lowering_startup.py [--repeats 7] [--before REV]

Each run starts ``python -m ptxls.cli.main lower vec_add.cu --backend llm --compile-only
--candidates 1 --rounds 1`` as a fresh process against the scripted OpenAI-compatible server
(tests/scripted_llm.py) on loopback; the time is from just before the process is started to the
moment the server receives the first POST /chat/completions (its clock, the same host). With
``--before REV`` the same is measured, interleaved run by run, for a git worktree of REV (the
code before the start-up work), so the ratio comes from one run on one machine.

Writes bench/results/lowering-startup/<machine>-<date>.json (and .md).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from lowering_common import machine
from machine import ROOT, result_path
from scripted_llm import GOOD_VEC_ADD, ScriptedLLM, Step, fenced


def _tree_at(rev: str, where: Path) -> Path:
    """A worktree of ``rev`` importable as the package ``ptxls`` (a ``ptxls`` link beside it)."""
    tree = where / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), rev],
                   check=True, capture_output=True)  # fmt: skip
    pkg = where / "pkg"
    pkg.mkdir()
    (pkg / "ptxls").symlink_to(tree, target_is_directory=True)
    return pkg


def _once(llm: ScriptedLLM, work: Path, pythonpath: str | None) -> float:
    llm.set_script([Step(fenced(GOOD_VEC_ADD))])
    before = len(llm.chat_requests)
    env = dict(os.environ, OPENAI_BASE_URL=llm.base_url, PTXLS_MODEL="scripted-model")
    env.pop("OPENAI_API_KEY", None)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    args = [sys.executable, "-m", "ptxls.cli.main", "lower", "vec_add.cu", "--backend", "llm",
            "--compile-only", "--candidates", "1", "--rounds", "1", "-q", "--dry-run"]  # fmt: skip
    started = time.time()
    p = subprocess.run(args, cwd=work, env=env, capture_output=True, text=True, timeout=120)
    if p.returncode != 0 or len(llm.chat_requests) <= before:
        raise SystemExit(f"the run failed ({p.returncode}): {p.stderr[-800:]}")
    return llm.chat_requests[before].at - started


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--before", help="a git revision to measure side by side (a worktree)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ptxls-startup-") as tmp:
        tmp_path = Path(tmp)
        work = tmp_path / "work"
        work.mkdir()
        (work / "vec_add.cu").write_text((ROOT / "examples" / "vec_add.cu").read_text())
        before_pkg = str(_tree_at(args.before, tmp_path)) if args.before else None
        times: dict[str, list[float]] = {"now": [], "before": []}
        try:
            with ScriptedLLM() as llm:
                _once(llm, work, None)  # warm the file cache once; not counted
                for _ in range(args.repeats):
                    times["now"].append(_once(llm, work, None))
                    if before_pkg:
                        times["before"].append(_once(llm, work, before_pkg))
        finally:
            if args.before:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                                str(tmp_path / "tree")], capture_output=True)  # fmt: skip
    result = {
        "machine": machine(),
        # the 2-core machine is shared: its load (1, 5, 15 min) says how busy it was
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "what": "seconds from starting `ptxls lower vec_add.cu --backend llm --compile-only` to "
        "the first chat request received by the scripted endpoint on loopback",
        "repeats": args.repeats,
        "now": {"median_s": round(statistics.median(times["now"]), 3),
                "runs_s": [round(t, 3) for t in times["now"]]},
    }  # fmt: skip
    if times["before"]:
        med = statistics.median(times["before"])
        result["before"] = {"rev": args.before, "median_s": round(med, 3),
                            "runs_s": [round(t, 3) for t in times["before"]]}  # fmt: skip
        result["speedup"] = round(med / result["now"]["median_s"], 2)
    text = json.dumps(result, indent=2)
    print(text)
    result_path("lowering-startup", "json").write_text(text + "\n")
    md = [
        "# ptxls lower: start-up to the first request",
        "",
        f"{result['what']}; median of {args.repeats} runs, interleaved, on {machine()['host']} "
        f"({machine()['cpus']} CPUs, Python {machine()['python']}, load average "
        f"{result['load_average_after'][0]} after the runs: the machine is shared).",
        "",
        "| code | median (s) | runs (s) |",
        "|---|---|---|",
        f"| now | {result['now']['median_s']} | {', '.join(map(str, result['now']['runs_s']))} |",
    ]
    if "before" in result:
        b = result["before"]
        md.append(f"| before ({b['rev']}) | {b['median_s']} | {', '.join(map(str, b['runs_s']))} |")
        md += ["", f"Speed-up: {result['speedup']}x."]
    result_path("lowering-startup", "md").write_text("\n".join(md) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
