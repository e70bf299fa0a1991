"""How fast the debugger reaches the first wrong element of a 2^20-element vec_add, and how long
one step takes — through the real adapter process (``ptxls debug-adapter``) over stdio, the
way an editor drives it.

The kernel is examples/vec_add.ptx with a planted bug: elements from a threshold on get
``a - b`` (a wrong branch in the upper part of the array). The benchmark first finds the first
wrong element the way a test does (one emulator launch on the spec's inputs for the seed,
every element against a + b), then times, for the adapter:

- ``spawn_to_initialized_s``: process start to the initialize response (Python imports);
- ``launch_to_stop_s``: the launch request to the ``stopped`` event of a data breakpoint on
  that element (loading the PTX, the spec, 2^20 inputs, running to the writing thread);
- ``spawn_to_stop_s``: both together: what a person waits after pressing F5;
- per step (``next`` request → ``stopped`` event) from the stop, over the steps to the end
  of the thread, and the Registers scope read at each stop;
- ``first_wrong_found_by_adapter_spawn_to_stop_s``: ``watch: "first-wrong"`` (the adapter runs
  the case, the numpy reference and the comparison, then runs to the writer);
- ``hover_link_spawn_to_stop_s``: "Debug first wrong element" from a failed test's report or
  hover: the launch configuration gputest/debug_launch.py makes (``n``, ``seed``, ``watch:
  "c[k]"``, no thread), so the adapter first finds the writing thread (a run up to its store)
  to follow it from the start, then runs to the data breakpoint; VS Code's empty
  ``setDataBreakpoints`` is sent as VS Code sends it.

Writes bench/results/debugger-speed/<machine>-<date>[-<part>].{json,md}.
Run: .venv/bin/python bench/debugger_speed.py [--part NAME]
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests"))

from dap_client import DapClient  # noqa: E402

from ptxls import emulator  # noqa: E402
from ptxls.debugger.case import build_case  # noqa: E402
from ptxls.debugger.views import buffer_view  # noqa: E402

from machine import result_path  # noqa: E402

N = 1 << 20
SEED = 11
THRESHOLD = 700_001  # planted: elements from here on are a - b
GOAL_REACH_S, GOAL_STEP_S = 2.0, 0.1


def planted_kernel(folder: Path) -> Path:
    text = (ROOT / "examples" / "vec_add.ptx").read_text()
    wrong = text.replace(".reg .pred  %p<2>;", ".reg .pred  %p<3>;").replace(
        "    add.f32         %f3, %f1, %f2;\n",
        f"    setp.ge.s32     %p2, %r5, {THRESHOLD};\n"
        "    add.f32         %f3, %f1, %f2;\n"
        "    @%p2 sub.f32    %f3, %f1, %f2;\n",
    )
    assert wrong != text
    (folder / "vec_add.ptx").write_text(wrong)
    # the same kernel with its test in an annotation (numpy reference), for "first-wrong"
    ann = "// @gputest a: in f32[n]; b: in f32[n]; c: out f32[n]; n: size; ref: c = a + b\n"
    (folder / "annotated.ptx").write_text(
        wrong.replace(".visible .entry vec_add(", ann + ".visible .entry vec_add(")
    )
    (folder / "vec_add.cu").write_text((ROOT / "examples" / "vec_add.cu").read_text())  # spec
    return folder / "vec_add.ptx"


def first_wrong_element(program: Path) -> tuple[int, float]:
    case = build_case(str(program), None, N, SEED)
    t0 = time.perf_counter()
    emulator.launch(case.module, case.kernel, case.grid, case.block, case.shared, case.params,
                    case.memory)  # fmt: skip
    seconds = time.perf_counter() - t0
    a, b, c = (buffer_view_of(case, name) for name in ("a", "b", "c"))
    wrong = np.nonzero(c != (a + b))[0]
    return int(wrong[0]), seconds


def buffer_view_of(case, name):
    class _S:  # views.buffer_view reads case.memory through a session-like object
        pass

    s = _S()
    s.case = case
    return buffer_view(s, case.buffer(name)).copy()


def main() -> int:
    part = sys.argv[sys.argv.index("--part") + 1] if "--part" in sys.argv else ""
    with tempfile.TemporaryDirectory() as tmp:
        program = planted_kernel(Path(tmp))
        k, emu_launch_s = first_wrong_element(program)
        assert k == THRESHOLD, k
        t_spawn = time.perf_counter()
        dap = DapClient()
        try:
            dap.request("initialize", {"adapterID": "ptxls"})
            t_init = time.perf_counter()
            r = dap.request("launch", {"program": str(program), "n": N, "seed": SEED})
            assert r["success"], r
            dap.wait_event("initialized")
            info = dap.request("dataBreakpointInfo", {"name": f"c[{k}]"})["body"]
            dap.request("setDataBreakpoints", {"breakpoints": [{"dataId": info["dataId"]}]})
            dap.request("configurationDone")
            ev = dap.wait_event("stopped", timeout=120)["body"]
            t_stop = time.perf_counter()
            assert ev["reason"] == "data breakpoint", ev
            tid = ev["threadId"]
            frame = dap.top_frame(tid)
            expect = f"block ({k // 256},0,0) thread ({k % 256},0,0)"
            assert expect in frame["name"], (frame, expect)
            steps, reads, lines = [], [], [frame["line"]]
            while True:
                t0 = time.perf_counter()
                dap.request("next", {"threadId": tid})
                while True:
                    msg = dap._next(60)
                    if msg["type"] == "event" and msg["event"] in ("stopped", "terminated"):
                        break
                steps.append(time.perf_counter() - t0)
                if msg["event"] == "terminated":
                    break
                t1 = time.perf_counter()
                frame = dap.top_frame(tid)
                dap.variables(frame["id"], "Registers")
                reads.append(time.perf_counter() - t1)
                lines.append(frame["line"])
            # and steps from the start of a thread, where every instruction runs for 2^20
            dap2 = DapClient()
            dap2.start(str(program), breakpoints=[20], n=N, seed=SEED, block=k // 256,
                       thread=k % 256)  # fmt: skip
            dap2.request("configurationDone")
            ev2 = dap2.wait_event("stopped", timeout=120)["body"]
            early, early_lines = [], [dap2.top_frame(ev2["threadId"])["line"]]
            for _ in range(12):
                t0 = time.perf_counter()
                dap2.request("next", {"threadId": ev2["threadId"]})
                dap2.wait_event("stopped")
                early.append(time.perf_counter() - t0)
                t1 = time.perf_counter()
                early_lines.append(dap2.top_frame(ev2["threadId"])["line"])
                dap2.variables(ev2["threadId"], "Registers")
                reads.append(time.perf_counter() - t1)
            dap2.close()
            # one click: the adapter finds the first wrong element itself (a whole run, the
            # numpy reference, the comparison) and then runs to its writer
            t0 = time.perf_counter()
            dap3 = DapClient()
            dap3.start(str(Path(tmp) / "annotated.ptx"), n=N, seed=SEED, watch="first-wrong")
            dap3.request("configurationDone")
            ev3 = dap3.wait_event("stopped", timeout=120)["body"]
            one_click = time.perf_counter() - t0
            assert ev3["description"] == f"c[{k}] written", ev3
            dap3.close()
            # the hover's / report's link: the launch configuration of the failed case
            from ptxls.gputest.debug_launch import launch_config
            from ptxls.gputest.report import CaseResult, TestReport

            failed = CaseResult(0, N, SEED, False, outputs=[{"name": "c", "first_wrong": [[k]]}])
            config = launch_config(TestReport("vec_add", "fail", cases=[failed]), str(program))
            assert config is not None and config["watch"] == f"c[{k}]", config
            launch = {x: v for x, v in config.items() if x not in ("type", "request", "name")}
            t0 = time.perf_counter()
            dap4 = DapClient()
            dap4.start(launch.pop("program"), **launch)
            dap4.request("setDataBreakpoints", {"breakpoints": []})
            dap4.request("configurationDone")
            ev4 = dap4.wait_event("stopped", timeout=120)["body"]
            hover_link = time.perf_counter() - t0
            assert ev4["description"] == f"c[{k}] written", ev4
            said = "".join(e["body"]["output"] for e in dap4.events if e["event"] == "output")
            assert f"following block ({k // 256},0,0) thread ({k % 256},0,0)" in said, said
            dap4.close()
        finally:
            dap.close()
    all_steps = steps + early
    result = {
        "benchmark": "debugger-speed",
        "kernel": f"examples/vec_add.ptx with a planted bug (a - b from element {THRESHOLD} on)",
        "n": N,
        "seed": SEED,
        "first_wrong_element": k,
        "emulator_launch_whole_kernel_s": round(emu_launch_s, 3),
        "spawn_to_initialized_s": round(t_init - t_spawn, 3),
        "launch_to_stop_s": round(t_stop - t_init, 3),
        "spawn_to_stop_s": round(t_stop - t_spawn, 3),
        "first_wrong_found_by_adapter_spawn_to_stop_s": round(one_click, 3),
        "hover_link_spawn_to_stop_s": round(hover_link, 3),
        "goal_reach_s": GOAL_REACH_S,
        "reach_within_goal": (t_stop - t_spawn) <= GOAL_REACH_S,
        "steps_after_stop": len(steps),
        "step_lines_after_stop": lines,
        "steps_from_thread_start": len(early),
        "step_lines_from_thread_start": early_lines,
        "step_s_median": round(statistics.median(all_steps), 4),
        "step_s_max": round(max(all_steps), 4),
        "registers_read_s_max": round(max(reads), 4) if reads else None,
        "goal_step_s": GOAL_STEP_S,
        "steps_within_goal": max(all_steps) < GOAL_STEP_S,
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "loadavg_at_start": list(os.getloadavg()),
        },
    }
    path = result_path("debugger-speed", "json", part)
    path.write_text(json.dumps(result, indent=2) + "\n")
    md = result_path("debugger-speed", "md", part)
    md.write_text(
        "# debugger-speed\n\n"
        f"`bench/debugger_speed.py`: vec_add, n = 2^20, first wrong element {k} "
        f"(planted a - b from {THRESHOLD}).\n\n"
        "| measure | seconds | goal |\n|---|---:|---|\n"
        f"| process start → initialize answered | {result['spawn_to_initialized_s']} | |\n"
        f"| launch → stopped at the writing thread of c[{k}] | {result['launch_to_stop_s']} | |\n"
        f"| process start → stopped (F5 to stop) | {result['spawn_to_stop_s']} | ≤ 2 s |\n"
        "| the same with `watch: first-wrong` (the adapter runs the case, the numpy reference "
        f"and the comparison first) | {result['first_wrong_found_by_adapter_spawn_to_stop_s']} "
        "| ≤ 2 s |\n"
        '| the same from a failed test\'s "Debug first wrong element" (`watch: c[k]`, no '
        "thread: the adapter first finds the writing thread to follow it from the start) | "
        f"{result['hover_link_spawn_to_stop_s']} | ≤ 2 s |\n"
        f"| one step (median of {len(all_steps)}) | {result['step_s_median']} | < 0.1 s |\n"
        f"| one step (max) | {result['step_s_max']} | < 0.1 s |\n"
        f"| Registers scope read (max) | {result['registers_read_s_max']} | |\n\n"
        f"Machine: {platform.platform()}, {os.cpu_count()} CPUs, load average at start "
        f"{os.getloadavg()[0]:.2f} (shared machine).\n"
    )
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
