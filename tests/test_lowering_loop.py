"""The generate → ptxas → verify → repair loop against a scripted OpenAI-compatible server on
loopback (real HTTP, the real openai SDK, real ptxas)."""

from __future__ import annotations

import asyncio
import json
import logging
import re

import pytest
from tool_counter import ToolCounter

from ptxls.fewshot.retrieve import pick_examples
from ptxls.lowering.llm_client import LlmClient, LlmError
from ptxls.lowering.loop import LoopOptions, run_loop
from ptxls.lowering.replay import replay
from ptxls.lowering.settings import LlmSettings
from ptxls.lowering.sources import cuda_kernels, requests, triton_kernels
from ptxls.lowering.transcript import Transcript, read
from ptxls.lowering.verify import VerifyResult

from scripted_llm import BROKEN_LINE, BROKEN_VEC_ADD, GOOD_VEC_ADD, ScriptedLLM, Step, fenced

VEC_ADD_CU = """// the kernel
__global__ void vec_add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""
SECRET = "sk-test-SECRET-0123456789abcdef"


@pytest.fixture
def llm():
    with ScriptedLLM() as server:
        yield server


def settings_for(server: ScriptedLLM, **kw) -> LlmSettings:
    base = dict(
        base_url=server.base_url,
        api_key=SECRET,
        model="scripted-model",
        retry_backoff_s=0.01,
        timeout_s=10,
    )
    base.update(kw)
    return LlmSettings(**base)


async def run(
    server,
    script,
    *,
    src=None,
    rounds=3,
    candidates=1,
    transcript=None,
    verifier=None,
    progress=None,
    cancel=None,
    **settings_kw,
):
    server.set_script(script)
    src = src or cuda_kernels(VEC_ADD_CU)[0]
    s = settings_for(server, **settings_kw)
    client = LlmClient(s)
    transcript = transcript or Transcript(None, [SECRET])
    try:
        return await run_loop(
            src,
            client=client,
            examples=pick_examples(src.text, 1),
            opts=LoopOptions(
                candidates=candidates,
                rounds=rounds,
                strategy=s.strategy,
                seed=s.seed,
                temperature=s.temperature,
                budget_s=s.budget_s,
            ),
            transcript=transcript,
            verifier=verifier,
            progress=progress,
            cancel=cancel,
        ), transcript
    finally:
        await client.aclose()


def last_user_message(seen) -> str:
    return [m for m in seen.body["messages"] if m["role"] == "user"][-1]["content"]


async def test_broken_then_fixed_feeds_back_the_message_and_the_offending_line(llm):
    result, transcript = await run(llm, [Step(fenced(BROKEN_VEC_ADD)), Step(fenced(GOOD_VEC_ADD))])
    assert result.ok, result.report()
    assert [r.outcome for r in result.best.rounds] == ["ptxas", "passed"]
    second = last_user_message(llm.chat_requests[1])
    assert "Arguments mismatch for instruction 'add'" in second
    # the offending line, marked, with two lines either side
    marked = [ln for ln in second.splitlines() if ln.startswith(">>")]
    assert len(marked) == 1 and BROKEN_LINE in marked[0]
    lines = BROKEN_VEC_ADD.splitlines()
    at = next(i for i, ln in enumerate(lines) if BROKEN_LINE in ln)
    assert lines[at - 2].strip() in second  # the line two above
    assert lines[at + 1].strip() in second  # the line below
    # the model's first answer is part of the conversation it repairs
    assert any(
        m["role"] == "assistant" and BROKEN_LINE in m["content"]
        for m in llm.chat_requests[1].body["messages"]
    )
    assert result.best.ptx.strip() == GOOD_VEC_ADD.strip()
    assert "not GPU-tested" in result.message


async def test_stuck_model_changes_tack_then_stops_early_with_the_reason(llm):
    # the same broken PTX every time: round 2 repeats round 1, so round 3 is a fresh
    # conversation (summary of what failed, another approach, warmer); when that fails the same
    # way the candidate stops, 2 rounds before the limit, and says why
    transcript = Transcript(None, [SECRET])
    result, _ = await run(llm, [Step(fenced(BROKEN_VEC_ADD))] * 5, rounds=5, transcript=transcript)
    assert not result.ok
    assert len(llm.chat_requests) == 3
    cand = result.candidates[0]
    assert [r.round for r in cand.rounds] == [1, 2, 3]
    assert [r.fresh_start for r in cand.rounds] == [False, False, True]
    assert "same ptxas error every round" in cand.error and "fresh start" in cand.error
    assert "same ptxas error every round" in result.message
    # the fresh conversation: no earlier attempt in it, a summary of what failed, warmer
    fresh = llm.chat_requests[2].body
    assert not any(m["role"] == "assistant" for m in fresh["messages"])
    assert "Earlier attempts at this task failed" in last_user_message(llm.chat_requests[2])
    assert fresh["temperature"] > llm.chat_requests[0].body["temperature"]
    # the best attempt is kept for the person to look at
    assert result.attempt is not None and "ptxas: 1 error" in result.attempt.summary
    assert BROKEN_LINE in result.attempt.ptx
    assert [r["kind"] for r in transcript.records].count("change_tack") == 1
    report = result.report()
    for n in (1, 2, 3):
        assert f"round {n}" in report and "ptxas: 1 error" in report


async def test_request_size_is_flat_across_rounds(llm):
    # five rounds of different errors (no change of tack): every repair request carries the
    # task, the latest attempt and its feedback, not the history
    # a different mistake each round (the opcode of the broken line changes), so no tack change
    ops = ["add", "sub", "mul", "min", "max"]
    script = [
        Step(fenced(BROKEN_VEC_ADD.replace(BROKEN_LINE, BROKEN_LINE.replace("add", op))))
        for op in ops
    ]
    result, _ = await run(llm, script, rounds=5)
    assert not result.ok
    sizes = [sum(len(m["content"]) for m in r.body["messages"]) for r in llm.chat_requests]
    assert len(sizes) == 5, sizes
    repairs = sizes[1:]
    assert max(repairs) - min(repairs) < 200, sizes  # flat: not growing with the round
    assert all(len(r.body["messages"]) == 4 for r in llm.chat_requests[1:])


async def test_reply_without_ptx_is_told_so_and_can_recover(llm):
    result, _ = await run(
        llm, [Step("I think you should use vector loads."), Step(fenced(GOOD_VEC_ADD))]
    )
    assert result.ok
    first = result.best.rounds[0]
    assert first.outcome == "no_ptx" and "no PTX" in first.summary
    assert "could not find PTX" in last_user_message(llm.chat_requests[1])


async def test_429_then_success_retries_with_backoff(llm):
    transcript = Transcript(None, [SECRET])
    result, _ = await run(
        llm,
        [
            Step(status=429, headers={"Retry-After": "0"}, error="slow down"),
            Step(fenced(GOOD_VEC_ADD)),
        ],
        transcript=transcript,
    )
    assert result.ok
    assert len(llm.chat_requests) == 2
    retries = [r for r in transcript.records if r["kind"] == "retry"]
    assert len(retries) == 1 and "429" in retries[0]["reason"]


async def test_500_until_give_up(llm):
    result, _ = await run(llm, [Step(status=500, error="boom")] * 10, retries=2)
    assert not result.ok
    assert len(llm.chat_requests) == 3  # first try + 2 retries
    assert "HTTP 500" in result.message and "3 attempts" in result.message


async def test_timeout_gives_a_clear_message(llm):
    result, _ = await run(llm, [Step(fenced(GOOD_VEC_ADD), delay=5)] * 3, timeout_s=0.3, retries=1)
    assert not result.ok
    assert "did not answer within 0.3 s" in result.message
    assert len(llm.chat_requests) == 2


async def test_streaming_reports_progress_and_assembles_the_reply(llm):
    seen: list[str] = []
    result, _ = await run(
        llm, [Step(fenced(GOOD_VEC_ADD), chunk_size=7)], progress=seen.append, stream=True
    )
    assert result.ok
    assert llm.chat_requests[0].body.get("stream") is True
    assert any("receiving" in m for m in seen)
    assert result.best.ptx.strip() == GOOD_VEC_ADD.strip()


async def test_non_streaming_mode_also_works(llm):
    result, _ = await run(llm, [Step(fenced(GOOD_VEC_ADD))], stream=False)
    assert result.ok
    assert not llm.chat_requests[0].body.get("stream")


async def test_cancellation_mid_loop_stops_promptly(llm):
    cancel = asyncio.Event()
    transcript = Transcript(None, [SECRET])

    def progress(msg: str) -> None:
        if "round 2: asking" in msg:
            cancel.set()

    script = [Step(fenced(BROKEN_VEC_ADD)), Step(fenced(GOOD_VEC_ADD), delay=30)]
    result, _ = await asyncio.wait_for(
        run(llm, script, progress=progress, cancel=cancel, transcript=transcript), 20
    )
    assert result.cancelled and not result.ok
    assert any(r["kind"] == "cancelled" for r in transcript.records)
    assert not any(r["kind"] == "reply" and r["round"] == 2 for r in transcript.records)


async def test_cancelling_the_task_propagates(llm):
    llm.set_script([Step(fenced(GOOD_VEC_ADD), delay=30)])
    task = asyncio.create_task(run(llm, [Step(fenced(GOOD_VEC_ADD), delay=30)]))
    while not llm.chat_requests:
        await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


TRITON = """import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)
"""


async def test_triton_path_sends_the_function_and_accepts_its_entry(llm):
    src = triton_kernels(TRITON)[0]
    assert src.name == "add_kernel"
    ptx = GOOD_VEC_ADD.replace("vec_add", "add_kernel")
    result, _ = await run(llm, [Step(fenced(ptx))], src=src)
    assert result.ok, result.report()
    first = last_user_message(llm.chat_requests[0])
    assert (
        '<source lang="python"' in first and "@triton.jit" in first and "tl.program_id(0)" in first
    )
    assert "Triton" in first


async def test_natural_language_path(llm):
    src = requests(
        "// @ptx: relu(float* x, int n): x[i] = max(x[i], 0) for i < n\n//   one element per thread\n"
    )[0]
    assert src.name == "relu" and [p.name for p in src.params] == ["x", "n"]
    wrong_arity = GOOD_VEC_ADD.replace("vec_add", "relu")  # 4 params, the request says 2
    relu = """.version 8.0
.target sm_90
.address_size 64
.visible .entry relu(.param .u64 relu_param_x, .param .u32 relu_param_n)
{
    .reg .pred %p<2>; .reg .b32 %r<6>; .reg .f32 %f<3>; .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [relu_param_x];
    ld.param.u32 %r1, [relu_param_n];
    mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ntid.x; mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.s32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.s32 %rd3, %r5, 4;
    add.s64 %rd2, %rd2, %rd3;
    ld.global.f32 %f1, [%rd2];
    max.f32 %f2, %f1, 0f00000000;
    st.global.f32 [%rd2], %f2;
DONE:
    ret;
}
"""
    result, _ = await run(llm, [Step(fenced(wrong_arity)), Step(fenced(relu))], src=src)
    assert result.ok, result.report()
    assert result.best.rounds[0].outcome == "interface"
    assert "4 parameters, the source has 2" in last_user_message(llm.chat_requests[1])
    assert "plain language" in last_user_message(llm.chat_requests[0])


async def test_wrong_entry_name_is_fed_back(llm):
    renamed = GOOD_VEC_ADD.replace("vec_add", "_Z7vec_addPKfS0_Pfi")
    result, _ = await run(llm, [Step(fenced(renamed)), Step(fenced(GOOD_VEC_ADD))])
    assert result.ok
    assert "must be named 'vec_add'" in last_user_message(llm.chat_requests[1])


async def test_verifier_feedback_reaches_the_next_request(llm):
    """The GPU step is pluggable: whatever the verifier says goes back to the model."""
    calls = []

    async def verifier(ptx: str, kernel: str, *, candidate=None) -> VerifyResult:
        calls.append(kernel)
        if len(calls) == 1:
            return VerifyResult(
                False,
                True,
                "gpu: fail (case n=1000)",
                feedback="case n=1000: element 3 expected 1.5, got 0.0; 997 of 1000 wrong",
            )
        return VerifyResult(True, True, "gpu: 6/6 cases passed on Test GPU", gpu="Test GPU")

    result, _ = await run(llm, [Step(fenced(GOOD_VEC_ADD))] * 2, verifier=verifier)
    assert result.ok and calls == ["vec_add", "vec_add"]
    assert "element 3 expected 1.5, got 0.0; 997 of 1000 wrong" in last_user_message(
        llm.chat_requests[1]
    )
    assert "6/6 cases passed on Test GPU" in result.message


async def test_candidates_run_in_parallel_with_distinct_seeds_first_pass_wins(llm):
    def responder(body, i):
        return Step(fenced(GOOD_VEC_ADD if body.get("seed") == 1235 else BROKEN_VEC_ADD))

    result, _ = await run(llm, responder, candidates=2, rounds=2, seed=1234)
    assert result.ok and result.best.index == 2
    assert {r.body.get("seed") for r in llm.chat_requests} == {1234, 1235}


async def test_plan_strategy_asks_for_a_plan_first(llm):
    result, _ = await run(
        llm,
        [Step("1. load a and b\n2. add\n3. store"), Step(fenced(GOOD_VEC_ADD))],
        strategy="plan",
    )
    assert result.ok
    assert "numbered plan" in last_user_message(llm.chat_requests[0])
    assert "following the plan" in last_user_message(llm.chat_requests[1])
    assert "1. load a and b" in last_user_message(llm.chat_requests[1])
    assert result.best.plan.startswith("1. load")


async def test_unauthorized_unknown_model_and_unreachable_host_give_clear_messages(llm):
    result, _ = await run(llm, [Step(status=401, error="bad key")])
    assert (
        not result.ok
        and "refused the API key (HTTP 401)" in result.message
        and SECRET not in result.message
    )

    result, _ = await run(llm, [Step(fenced(GOOD_VEC_ADD))], model="no-such-model")
    assert not result.ok and "model 'no-such-model' is not served" in result.message
    assert "scripted-model" in result.message  # what it does serve

    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the with-block ends: nothing listens there
    s = LlmSettings(
        base_url=f"http://127.0.0.1:{port}/v1",
        api_key=SECRET,
        model="m",
        retries=1,
        retry_backoff_s=0.01,
    )
    client = LlmClient(s)
    with pytest.raises(LlmError) as err:
        await client.chat([{"role": "user", "content": "hi"}])
    await client.aclose()
    assert err.value.kind == "unreachable" and "cannot reach" in str(err.value)


async def test_key_never_reaches_transcripts_or_logs(llm, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)  # every logger, the SDK's and httpx's included
    transcript = Transcript.create(tmp_path, "vec_add", [SECRET])
    result, _ = await run(
        llm,
        [
            Step(status=429, headers={"Retry-After": "0"}),
            Step(fenced(BROKEN_VEC_ADD)),
            Step(fenced(GOOD_VEC_ADD)),
        ],
        transcript=transcript,
    )
    assert result.ok
    # the key did go to the server, where it belongs ...
    assert llm.chat_requests[0].headers.get("authorization") == f"Bearer {SECRET}"
    # ... and nowhere else
    text = transcript.path.read_text()
    assert transcript.path.parent == tmp_path / ".ptxls" / "transcripts"
    assert SECRET not in text and "Bearer" not in text
    assert SECRET not in caplog.text
    kinds = [r["kind"] for r in read(transcript.path)]
    assert kinds[0] == "start" and kinds[-1] == "end"
    assert {"request", "reply", "ptxas", "retry", "verify"} <= set(kinds)


async def test_transcript_replays_to_the_same_verdicts(llm, tmp_path):
    transcript = Transcript.create(tmp_path, "vec_add", [SECRET])
    await run(
        llm,
        [Step("no code here"), Step(fenced(BROKEN_VEC_ADD)), Step(fenced(GOOD_VEC_ADD))],
        transcript=transcript,
    )
    rep = await replay(transcript.path)
    assert [(r.round, r.recorded_ok, r.now_ok) for r in rep.rounds] == [
        (1, None, None),
        (2, False, False),
        (3, True, True),
    ]
    assert rep.agrees
    assert rep.rounds[-1].ptx.strip() == GOOD_VEC_ADD.strip()


async def test_optimize_asks_for_a_faster_version_with_ptxas_usage_and_keeps_the_faster(llm):
    faster = GOOD_VEC_ADD.replace("// Launch:", "// variant 2. Launch:")
    times = {GOOD_VEC_ADD.strip(): 1.00, faster.strip(): 0.80}

    async def timed_verifier(ptx: str, kernel: str, *, candidate=None) -> VerifyResult:
        ms = times[ptx.strip()]
        return VerifyResult(
            True, True, f"gpu: passed, {ms} ms", gpu="Test GPU", kernel_ms=ms, reference_ms=0.9
        )

    llm.set_script([Step(fenced(GOOD_VEC_ADD)), Step(fenced(faster))])
    src = cuda_kernels(VEC_ADD_CU)[0]
    client = LlmClient(settings_for(llm))
    try:
        with ToolCounter() as tools:
            tools.mark("start")
            result = await run_loop(
                src,
                client=client,
                examples=[],
                opts=LoopOptions(candidates=1, rounds=3, optimize=True),
                transcript=Transcript(None),
                verifier=timed_verifier,
            )
    finally:
        await client.aclose()
    assert result.ok and result.best.best_round == 2 and result.best.verify.kernel_ms == 0.80
    # the ask's usage comes from the round's own ptxas -v run: two rounds, two ptxas runs
    runs = [r for r in tools.segments()["start"] if r.is_compile]
    assert len(runs) == 2 and all(r.verbose for r in runs), runs
    ask = last_user_message(llm.chat_requests[1])
    assert re.search(r"ptxas -v: \d+ registers, 0 bytes spilled", ask)
    assert "1.000 ms vs 0.900 ms" in ask
    # the ask follows the kernel: vectorizing is asked only of a kernel without vector loads
    assert ("vectorize the global loads" in ask) == (".v4." not in GOOD_VEC_ADD)
    assert "faster, kept" in result.best.rounds[1].summary
    assert len(llm.chat_requests) == 2  # one performance round, then done


# ---- issue 8: candidates differ, elided repairs, the token limit, the time budget, transcripts


def _elided(ptx: str) -> str:
    lines = ptx.splitlines()
    i = next(k for k, ln in enumerate(lines) if "ld.global" in ln)
    return "\n".join(lines[:i] + ["    // ... rest of the code unchanged ..."] + lines[i + 4 :])


async def test_candidates_differ_in_temperature_and_approach(llm):
    result, _ = await run(llm, lambda body, i: Step(fenced(BROKEN_VEC_ADD)), candidates=2, rounds=1)
    assert not result.ok
    firsts = {}
    for seen in llm.chat_requests:
        firsts.setdefault(seen.body["seed"], seen.body)
    assert len(firsts) == 2
    (a, b) = [firsts[k] for k in sorted(firsts)]
    assert b["temperature"] > a["temperature"]
    task_a = a["messages"][-1]["content"]
    task_b = b["messages"][-1]["content"]
    assert task_a != task_b and any(t.split(".")[0] in task_b for t in prompt_tacks())


def prompt_tacks():
    from ptxls.lowering.prompt import TACKS

    return TACKS


async def test_elided_repair_is_incomplete_by_dataflow_and_never_the_result(llm):
    transcript = Transcript(None, [SECRET])
    result, _ = await run(
        llm,
        [
            Step(fenced(BROKEN_VEC_ADD)),
            Step(fenced(_elided(GOOD_VEC_ADD))),
            Step(fenced(GOOD_VEC_ADD)),
        ],
        transcript=transcript,
    )
    assert result.ok, result.report()
    outcomes = [r.outcome for r in result.best.rounds]
    assert outcomes == ["ptxas", "incomplete", "passed"]
    assert "unchanged" not in result.best.ptx
    told = last_user_message(llm.chat_requests[2])
    # decided by what the PTX does (registers read that nothing writes), the words only a hint
    assert (
        "cannot be complete" in told and "whole kernel" in told and "says code was left out" in told
    )
    flagged = [r for r in transcript.records if r["kind"] == "dataflow"]
    assert [r["round"] for r in flagged] == [2]
    assert any("read-before-write" in f for f in flagged[0]["findings"])


async def test_length_cut_is_named_in_feedback_and_final_message(llm):
    cut = Step("```ptx\n" + GOOD_VEC_ADD[:200], finish_reason="length")
    result, _ = await run(llm, [cut, cut, cut], rounds=3)
    assert not result.ok
    assert "maxTokens" in last_user_message(llm.chat_requests[1])
    assert "maxTokens" in result.message
    assert result.candidates[0].rounds[0].outcome == "truncated"


async def test_time_budget_bounds_a_hung_endpoint(llm):
    started = asyncio.get_running_loop().time()
    result, transcript = await run(
        llm, [Step(fenced(GOOD_VEC_ADD), delay=30)], rounds=3, timeout_s=60, budget_s=1.5
    )
    elapsed = asyncio.get_running_loop().time() - started
    assert not result.ok and elapsed < 10, elapsed
    assert "budget" in result.message and "budgetSeconds" in result.message


async def test_transcript_is_linear_and_keeps_reasoning(llm):
    transcript = Transcript(None, [SECRET])
    broken = [
        GOOD_VEC_ADD.replace("add.f32             %f3", f"{op}             %f3")
        for op in ("sub.f32", "mul.f32", "min.f32", "max.f32", "div.f32")
    ]
    script = [
        Step(fenced(b.replace("%f3, %f1, %f2;", "%f3, %f1, %rd2;")), reasoning="thinking " * 50)
        for b in broken
    ]
    result, _ = await run(llm, script, rounds=5, transcript=transcript)
    requests = [r for r in transcript.records if r["kind"] == "request"]
    assert len(requests) == 5
    sizes = [len(json.dumps(r)) for r in requests]
    # each request record holds only what changed: the latest attempt and its feedback
    assert max(sizes[1:]) - min(sizes[1:]) < 600, sizes
    assert max(sizes) < 12_000
    prompts = [r for r in transcript.records if r["kind"] == "prompt"]
    assert len(prompts) == 1  # the long fixed part, once
    replies = [r for r in transcript.records if r["kind"] == "reply"]
    assert all("thinking" in r["reasoning"] for r in replies)
    assert all(r["ptx"] for r in transcript.records if r["kind"] == "ptxas")


async def test_refusals_stop_early_and_say_so(llm):
    result, _ = await run(llm, [Step("I'm sorry, I can't help with that.")] * 5, rounds=5)
    assert not result.ok and len(llm.chat_requests) == 3
    assert "refusal" in result.message and result.attempt is None


# ---- issue 11: one assemble per candidate, counted on the real ptxas


def _runs_per_round(tools, rounds: int) -> list[list]:
    segments = tools.segments()
    return [
        [r for r in segments.get(f"round {i}", []) if r.is_compile] for i in range(1, rounds + 1)
    ]


def _marking(tools):
    def progress(msg: str) -> None:
        m = re.search(r"round (\d+): asking the model", msg)
        if m:
            tools.mark(f"round {m.group(1)}")

    return progress


async def test_a_compile_only_round_runs_ptxas_once_and_the_lowering_no_more(llm, tmp_path):
    """Counted by a logging wrapper in front of the real ptxas (PTXLS_PTXAS): each round is one
    ptxas -v run (diagnostics and resource usage together), and nothing after the loop runs ptxas
    again for the provenance header's resource line."""
    from ptxls.lowering.service import LowerJob, lower_llm

    cu = tmp_path / "vec_add.cu"
    cu.write_text(VEC_ADD_CU)
    llm.set_script([Step(fenced(BROKEN_VEC_ADD)), Step(fenced(GOOD_VEC_ADD))])
    job = LowerJob(cu, VEC_ADD_CU, kernel="vec_add", workspace=tmp_path, compile_only=True)
    with ToolCounter() as tools:
        tools.mark("start")  # the tool probes of discovery come before it
        outcome = await lower_llm(
            job, settings_for(llm, candidates=1, rounds=2), progress=_marking(tools)
        )
        tools.mark("after")
    assert outcome.ok, outcome.message
    assert [r.outcome for r in outcome.loop.best.rounds] == ["ptxas", "passed"]
    per_round = _runs_per_round(tools, 2)
    assert [len(runs) for runs in per_round] == [1, 1], per_round
    assert all(r.tool == "ptxas" and r.verbose and not r.writes_cubin for runs in per_round
               for r in runs)  # fmt: skip
    assert tools.segments().get("after", []) == []
    # the usage of that one run is the provenance header's resource line
    assert re.search(r"// resources: \d+ registers", outcome.ptx), outcome.ptx[:600]


async def test_a_gpu_verifier_gets_the_cubin_of_the_rounds_one_ptxas_run(llm):
    """A verifier that runs on a GPU (wants_cubin) is handed the cubin of the same ptxas run that
    checked the candidate, with the parse the checks shared: one assemble per candidate."""
    from ptxls.lowering.verify import Candidate

    seen: list[Candidate] = []

    class CubinVerifier:
        wants_cubin = True

        async def __call__(self, ptx: str, kernel: str, candidate=None) -> VerifyResult:
            seen.append(candidate)
            return VerifyResult(True, True, "gpu: passed (test double)", kernel_ms=1.0)

    with ToolCounter() as tools:
        tools.mark("start")
        result, _ = await run(
            llm, [Step(fenced(GOOD_VEC_ADD))], rounds=1, verifier=CubinVerifier(),
            progress=_marking(tools),
        )  # fmt: skip
    assert result.ok, result.report()
    [runs] = _runs_per_round(tools, 1)
    assert len(runs) == 1 and runs[0].verbose and runs[0].writes_cubin, runs
    [cand] = seen
    assert cand.kernel == "vec_add" and cand.cubin and cand.cubin.startswith(b"\x7fELF")
    assert cand.arch == "sm_90" and cand.module is not None
    assert [e.name for e in cand.module.entries] == ["vec_add"]
    assembled = cand.assembled()
    assert assembled.cubin == cand.cubin and assembled.ptx_version is not None
    assert result.best.usage is not None and result.best.usage.registers
