"""The eval task suite itself: big enough, every family present, every task's spec.json passes
the harness's own checks and its numpy reference fills every output, and nvcc's PTX of every
reference.cu assembles and matches its spec (the ABI check every GPU test makes). Whether
nvcc's PTX also computes what the spec says is `ptxls eval --baseline-only` (on the emulator in
tests/test_eval_scripted.py, on the H200 in bench/results/eval/)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest

from ptxls.evaluation.suite import excluded_examples, load_suite, select
from ptxls.evaluation.suite_check import nvcc_problems, spec_problems
from ptxls.fewshot.library import load_examples
from ptxls.fewshot.retrieve import evaluating, pick_examples

FAMILIES = {
    "elementwise", "elementwise-f16", "reduction", "softmax-norm", "scan", "transpose-gather",
    "histogram", "gemv-gemm", "conv-pool", "fused-epilogue",
}  # fmt: skip
SUITE = load_suite()


def test_the_suite_has_sixty_tasks_or_more_in_every_family():
    assert len(SUITE) >= 60
    assert {t.family for t in SUITE} == FAMILIES
    assert {t.source_kind for t in SUITE} == {"cuda", "triton", "request"}
    assert len({t.kernel for t in SUITE}) == len(SUITE)  # a kernel name says which task
    dtypes = {d for t in SUITE for d in t.dtypes()}
    assert {"f16", "bf16", "f32", "f64"} <= dtypes
    assert not [t.name for t in SUITE if t.problems]


@pytest.mark.parametrize("task", SUITE, ids=lambda t: t.name)
def test_every_spec_checks_and_its_reference_runs(task):
    assert spec_problems(task) == []


def test_nvccs_ptx_of_every_reference_assembles_and_fits_its_spec():
    async def all_tasks():
        sem = asyncio.Semaphore(4)

        async def one(t):
            async with sem:
                return t.name, await nvcc_problems(t)

        return await asyncio.gather(*(one(t) for t in SUITE))

    problems = {name: p for name, p in asyncio.run(all_tasks()) if p}
    assert problems == {}


def test_no_task_is_a_few_shot_example_while_the_suite_runs():
    library = {e.name for e in load_examples()}
    twins = excluded_examples(SUITE) & library
    assert twins  # the suite names library kernels that compute the same thing
    softmax = next(t for t in SUITE if t.name == "softmax_f32")
    shown = {e.name for e in pick_examples(softmax.source_text(), 8)}
    assert "softmax_rows" in shown  # outside an eval run the library's twin is the best example
    with evaluating(excluded_examples(SUITE)):
        for t in SUITE:
            picked = {e.name for e in pick_examples(t.source_text(), 8)}
            assert not picked & excluded_examples(SUITE), t.name


def test_selection_by_glob_and_family():
    picked = select(SUITE, ["softmax*,row_m*"], None)
    assert {t.name for t in picked} == {"softmax_f32", "softmax_f16", "row_max_f32",
                                        "row_mean_f32", "row_max_abs_f32", "row_min_bf16"}  # fmt: skip
    assert {t.family for t in select(SUITE, None, ["scan"])} == {"scan"}


def test_eval_list_in_json_for_scripts():
    out = subprocess.run([sys.executable, "-m", "ptxls.cli.main", "eval", "--list", "--format", "json",
                          "--family", "histogram"], capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert {r["name"] for r in rows} == {
        "histogram_bins_u8",
        "histogram64_i32",
        "weighted_hist32_f32",
    }
    assert all(r["source"] == "cuda" and r["family"] == "histogram" for r in rows)
