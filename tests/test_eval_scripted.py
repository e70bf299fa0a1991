"""ptxls eval against scripted models over real HTTP (tests/scripted_llm.py): a model that
answers nvcc's PTX scores 100 %, planted wrong kernels score 0 % with the category each was
planted as, a mixed model scores what it should, a flaky endpoint gives the clean one's verdicts,
an interrupted run resumes, and a replay recomputes the verdicts from the transcripts alone.

Tests run where the task's test runs here: on the CPU emulator when this ptxls has it (then a
wrong result and an out-of-bounds write are caught), else compile-only (said in the skips).
"""

from __future__ import annotations

import json

import pytest
from eval_scripted_models import BASE_SEED, asked_kernel, flaky, nvcc_ptx, responder, suite_tasks

from ptxls.evaluation.records import RunDir
from ptxls.evaluation.results import results_document
from ptxls.evaluation.runner import EvalOptions, Runner
from ptxls.evaluation.testing import device_option_supported
from ptxls.lowering.settings import LlmSettings

from scripted_llm import ScriptedLLM

# a handful of tasks of different sources and shapes: CUDA elementwise, CUDA with a scalar,
# a block-per-row reduction, a plain-language request
TASKS = ["relu_f32", "axpy_f32", "row_argmax_f32", "clip_scale_f32"]
EMULATOR = device_option_supported()
needs_emulator = pytest.mark.skipif(
    not EMULATOR,
    reason="no CPU emulator in this ptxls: wrong results cannot be caught without a GPU",
)


@pytest.fixture(scope="module")
def ptx_by_kernel():
    return nvcc_ptx(suite_tasks(TASKS + ["square_f32"]))


def settings_for(server: ScriptedLLM, **kw) -> LlmSettings:
    s = LlmSettings(base_url=server.base_url, api_key="sk-scripted-test-key-0123456789",
                    model="scripted-model", candidates=1, rounds=2, seed=BASE_SEED,
                    retries=4, retry_backoff_s=0.05, timeout_s=5.0, fewshot_count=2)  # fmt: skip
    for k, v in kw.items():
        setattr(s, k, v)
    return s


async def run_eval(tmp_path, settings, tasks=TASKS, samples=1, rows=("llm",), **kw):
    opts = EvalOptions(run_dir=tmp_path, tasks=suite_tasks(tasks), samples=samples, rows=rows,
                       device="auto", concurrency=4, test_workers=2, **kw)  # fmt: skip
    runner = Runner(opts, settings)
    records = await runner.execute()
    doc = results_document(runner.run, records, runner.info, ks=(1, 2))
    return runner, doc


def verified_level() -> str:
    return "emulator" if EMULATOR else "compile-only"


async def test_a_model_answering_nvccs_ptx_scores_100_percent(tmp_path, ptx_by_kernel):
    with ScriptedLLM(responder(ptx_by_kernel)) as server:
        # not streamed: the scripted server reports usage on whole replies only
        settings = settings_for(server, stream=False)
        runner, doc = await run_eval(tmp_path, settings, samples=2, rows=("llm", "nvcc"))
    llm, nvcc = doc["summary"]["llm"], doc["summary"]["nvcc"]
    assert llm["samples"] == 2 * len(TASKS)
    assert llm["pass@k"] == {"1": 1.0, "2": 1.0}
    assert llm["categories"] == {}
    assert llm["verified"][verified_level()] == 2 * len(TASKS)
    assert llm["rounds_to_pass"] == 1.0
    assert nvcc["pass@k"]["1"] == 1.0
    # every request was one sample's first round, and tokens came from the endpoint's usage
    assert llm["requests"] == 2 * len(TASKS)
    assert llm["tokens"]["completion"] > 0
    # no suite kernel was shown as a few-shot example while the suite ran
    shown = " ".join(r.body["messages"][1]["content"] for r in server.chat_requests)
    for t in suite_tasks(TASKS):
        assert shown.count(f".entry {t.kernel}(") == 0
    # each sample kept its transcript inside the run directory
    for rec in doc["records"]:
        if rec["row"] == "llm":
            assert (tmp_path / rec["transcript"]).is_file()
    # and the API key is in none of the run's files
    key = settings.api_key
    for f in tmp_path.rglob("*"):
        if f.is_file():
            assert key not in f.read_text(errors="replace"), f


PLANTED = {
    "relu_f32": "ptxas-error",
    "axpy_f32": "refusal",
    "row_argmax_f32": "truncation",
    "clip_scale_f32": "interface",
}


async def test_planted_wrong_kernels_score_zero_with_their_categories(tmp_path, ptx_by_kernel):
    plan = dict(PLANTED)
    tasks = list(TASKS)
    if EMULATOR:  # caught only where something runs the kernel
        plan |= {"square_f32": "wrong-result"}
        tasks.append("square_f32")
    with ScriptedLLM(responder(ptx_by_kernel, plan=plan)) as server:
        _runner, doc = await run_eval(tmp_path, settings_for(server), tasks=tasks)
    llm = doc["summary"]["llm"]
    assert llm["pass@k"]["1"] == 0.0
    got = {t: next(iter(d["categories"])) for t, d in llm["per_task"].items()}
    assert got == {t: plan[t] for t in tasks}


@needs_emulator
async def test_an_unguarded_store_is_a_race_or_out_of_bounds_failure(tmp_path, ptx_by_kernel):
    with ScriptedLLM(responder(ptx_by_kernel, plan={"relu_f32": "race-or-oob"})) as server:
        _runner, doc = await run_eval(tmp_path, settings_for(server), tasks=["relu_f32"])
    assert doc["summary"]["llm"]["per_task"]["relu_f32"]["categories"] == {"race-or-oob": 1}


async def test_an_endpoint_that_refuses_is_an_endpoint_error_not_a_model_failure(
    tmp_path, ptx_by_kernel
):
    plan = {"relu_f32": "endpoint-error"}
    with ScriptedLLM(responder(ptx_by_kernel, plan=plan)) as server:
        _runner, doc = await run_eval(
            tmp_path, settings_for(server), tasks=["relu_f32", "axpy_f32"]
        )
    per = doc["summary"]["llm"]["per_task"]
    assert per["relu_f32"]["categories"] == {"endpoint-error": 1}
    assert per["axpy_f32"]["passed"] == 1


@needs_emulator
async def test_a_mixed_model_scores_what_it_should(tmp_path, ptx_by_kernel):
    # relu: sample 1 of 2 wrong → c=1; axpy: both wrong → c=0; the other two right → c=2
    wrong = {"relu_f32": {1}, "axpy_f32": {0, 1}}
    with ScriptedLLM(responder(ptx_by_kernel, wrong_samples=wrong)) as server:
        _runner, doc = await run_eval(tmp_path, settings_for(server, rounds=1), samples=2)
    llm = doc["summary"]["llm"]
    per = llm["per_task"]
    assert {t: d["passed"] for t, d in per.items()} == {
        "relu_f32": 1, "axpy_f32": 0, "row_argmax_f32": 2, "clip_scale_f32": 2}  # fmt: skip
    # pass@1 = mean(c/n) = (0.5 + 0 + 1 + 1) / 4; pass@2 = (1 + 0 + 1 + 1) / 4
    assert llm["pass@k"]["1"] == pytest.approx(0.625)
    assert llm["pass@k"]["2"] == pytest.approx(0.75)
    assert llm["categories"] == {"wrong-result": 3}


async def test_a_flaky_endpoint_gives_the_clean_verdicts_only_slower(tmp_path, ptx_by_kernel):
    def verdicts(doc):
        return {(r["task"], r["sample"]): (r["passed"], r["category"]) for r in doc["records"]}

    with ScriptedLLM(responder(ptx_by_kernel, plan={"relu_f32": "ptxas-error"})) as server:
        _r, clean = await run_eval(tmp_path / "clean", settings_for(server, timeout_s=1.0))
    shaky = flaky(responder(ptx_by_kernel, plan={"relu_f32": "ptxas-error"}), drop_s=1.5)
    with ScriptedLLM(shaky) as server:
        _r, rough = await run_eval(tmp_path / "flaky", settings_for(server, timeout_s=1.0))
        statuses = [r.body.get("stream") for r in server.chat_requests]
    assert verdicts(rough) == verdicts(clean)
    assert shaky.counts["429"] > 0 and shaky.counts["drop"] > 0, shaky.counts
    assert rough["summary"]["llm"]["retries"] > 0
    assert len(statuses) > clean["summary"]["llm"]["requests"]
    # how much slower is measured side by side in bench/eval_overhead.py, not asserted here


async def test_an_interrupted_run_resumes_where_it_stopped(tmp_path, ptx_by_kernel):
    with ScriptedLLM(responder(ptx_by_kernel)) as server:
        await run_eval(tmp_path, settings_for(server), tasks=TASKS[:3])
        first = len(server.chat_requests)
        # as if the run had been killed before its last sample was written
        lost = RunDir(tmp_path).record_path("row_argmax_f32", "llm", 0)
        lost.unlink()
        runner, doc = await run_eval(tmp_path, settings_for(server), tasks=TASKS[:3])
        again = len(server.chat_requests) - first
    assert again == 1  # only the lost sample asked the model again
    assert runner.info.skipped == 2
    assert doc["summary"]["llm"]["passed_samples"] == 3


async def test_a_replay_recomputes_the_verdicts_without_a_model(tmp_path, ptx_by_kernel):
    plan = {"relu_f32": "ptxas-error", "axpy_f32": "refusal"}
    with ScriptedLLM(responder(ptx_by_kernel, plan=plan)) as server:
        _r, original = await run_eval(tmp_path / "run", settings_for(server))
    # the endpoint is gone: the replay reads the transcripts only
    dead = settings_for(server)
    _r, replayed = await run_eval(tmp_path / "replay", dead, replay_from=tmp_path / "run")

    def verdicts(doc):
        return {r["task"]: (r["passed"], r["category"], r["rounds"]) for r in doc["records"]}

    assert verdicts(replayed) == verdicts(original)
    assert replayed["summary"]["llm"]["tokens"] == original["summary"]["llm"]["tokens"]
    config = json.loads((tmp_path / "replay" / "run.json").read_text())
    assert config["replay_of"] == str(tmp_path / "run")


async def test_redo_runs_the_endpoint_errors_again(tmp_path, ptx_by_kernel):
    tasks = ["relu_f32", "axpy_f32"]
    with ScriptedLLM(responder(ptx_by_kernel, plan={"relu_f32": "endpoint-error"})) as server:
        _r, first = await run_eval(tmp_path, settings_for(server), tasks=tasks)
    assert first["summary"]["llm"]["categories"] == {"endpoint-error": 1}
    with ScriptedLLM(responder(ptx_by_kernel)) as server:  # the endpoint is back
        runner, again = await run_eval(tmp_path, settings_for(server), tasks=tasks,
                                       redo=("endpoint-error",))  # fmt: skip
        asked = {asked_kernel(r.body, ["relu_f32", "axpy_f32"]) for r in server.chat_requests}
    assert asked == {"relu_f32"}  # the passed sample is kept, not asked again
    assert runner.info.skipped == 1
    assert again["summary"]["llm"]["passed_samples"] == 2
