"""ptxls eval on a GPU: nvcc's PTX of a few tasks is GPU-verified at about 1.00x its own nvcc -O3
build, and planted wrong kernels are caught by the GPU test in the right category. Skips with
the reason where cuInit finds no device. (The whole suite's GPU run: bench/eval_h200.sh.)

Runs where pygls/pytest-asyncio are absent (the GPU machine): plain pytest, asyncio.run inside.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from ptxls.evaluation.runner import EvalOptions, Runner
from ptxls.evaluation.suite import load_suite, select
from ptxls.lowering.settings import LlmSettings

from .device import HAVE_GPU, WHY

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAVE_GPU, reason=WHY)]
TASKS = ["relu_f32", "row_argmax_f32", "softmax_f32", "transpose_tiled_f32"]


def test_nvccs_ptx_is_gpu_verified_at_about_its_own_speed(tmp_path):
    opts = EvalOptions(run_dir=tmp_path, tasks=select(load_suite(), [",".join(TASKS)]),
                       rows=("nvcc",), device="gpu")  # fmt: skip
    records = asyncio.run(Runner(opts, LlmSettings()).execute())
    assert {r.task for r in records} == set(TASKS)
    for r in records:
        assert r.passed and r.verified == "gpu", (r.task, r.message)
        assert r.speedup is not None and 0.8 < r.speedup < 1.25, (r.task, r.speedup)


def test_planted_wrong_kernels_are_caught_on_the_gpu(tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from eval_scripted_models import nvcc_ptx, responder, suite_tasks

    from scripted_llm import ScriptedLLM

    plan = {"relu_f32": "race-or-oob", "row_argmax_f32": "wrong-result"}
    ptx = nvcc_ptx(suite_tasks(list(plan)))
    with ScriptedLLM(responder(ptx, plan=plan)) as server:
        s = LlmSettings(base_url=server.base_url, api_key="sk-gpu-test-0123456789",
                        model="scripted-model", candidates=1, rounds=1, stream=False)  # fmt: skip
        opts = EvalOptions(run_dir=tmp_path, tasks=suite_tasks(list(plan)), rows=("llm",),
                           device="gpu")  # fmt: skip
        records = asyncio.run(Runner(opts, s).execute())
    assert {r.task: r.category for r in records} == plan
