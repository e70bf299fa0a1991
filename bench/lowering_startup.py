"""From `ptxls lower` to the first request the endpoint receives (CPU, the scripted endpoint).

    .venv/bin/python bench/lowering_startup.py [--repeats 7] [--before REV] [--part NAME]

Each run starts ``python -m ptxls.cli.main lower vec_add.cu --backend llm --compile-only
--candidates 1 --rounds 1`` as a fresh process against the scripted OpenAI-compatible server
(tests/scripted_llm.py) on loopback; the time is from just before the process is started to the
moment the server receives the first POST /chat/completions (its clock, the same host). With
``--before REV`` the same is measured, interleaved run by run, for a git worktree of REV (the
code before the start-up work), so the ratio comes from one run on one machine.

Interleaved with them, the floor: a bare ``python -c`` that imports the openai SDK, makes an
``AsyncOpenAI`` client and sends the same kind of streamed request (nothing of ptxls). No
``ptxls lower`` that sends its request through the SDK can start faster than that.

Writes bench/results/lowering-startup/<machine>-<date>[-part].json (and .md).
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
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from rev_tree import importable_at

from lowering_common import machine
from machine import ROOT, result_path
from scripted_llm import GOOD_VEC_ADD, ScriptedLLM, Step, fenced

# The floor: Python's start, the SDK's import and the SDK's own first request, nothing else.
_FLOOR = """
import asyncio, os, openai
async def main():
    client = openai.AsyncOpenAI(api_key="no-key", base_url=os.environ["OPENAI_BASE_URL"],
                                max_retries=0)
    messages = [{"role": "user", "content": "lower vec_add to PTX"}]
    async with client.chat.completions.with_streaming_response.create(
            model="scripted-model", messages=messages, stream=True) as raw:
        async for _ in raw.iter_bytes():
            pass
asyncio.run(main())
"""


def _once(llm: ScriptedLLM, work: Path, pythonpath: str | None) -> tuple[float, float]:
    """(wall seconds to the first request, CPU seconds the process used until then). The
    endpoint never answers: the process is killed as its request arrives, and its CPU time
    (user + system, with the child processes it waited for) is read from wait4, a figure the
    machine's load inflates much less than the wall time."""
    child: list[subprocess.Popen] = []
    own: list[float | None] = []

    def arrived(body: dict, i: int) -> Step:
        # in the server's thread, as the request arrives: the process's own CPU, then the
        # process stopped there, so neither figure counts the imports it does after sending
        own.append(_own_cpu(child[0].pid))
        child[0].kill()
        return Step(fenced(GOOD_VEC_ADD), delay=60)

    llm.set_script(arrived)
    before = len(llm.chat_requests)
    env = dict(os.environ, OPENAI_BASE_URL=llm.base_url, PTXLS_MODEL="scripted-model")
    env.pop("OPENAI_API_KEY", None)
    # as installed: bytecode cached (pip compiles it at install); the first, uncounted run
    # writes what is missing
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    args = [sys.executable, "-m", "ptxls.cli.main", "lower", "vec_add.cu", "--backend", "llm",
            "--compile-only", "--candidates", "1", "--rounds", "1", "-q", "--dry-run"]  # fmt: skip
    if pythonpath == "floor":
        args = [sys.executable, "-c", _FLOOR]
        pythonpath = None
    started = time.time()
    p = subprocess.Popen(args, cwd=work, env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)  # fmt: skip
    child.append(p)
    while not own:
        if p.poll() is not None and not own:
            raise SystemExit(f"the run ended before any request ({p.returncode}): "
                             f"{p.stderr.read().decode()[-800:]}")  # fmt: skip
        time.sleep(0.002)
    wall = llm.chat_requests[before].at - started
    p.kill()
    try:
        _, _, usage = os.wait4(p.pid, 0)
        used = usage.ru_utime + usage.ru_stime
    except ChildProcessError:  # p.poll() above reaped it (killed between its check and ours)
        used = own[0] if own[0] is not None else float("nan")
    p.returncode = -9
    p.stderr.close()
    _OWN.append(own[0] if own[0] is not None else used)
    return wall, used


_OWN: list[float] = []  # each run's own CPU (no children), in the order of the runs
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _own_cpu(pid: int) -> float | None:
    """The process's own user + system seconds so far, without its children (the GPU probe's
    Python and ptxas run on the other core): /proc/PID/stat's utime and stime (Linux)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICK
    except (OSError, IndexError, ValueError):
        return None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--before", help="a git revision to measure side by side (a worktree)")
    ap.add_argument("--part", default="", help="suffix of the result's file name")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ptxls-startup-") as tmp, ExitStack() as stack:
        tmp_path = Path(tmp)
        work = tmp_path / "work"
        work.mkdir()
        (work / "vec_add.cu").write_text((ROOT / "examples" / "vec_add.cu").read_text())
        before_pkg = stack.enter_context(importable_at(args.before)) if args.before else None
        times: dict[str, list[float]] = {"now": [], "before": [], "floor": []}
        cpu: dict[str, list[float]] = {"now": [], "before": [], "floor": []}
        own: dict[str, list[float]] = {"now": [], "before": [], "floor": []}
        load_before = [round(x, 2) for x in os.getloadavg()]
        with ScriptedLLM() as llm:
            _once(llm, work, None)  # warm the file cache once; not counted
            _once(llm, work, "floor")
            if before_pkg:
                _once(llm, work, before_pkg)
            for _ in range(args.repeats):
                for name, pkg in (("now", None), ("before", before_pkg), ("floor", "floor")):
                    if name == "before" and not pkg:
                        continue
                    wall, used = _once(llm, work, pkg)
                    times[name].append(wall)
                    cpu[name].append(used)
                    own[name].append(_OWN[-1])
    result = {
        "machine": machine(),
        # the 2-core machine is shared: its load (1, 5, 15 min) says how busy it was
        "load_average_before": load_before,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "what": "seconds from starting `ptxls lower vec_add.cu --backend llm --compile-only` to "
        "the first chat request received by the scripted endpoint on loopback",
        "repeats": args.repeats,
        "now": {"median_s": round(statistics.median(times["now"]), 3),
                "runs_s": [round(t, 3) for t in times["now"]],
                "cpu_median_s": round(statistics.median(cpu["now"]), 3),
                "cpu_runs_s": [round(t, 3) for t in cpu["now"]],
                "own_cpu_median_s": round(statistics.median(own["now"]), 3)},
        "floor": {"what": "python -c: import openai, AsyncOpenAI(), one streamed request",
                  "median_s": round(statistics.median(times["floor"]), 3),
                  "min_s": round(min(times["floor"]), 3),
                  "runs_s": [round(t, 3) for t in times["floor"]],
                  "cpu_median_s": round(statistics.median(cpu["floor"]), 3),
                  "cpu_runs_s": [round(t, 3) for t in cpu["floor"]],
                  "own_cpu_median_s": round(statistics.median(own["floor"]), 3)},
    }  # fmt: skip
    result["now"]["min_s"] = round(min(times["now"]), 3)
    result["over_floor_s"] = round(result["now"]["median_s"] - result["floor"]["median_s"], 3)
    if times["before"]:
        med = statistics.median(times["before"])
        result["before"] = {"rev": args.before, "median_s": round(med, 3),
                            "runs_s": [round(t, 3) for t in times["before"]],
                            "cpu_median_s": round(statistics.median(cpu["before"]), 3),
                            "cpu_runs_s": [round(t, 3) for t in cpu["before"]],
                            "own_cpu_median_s": round(statistics.median(own["before"]), 3)}  # fmt: skip
        result["speedup"] = round(med / result["now"]["median_s"], 2)
        result["cpu_speedup"] = round(
            result["before"]["cpu_median_s"] / result["now"]["cpu_median_s"], 2
        )
    text = json.dumps(result, indent=2)
    print(text)
    result_path("lowering-startup", "json", args.part).write_text(text + "\n")
    md = [
        "# ptxls lower: start-up to the first request",
        "",
        f"{result['what']}; median of {args.repeats} runs, interleaved, on {machine()['host']} "
        f"({machine()['cpus']} CPUs, Python {machine()['python']}, load average "
        f"{load_before[0]} before and {result['load_average_after'][0]} after the runs: the "
        "machine is shared).",
        "",
        "CPU: user + system seconds the process used until its request arrived (wait4, with "
        "the children it waited for: the GPU probe's Python, ptxas), which the load inflates "
        "less than the wall time; own CPU: the process alone (/proc/PID/stat), its children "
        "ran on the other core.",
        "",
        "| code | wall median (s) | CPU median (s) | own CPU median (s) | wall runs (s) |",
        "|---|---|---|---|---|",
        f"| now | {result['now']['median_s']} | {result['now']['cpu_median_s']} | "
        f"{result['now']['own_cpu_median_s']} | {', '.join(map(str, result['now']['runs_s']))} |",
        f"| floor: `python -c` importing the SDK and sending one request through it | "
        f"{result['floor']['median_s']} | {result['floor']['cpu_median_s']} | "
        f"{result['floor']['own_cpu_median_s']} | "
        f"{', '.join(map(str, result['floor']['runs_s']))} |",
    ]
    if "before" in result:
        b = result["before"]
        md.append(
            f"| before ({b['rev']}) | {b['median_s']} | {b['cpu_median_s']} | "
            f"{b['own_cpu_median_s']} | {', '.join(map(str, b['runs_s']))} |"
        )
        md += ["", f"Speed-up: {result['speedup']}x wall, {result['cpu_speedup']}x CPU."]
    md += ["", f"Now minus the floor (medians): {result['over_floor_s']} s."]
    result_path("lowering-startup", "md", args.part).write_text("\n".join(md) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
