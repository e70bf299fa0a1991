"""The validation runs of ``ptxls eval`` without a real model, as a report people can look at:
three scripted "models" over real HTTP (tests/scripted_llm.py) on the same eight tasks, two
samples each — one answering nvcc's PTX, one answering planted wrong kernels (one failure kind
per task), one mixed (right on some samples, a wrong result on others) — scored, compared with
``--compare`` and rendered as one HTML report.

    .venv/bin/python bench/eval_validation.py
    -> bench/results/eval/<machine>-<date>-validation.{json,md,html}
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "bench")]

from eval_scripted_models import BASE_SEED, nvcc_ptx, responder, suite_tasks  # noqa: E402

from ptxls.evaluation.report_html import html_report  # noqa: E402
from ptxls.evaluation.report_text import compare_table, summary_table  # noqa: E402
from ptxls.evaluation.results import results_document  # noqa: E402
from ptxls.evaluation.runner import EvalOptions, Runner  # noqa: E402
from ptxls.lowering.settings import LlmSettings  # noqa: E402

from machine import result_path  # noqa: E402
from scripted_llm import ScriptedLLM  # noqa: E402

TASKS = ["relu_f32", "axpy_f32", "square_f32", "row_argmax_f32", "row_max_f32", "clip_scale_f32",
         "gemv_f32", "transpose_tiled_f32"]  # fmt: skip
PLANTED = {"relu_f32": "race-or-oob", "axpy_f32": "refusal", "square_f32": "wrong-result",
           "row_argmax_f32": "truncation", "row_max_f32": "ptxas-error",
           "clip_scale_f32": "interface", "gemv_f32": "endpoint-error",
           "transpose_tiled_f32": "wrong-result"}  # fmt: skip
MIXED_WRONG = {"relu_f32": {1}, "axpy_f32": {0, 1}, "gemv_f32": {0}}


async def one(name: str, model, folder: Path) -> tuple[str, dict]:
    tasks = suite_tasks(TASKS)
    with ScriptedLLM(model) as server:
        s = LlmSettings(base_url=server.base_url, api_key="sk-validation-key-0123456789",
                        model=f"scripted:{name}", candidates=1, rounds=2, seed=BASE_SEED,
                        retries=2, retry_backoff_s=0.05, stream=False)  # fmt: skip
        server.models = (s.model,)
        opts = EvalOptions(run_dir=folder / name, tasks=tasks, samples=2, rows=("llm", "nvcc"),
                           concurrency=4)  # fmt: skip
        runner = Runner(opts, s)
        records = await runner.execute()
    return name, results_document(runner.run, records, runner.info, ks=(1, 2))


def main() -> None:
    ptx = nvcc_ptx(suite_tasks(TASKS))
    models = {
        "nvcc-model": responder(ptx),
        "planted": responder(ptx, plan=PLANTED),
        "mixed": responder(ptx, wrong_samples=MIXED_WRONG),
    }
    with tempfile.TemporaryDirectory() as tmp:
        runs = [asyncio.run(one(n, m, Path(tmp))) for n, m in models.items()]
    out = result_path("eval", "json", part="validation")
    slim = {n: {"summary": d["summary"], "info": d["info"], "config": d["config"]} for n, d in runs}
    out.write_text(json.dumps(slim, indent=1) + "\n")
    out.with_suffix(".html").write_text(html_report(runs))
    md = ["# ptxls eval validation: three scripted models over real HTTP", "",
          f"Tasks: {', '.join(TASKS)}; 2 samples each; planted failures: "
          + ", ".join(f"{t} → {k}" for t, k in PLANTED.items())
          + f"; mixed: wrong results on samples {MIXED_WRONG}.", "", "```",
          compare_table(runs), "```", ""]  # fmt: skip
    for n, d in runs:
        md += [f"## {n}", "", "```", summary_table(d["summary"], d["info"]), "```", ""]
    out.with_suffix(".md").write_text("\n".join(md))
    print("\n".join(md))
    print(f"wrote {out} (.md, .html)")


if __name__ == "__main__":
    main()
