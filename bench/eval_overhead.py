"""What ``ptxls eval`` itself costs per sample, measured side by side in one process:

- ``direct``: the same lowerings called one after another with ``lowering.service.lower_llm``
  (the loop, its transcript, ptxas, the task's verifier) — what eval cannot avoid;
- ``runner``: the same jobs through ``evaluation.runner.Runner`` with one lowering at a time
  (records written atomically, transcripts read back for tokens, scheduling, the results file);
  its extra time over ``direct``, per sample, is the runner's own overhead;
- ``runner x8``: the same with eight lowerings in flight (what concurrency buys on this machine);
- ``flaky``: the runner (x4) behind an endpoint that answers 429 (Retry-After 0.2 s) to half the
  requests and stops the stream of a quarter of them past the client's 1 s timeout, against the
  same clean endpoint — the same verdicts, and how much slower.

The "model" is tests/scripted_llm.py on loopback answering nvcc's PTX at once; verification is
compile-only (``--device none``: ptxas and the interface), so the figures are the runner's and the
loop's, not a test worker's. Repeats alternate the arms; medians reported.

    .venv/bin/python bench/eval_overhead.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "bench")]

from eval_scripted_models import BASE_SEED, flaky, nvcc_ptx, responder, suite_tasks  # noqa: E402

from ptxls.evaluation.runner import EvalOptions, Runner  # noqa: E402
from ptxls.evaluation.suite import excluded_examples  # noqa: E402
from ptxls.evaluation.testing import CompileOnlyPool, EvalVerifier  # noqa: E402
from ptxls.fewshot.retrieve import evaluating  # noqa: E402
from ptxls.lowering.settings import LlmSettings  # noqa: E402

from machine import gpu_name, result_path  # noqa: E402
from scripted_llm import ScriptedLLM  # noqa: E402

TASKS = ["relu_f32", "axpy_f32", "row_argmax_f32", "clip_scale_f32", "gemv_f32", "softmax_f32"]
SAMPLES = 2


def settings(server: ScriptedLLM, timeout_s: float = 5.0) -> LlmSettings:
    return LlmSettings(base_url=server.base_url, api_key="sk-bench-key-0123456789abcdef",
                       model="scripted-model", candidates=1, rounds=2, seed=BASE_SEED,
                       retries=4, retry_backoff_s=0.05, timeout_s=timeout_s)  # fmt: skip


async def direct(server, tasks, folder: Path, plan: dict) -> float:
    from ptxls.lowering.llm_client import LlmClient
    from ptxls.lowering.service import LowerJob, lower_llm

    s = settings(server)
    client = LlmClient(s)
    pool = CompileOnlyPool("bench")
    t0 = time.perf_counter()
    for i in range(SAMPLES):
        for t in tasks:
            src = folder / t.name / t.source_file
            src.parent.mkdir(parents=True, exist_ok=True)
            src.write_text(t.source_text())
            text = src.read_text()
            s_i = LlmSettings(**{**s.__dict__, "seed": BASE_SEED + 1000 * i})
            job = LowerJob(source_path=src, text=text, kernel=t.kernel, workspace=folder,
                           describe=text.strip() if t.source_kind == "request" else None)  # fmt: skip
            v = EvalVerifier(t, pool, device="auto", sizes=None, timeout_s=10.0)
            with evaluating(excluded_examples(tasks)):  # as the runner does
                out = await lower_llm(job, s_i, verifier=v, client=client)
            assert out.ok == (t.kernel not in plan), out.message
    wall = time.perf_counter() - t0
    await client.aclose()
    return wall


async def through_runner(server, tasks, folder: Path, concurrency: int, timeout_s: float = 5.0):
    opts = EvalOptions(run_dir=folder, tasks=tasks, samples=SAMPLES, rows=("llm",), device="none",
                       concurrency=concurrency)  # fmt: skip
    runner = Runner(opts, settings(server, timeout_s))
    t0 = time.perf_counter()
    records = await runner.execute()
    wall = time.perf_counter() - t0
    verdicts = {(r.task, r.sample): (r.passed, r.category) for r in records}
    return wall, verdicts, sum(r.retries for r in records)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    tasks = suite_tasks(TASKS)
    ptx = nvcc_ptx(tasks)
    plan = {"relu_f32": "ptxas-error"}  # one failing task: its two rounds are part of the cost
    arms: dict[str, list[float]] = {"direct": [], "runner": [], "runner x8": [], "clean x4": [],
                                    "flaky x4": []}  # fmt: skip
    same = True
    retries = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        with ScriptedLLM(responder(ptx, plan=plan)) as server:
            asyncio.run(through_runner(server, tasks, base / "warm", 4))  # imports, tool probes
        for rep in range(args.repeats):
            with ScriptedLLM(responder(ptx, plan=plan)) as server:
                arms["direct"].append(asyncio.run(direct(server, tasks, base / f"d{rep}", plan)))
                arms["runner"].append(
                    asyncio.run(through_runner(server, tasks, base / f"r{rep}", 1))[0]
                )
                arms["runner x8"].append(
                    asyncio.run(through_runner(server, tasks, base / f"c{rep}", 8))[0]
                )
                wall, clean, _ = asyncio.run(
                    through_runner(server, tasks, base / f"k{rep}", 4, 1.0)
                )
                arms["clean x4"].append(wall)
            with ScriptedLLM(flaky(responder(ptx, plan=plan), drop_s=1.5)) as server:
                wall, rough, n = asyncio.run(
                    through_runner(server, tasks, base / f"f{rep}", 4, 1.0)
                )
                arms["flaky x4"].append(wall)
                retries.append(n)
            same &= rough == clean
    n = len(tasks) * SAMPLES
    med = {k: statistics.median(v) for k, v in arms.items()}
    doc = {
        "benchmark": "eval-overhead",
        "machine": {"gpu": gpu_name(), "python": sys.version.split()[0]},
        "samples": n,
        "tasks": TASKS,
        "repeats": args.repeats,
        "wall_s": arms,
        "median_wall_s": med,
        "runner_overhead_per_sample_ms": 1000 * (med["runner"] - med["direct"]) / n,
        "per_sample_ms": {k: 1000 * v / n for k, v in med.items()},
        "flaky_same_verdicts": same,
        "flaky_retries": retries,
        "flaky_slowdown": med["flaky x4"] / med["clean x4"],
    }
    out = result_path("eval-overhead", "json")
    out.write_text(json.dumps(doc, indent=1) + "\n")
    md = [
        f"# ptxls eval: the runner's own cost per sample ({out.stem})",
        "",
        f"{n} samples ({len(tasks)} tasks x {SAMPLES}), scripted model on loopback answering at once, "
        f"compile-only verification, {args.repeats} repeats (median). Machine: {doc['machine']}.",
        "",
        "| arm | wall (median) | per sample |",
        "|---|---|---|",
        *[f"| {k} | {v:.2f} s | {1000 * v / n:.0f} ms |" for k, v in med.items()],
        "",
        f"Runner overhead over calling lower_llm directly: {doc['runner_overhead_per_sample_ms']:.0f} ms "
        "per sample (records, transcripts read back, scheduling, results).",
        f"Flaky endpoint (429s, dropped streams): same verdicts as the clean one: {same}; "
        f"{statistics.median(retries):.0f} retries (median), {doc['flaky_slowdown']:.2f}x the clean wall.",
    ]
    out.with_suffix(".md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
