"""The lowering loop's cost per candidate round, counted: ptxas and nvcc runs, reads of the
candidate's PTX, and milliseconds (issue 11, "one assemble per candidate").

    .venv/bin/python bench/loop_overhead.py --label before            (this machine, CPU)
    python3 bench/loop_overhead.py --label after --out-dir $OUT       (the H200: GPU scenarios)

The "model" is the scripted OpenAI-compatible server on loopback answering instantly; the
lowering runs through ``service.lower_llm``, as ``ptxls lower`` does. Counting is real:

- ptxas / nvcc: ``tests/tool_counter.ToolCounter`` puts a logging shell wrapper in front of the
  real binaries (PTXLS_PTXAS / PTXLS_NVCC); a run is a "compile" unless it is a --version /
  --help / ISA probe.
- reads of the PTX: every call of a PTX reader (``tool_counter.READER_NAMES``) in this process.
  The GPU worker's own scan (a separate process) is not counted here.

Each repeat's replies carry a unique comment line, so no build cache hides a run (a real model
never sends the same text twice); the first repeat warms caches (tool probes, the reference's
nvcc build, imports) and is dropped.

Scenarios: ``compile_only`` (broken, then fixed; ptxas-checked only), and on a GPU ``gpu_test``
(broken, then fixed; the fixed one GPU-tested against nvcc's build of the source) and
``gpu_optimize`` (passes, asked for a faster version, passes again). Per round position:
ptxas compiles (and of which kind), nvcc runs, PTX reads, and ms (total, the model, the
loop's own = total - model, the check, the verify). "after_loop" is what ``lower_llm`` does
once the loop has ended (the provenance header's resource line).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # tool_counter

from tool_counter import ReaderCounter, ToolCounter

from lowering_common import ROOT, machine


def _unique(ptx: str, tag: str) -> str:
    return ptx.rstrip() + f"\n// {tag}\n"


async def one_lowering(scenario: str, rep: int, counters) -> dict:
    """One lowering of examples/vec_add.cu; returns its rounds with counts attached."""
    from ptxls.lowering import service
    from ptxls.lowering.settings import LlmSettings

    from scripted_llm import BROKEN_VEC_ADD, GOOD_VEC_ADD, ScriptedLLM, Step, fenced

    tools, readers = counters
    if scenario == "gpu_optimize":
        replies = [
            _unique(GOOD_VEC_ADD, f"rep {rep} first"),
            _unique(GOOD_VEC_ADD, f"rep {rep} faster"),
        ]
    else:
        replies = [_unique(BROKEN_VEC_ADD, f"rep {rep}"), _unique(GOOD_VEC_ADD, f"rep {rep}")]
    tag = f"{scenario}-{rep}"

    def mark(label: str) -> None:
        tools.mark(f"{tag}:{label}")
        readers.mark(f"{tag}:{label}")

    def progress(msg: str) -> None:
        m = re.search(r"round (\d+): asking the model", msg)
        if m:
            mark(f"round {m.group(1)}")

    real_run_loop = service.run_loop

    async def run_loop_marked(*a, **kw):
        try:
            return await real_run_loop(*a, **kw)
        finally:
            mark("after_loop")

    with (
        tempfile.TemporaryDirectory() as tmp,
        ScriptedLLM([Step(fenced(p)) for p in replies]) as llm,
    ):
        cu = Path(tmp) / "vec_add.cu"
        shutil.copy(ROOT / "examples" / "vec_add.cu", cu)
        settings = LlmSettings(
            base_url=llm.base_url,
            api_key="sk-bench-000000",
            model="scripted-model",
            candidates=1,
            rounds=2,
            retry_backoff_s=0.01,
        )
        job = service.LowerJob(
            cu,
            cu.read_text(),
            kernel="vec_add",
            workspace=Path(tmp),
            compile_only=scenario == "compile_only",
            optimize=scenario == "gpu_optimize",
        )
        service.run_loop = run_loop_marked
        mark("start")
        t0 = time.monotonic()
        try:
            outcome = await service.lower_llm(job, settings, progress=progress)
        finally:
            service.run_loop = real_run_loop
        wall = time.monotonic() - t0
        mark("end")
    assert outcome.ok, outcome.message
    if scenario != "compile_only":
        assert outcome.gpu_tested, outcome.message
    rounds = outcome.loop.best.rounds
    return {"rounds": rounds, "wall_s": wall, "tag": tag}


def _tool_counts(runs) -> dict:
    compiles = [r for r in runs if r.is_compile]
    kinds: dict[str, int] = {}
    for r in compiles:
        kinds[r.kind()] = kinds.get(r.kind(), 0) + 1
    return {
        "ptxas_compiles": sum(r.tool == "ptxas" for r in compiles),
        "nvcc_runs": sum(r.tool == "nvcc" for r in compiles),
        "tool_probes": sum(r.is_probe for r in runs),
        "compile_kinds": kinds,
    }


def _per_round(tag: str, rounds, tool_segs, reader_segs) -> tuple[list[dict], dict]:
    out = []
    for r in rounds:
        label = f"{tag}:round {r.round}"
        tc = _tool_counts(tool_segs.get(label, []))
        reads = reader_segs.get(label, {})
        out.append(
            {
                "round": r.round,
                "outcome": r.outcome,
                **tc,
                "ptx_reads": sum(reads.values()),
                "ptx_reads_by_reader": reads,
                "total_ms": r.total_s * 1000,
                "model_ms": r.llm_s * 1000,
                "loop_own_ms": max(r.total_s - r.llm_s, 0.0) * 1000,
                "check_ms": r.check_s * 1000,
                "verify_ms": r.verify_s * 1000,
            }
        )
    after = f"{tag}:after_loop"
    reads = reader_segs.get(after, {})
    tail = {**_tool_counts(tool_segs.get(after, [])), "ptx_reads": sum(reads.values()),
            "ptx_reads_by_reader": reads}  # fmt: skip
    return out, tail


def _median(values):
    return round(statistics.median(values), 2) if values else None


def _summarize(samples: list[list[dict]], tails: list[dict], walls: list[float]) -> dict:
    positions = []
    for i in range(max(len(s) for s in samples)):
        at = [s[i] for s in samples if len(s) > i]
        positions.append(
            {
                "round": i + 1,
                "outcome": sorted({a["outcome"] for a in at}),
                "ptxas_compiles": sorted({a["ptxas_compiles"] for a in at}),
                "nvcc_runs": sorted({a["nvcc_runs"] for a in at}),
                "compile_kinds": at[-1]["compile_kinds"],
                "ptx_reads": sorted({a["ptx_reads"] for a in at}),
                "ptx_reads_by_reader": at[-1]["ptx_reads_by_reader"],
                **{
                    f"{k}_median": _median([a[k] for a in at])
                    for k in ("total_ms", "model_ms", "loop_own_ms", "check_ms", "verify_ms")
                },
            }
        )
    return {
        "repeats_measured": len(samples),
        "rounds": positions,
        "after_loop": {
            "ptxas_compiles": sorted({t["ptxas_compiles"] for t in tails}),
            "compile_kinds": tails[-1]["compile_kinds"] if tails else {},
            "ptx_reads": sorted({t["ptx_reads"] for t in tails}),
            "ptx_reads_by_reader": tails[-1]["ptx_reads_by_reader"] if tails else {},
        },
        "lowering_wall_ms_median": _median([w * 1000 for w in walls]),
    }


async def run_scenario(scenario: str, repeats: int, needs_isa) -> dict:
    # import everything the loop reaches before wrapping the readers
    import ptxls.gputest.api
    import ptxls.gputest.worker
    import ptxls.lowering.service  # noqa: F401

    samples, tails, walls = [], [], []
    with ToolCounter(needs_isa=needs_isa) as tools, ReaderCounter() as readers:
        for rep in range(repeats + 1):
            res = await one_lowering(scenario, rep, (tools, readers))
            if rep == 0:
                continue  # warm-up: tool probes, the reference's nvcc build, imports
            rounds, tail = _per_round(
                res["tag"], res["rounds"], tools.segments(), readers.segments()
            )
            samples.append(rounds)
            tails.append(tail)
            walls.append(res["wall_s"])
        real = dict(tools.real)
    summary = _summarize(samples, tails, walls)
    summary["wrapped_tools"] = real
    return summary


def machine_facts() -> dict:
    import platform
    import subprocess

    facts = machine()
    facts["platform"] = platform.platform()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(ln for ln in f if ln.startswith("model name"))
        facts["cpu_model"] = cpu.split(":", 1)[1].strip()
    except (OSError, StopIteration):
        pass
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, cwd=ROOT, timeout=10).stdout.strip()  # fmt: skip
        facts["commit"] = out
    except (OSError, subprocess.SubprocessError):
        pass
    return facts


def _needs_isa():
    from scripted_llm import GOOD_VEC_ADD

    m = re.search(r"^\s*\.version\s+(\d+)\.(\d+)", GOOD_VEC_ADD, re.M)
    return (int(m.group(1)), int(m.group(2))) if m else None


async def measure(args) -> dict:
    from ptxls.lowering.service import close_gpu_worker
    from ptxls.lowering.verify import gpu_availability

    result: dict = {"machine": machine_facts(), "label": args.label, "scenarios": {}}
    gpu_ok, gpu_why = await gpu_availability()
    result["machine"]["gpu"] = gpu_why
    scenarios = ["compile_only"] + (["gpu_test", "gpu_optimize"] if gpu_ok else [])
    try:
        for name in scenarios:
            print(f"[{name}] {args.repeats} repeats", flush=True)
            result["scenarios"][name] = await run_scenario(name, args.repeats, _needs_isa())
    finally:
        await close_gpu_worker()
    if not gpu_ok:
        result["gpu_scenarios"] = f"skipped: {gpu_why}"
    return result


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=8)
    ap.add_argument("--label", default="before")
    ap.add_argument("--out-dir", default=str(ROOT / "bench" / "results" / "loop-overhead"))
    ap.add_argument("--name", default="", help="file name part: cpu or h200 (default: guessed)")
    args = ap.parse_args()
    result = asyncio.run(measure(args))
    where = args.name or ("h200" if "H200" in result["machine"].get("gpu", "") else "cpu")
    day = time.strftime("%Y-%m-%d", time.gmtime())
    out = Path(args.out_dir) / f"{where}-{day}-{args.label}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(result, indent=2)
    out.write_text(text + "\n")
    for name, sc in result["scenarios"].items():
        print(f"\n{name}:")
        for r in sc["rounds"]:
            print(f"  round {r['round']} {r['outcome']}: ptxas compiles {r['ptxas_compiles']} "
                  f"{r['compile_kinds']}, nvcc {r['nvcc_runs']}, PTX reads {r['ptx_reads']}, "
                  f"loop's own {r['loop_own_ms_median']} ms (check {r['check_ms_median']}, "
                  f"verify {r['verify_ms_median']})")  # fmt: skip
        a = sc["after_loop"]
        print(f"  after the loop: ptxas compiles {a['ptxas_compiles']} {a['compile_kinds']}, "
              f"PTX reads {a['ptx_reads']}")  # fmt: skip
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
