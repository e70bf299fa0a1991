"""Endpoints as they really behave, through real HTTP and the real openai SDK: OpenAI's reasoning
models refusing ``max_tokens`` and ``temperature`` (their own 400 bodies), vLLM's pydantic
refusal of ``seed``, ``reasoning_content`` streamed and whole, a stop at the token limit, bodies
that are not JSON, a reply over the size cap, a hung endpoint and a stalled stream (bounded
give-up), and the first request that carries the key to a host."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from ptxls.lowering.llm_client import (
    TIMEOUT_RETRIES,
    LlmClient,
    LlmError,
    forget_adaptations,
    refused_parameter,
)
from ptxls.lowering.settings import LlmSettings, from_config, from_env

from scripted_llm import (
    OPENAI_MAX_TOKENS_REFUSAL,
    ScriptedLLM,
    Step,
    openai_temperature_refusal,
    reasoning_model_gate,
)

SECRET = "sk-endpoint-SECRET-0123456789abcdef"
HI = [{"role": "user", "content": "lower vec_add"}]


@pytest.fixture
def llm():
    forget_adaptations()
    with ScriptedLLM() as server:
        yield server
    forget_adaptations()


def client_for(server: ScriptedLLM, **kw) -> LlmClient:
    base = dict(
        base_url=server.base_url,
        api_key=SECRET,
        model="scripted-model",
        retry_backoff_s=0.01,
        timeout_s=10,
    )
    base.update(kw)
    return LlmClient(LlmSettings(**base))


async def chat(server: ScriptedLLM, script, **kw):
    server.set_script(script)
    client = client_for(server, **{k: v for k, v in kw.items() if k != "seed"})
    try:
        return await client.chat(HI, seed=kw.get("seed", 5))
    finally:
        await client.aclose()


def sent(server: ScriptedLLM) -> list[set[str]]:
    """The sampling parameters of each chat request, in order."""
    keep = {
        "max_tokens",
        "max_completion_tokens",
        "temperature",
        "seed",
        "reasoning_effort",
    }
    return [set(r.body) & keep for r in server.chat_requests]


# ---- parameters an endpoint refuses


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_reasoning_model_refusals_are_adapted_once_and_remembered(llm, stream):
    llm.gate = reasoning_model_gate
    reply = await chat(llm, [Step("```ptx\n.entry k\n```")] * 3, stream=stream)
    assert reply.text.startswith("```ptx")
    assert sent(llm) == [
        {"max_tokens", "temperature", "seed"},
        {"max_completion_tokens", "temperature", "seed"},
        {"max_completion_tokens", "seed"},
    ]
    assert llm.chat_requests[1].body["max_completion_tokens"] == 8192  # the setting, renamed
    assert reply.attempts == 1  # an adaptation is not a retry
    assert "endpoint refused 'max_tokens'; sent 'max_completion_tokens'" in reply.notes
    assert any("refused 'temperature' (0.1)" in n for n in reply.notes)

    # the same endpoint and model, a new client (a new lowering): remembered, one request
    before = len(llm.chat_requests)
    reply = await chat(llm, [Step("again")], stream=stream)
    assert len(llm.chat_requests) == before + 1
    assert sent(llm)[-1] == {"max_completion_tokens", "seed"}
    assert not [n for n in reply.notes if "refused" in n]  # said once, when it happened


def test_openai_itself_is_asked_with_max_completion_tokens_from_the_start():
    openai_api = LlmClient(LlmSettings(api_key=SECRET, model="o4-mini"))
    assert set(openai_api._params(5, None)) == {
        "max_completion_tokens",
        "temperature",
        "seed",
        "stream",
        "stream_options",  # {"include_usage": true}: a streamed reply's tokens are counted
    }
    local = LlmClient(LlmSettings(base_url="http://localhost:11434/v1", model="qwen", stream=False))
    assert set(local._params(5, None)) == {"max_tokens", "temperature", "seed"}


async def test_a_temperature_override_is_dropped_too_where_refused(llm):
    llm.gate = reasoning_model_gate
    llm.set_script([Step("ok")] * 4)
    client = client_for(llm)
    await client.chat(HI, temperature=0.7)
    assert llm.chat_requests[-1].body.get("temperature") is None
    await client.chat(HI, temperature=0.9)  # a second candidate's own temperature
    assert "temperature" not in llm.chat_requests[-1].body
    await client.aclose()


async def test_an_accepted_temperature_override_is_sent(llm):
    llm.set_script([Step("ok")])
    client = client_for(llm)
    await client.chat(HI, temperature=0.7)
    await client.aclose()
    assert llm.chat_requests[-1].body["temperature"] == 0.7


async def test_remembered_per_endpoint_and_model(llm):
    llm.models = ("scripted-model", "other-model")
    llm.gate = reasoning_model_gate
    await chat(llm, [Step("ok")] * 3)
    llm.gate = None  # "other-model" takes everything
    await chat(llm, [Step("ok")], model="other-model")
    assert sent(llm)[-1] == {"max_tokens", "temperature", "seed"}


async def test_vllm_pydantic_refusal_of_seed_drops_it(llm):
    # vLLM (pydantic) lists the offending field in 'loc' inside a 400's message
    body = {
        "object": "error",
        "message": "[{'type': 'extra_forbidden', 'loc': ('body', 'seed'), 'msg': 'Extra inputs "
        "are not permitted', 'input': 5}]",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    }
    llm.gate = lambda b: (400, body) if "seed" in b else None
    reply = await chat(llm, [Step("ok")])
    assert sent(llm) == [{"max_tokens", "temperature", "seed"}, {"max_tokens", "temperature"}]
    assert any("refused 'seed'" in n for n in reply.notes)


async def test_an_endpoint_refusing_both_token_limits_gets_none(llm):
    def gate(body):
        for name in ("max_tokens", "max_completion_tokens"):
            if name in body:
                return 400, {
                    "error": {
                        "message": f"Unsupported parameter: '{name}' is not supported.",
                        "param": name,
                        "code": "unsupported_parameter",
                    }
                }
        return None

    llm.gate = gate
    reply = await chat(llm, [Step("ok")])
    assert reply.text == "ok"
    assert sent(llm)[-1] == {"temperature", "seed"}
    assert any("sent no token limit" in n for n in reply.notes)


@pytest.mark.parametrize(
    "body, allowed",
    [
        (  # OpenAI, a chat model asked for more completion tokens than it has
            {
                "error": {
                    "message": "max_tokens is too large: 8192. This model supports at most 4096 "
                    "completion tokens, whereas you provided 8192.",
                    "type": "invalid_request_error",
                    "param": "max_tokens",
                    "code": None,
                }
            },
            4096,
        ),
        (  # vLLM: the prompt and the limit together exceed the model's context
            {
                "object": "error",
                "message": "This model's maximum context length is 4096 tokens. However, you "
                "requested 8292 tokens (100 in the messages, 8192 in the completion). Please "
                "reduce the length of the messages or completion.",
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            },
            3996,
        ),
        (  # vLLM 0.9+
            {
                "object": "error",
                "message": "'max_tokens' or 'max_completion_tokens' is too large: 8192. This "
                "model's maximum context length is 4096 tokens and your request has 120 input "
                "tokens (8192 > 4096 - 120).",
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            },
            3976,
        ),
        (  # Anthropic's OpenAI-compatible endpoint (and proxies in front of Claude)
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": "max_tokens: 8192 > 4096, which is the maximum allowed number of "
                    "output tokens for claude-3-haiku-20240307",
                },
            },
            4096,
        ),
        (  # Hugging Face TGI
            {
                "error": "Input validation error: `max_new_tokens` must be <= 4096. Given: 8192",
                "error_type": "validation",
            },
            4096,
        ),
        (  # llama.cpp server: the request exceeds its context (n_ctx)
            {
                "error": {
                    "code": 400,
                    "message": "the request exceeds the available context size, try increasing it",
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": 1500,
                    "n_ctx": 4096,
                }
            },
            2596,
        ),
    ],
    ids=["openai", "vllm-context-length", "vllm-new", "anthropic", "tgi", "llama.cpp"],
)
async def test_a_token_limit_too_large_is_adapted_to_what_the_endpoint_states(llm, body, allowed):
    llm.gate = lambda b: (400, body) if b.get("max_tokens", 0) > allowed else None
    reply = await chat(llm, [Step("ok")])
    assert reply.text == "ok"
    assert [r.body.get("max_tokens") for r in llm.chat_requests] == [8192, allowed]
    note = next(n for n in reply.notes if "at most" in n)
    assert f"at most {allowed} completion tokens" in note and "ptxls.llm.maxTokens" in note


async def test_a_prompt_that_alone_fills_the_context_names_the_fewshot_setting(llm):
    body = {
        "error": {
            "code": 400,
            "message": "the request exceeds the available context size, try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": 5000,
            "n_ctx": 4096,
        }
    }
    llm.gate = lambda b: (400, body)
    with pytest.raises(LlmError) as e:
        await chat(llm, [Step("ok")])
    assert e.value.kind == "bad_request" and "ptxls.llm.fewshot" in str(e.value)
    assert len(llm.chat_requests) == 1  # nothing to retry


async def test_a_400_naming_nothing_adaptable_is_final(llm):
    llm.gate = lambda b: (
        400,
        {"error": {"message": "messages: too many images", "param": "messages", "code": None}},
    )
    with pytest.raises(LlmError) as err:
        await chat(llm, [Step("never")])
    assert err.value.kind == "bad_request" and "too many images" in str(err.value)
    assert len(llm.chat_requests) == 1


async def test_a_refusal_that_never_ends_is_not_a_dead_loop(llm):
    # a server that answers the max_tokens refusal whatever is sent
    llm.gate = lambda b: (400, OPENAI_MAX_TOKENS_REFUSAL)
    with pytest.raises(LlmError) as err:
        await chat(llm, [Step("never")])
    assert err.value.kind == "bad_request"
    assert len(llm.chat_requests) <= 4  # one per parameter it could change, then final


@pytest.mark.parametrize(
    "body, sent_params, refused",
    [
        (OPENAI_MAX_TOKENS_REFUSAL, {"max_tokens": 1, "temperature": 0.1}, "max_tokens"),
        (openai_temperature_refusal(0.1), {"max_tokens": 1, "temperature": 0.1}, "temperature"),
        # the same refusals without 'param', from the message text alone
        (
            {"error": {"message": OPENAI_MAX_TOKENS_REFUSAL["error"]["message"]}},
            {"max_tokens": 1, "temperature": 0.1},
            "max_tokens",
        ),
        (
            {"error": {"message": "Unrecognized request argument supplied: reasoning_effort"}},
            {"max_tokens": 1, "reasoning_effort": "low"},
            "reasoning_effort",
        ),
        # a value out of the server's range refuses that parameter too: dropped once (the
        # model's default applies) rather than ending the lowering on a warmer candidate
        (
            {"error": {"message": "temperature must be between 0 and 1"}},
            {"temperature": 1.5},
            "temperature",
        ),
        ({"error": {"message": "temperature: range: 0..1"}}, {"temperature": 1.5}, "temperature"),
        # a 400 about something we sent but cannot change names nothing adaptable
        ({"error": {"message": "messages must be a list"}}, {"temperature": 0.1}, None),
        ({"error": {"message": "invalid model name"}}, {"temperature": 0.1}, None),
    ],
)
def test_reading_a_refusal(body, sent_params, refused):
    class Err(Exception):
        def __init__(self, body):
            super().__init__(str(body))
            self.body = body.get("error", body)
            self.param = self.body.get("param")
            self.code = self.body.get("code")

    assert refused_parameter(Err(body), sent_params) == refused


async def test_reasoning_effort_is_sent_and_dropped_once_if_refused(llm):
    llm.set_script([Step("ok")] * 3)
    client = client_for(llm, reasoning_effort="high")
    await client.chat(HI)
    assert llm.chat_requests[-1].body["reasoning_effort"] == "high"
    await client.aclose()

    forget_adaptations()
    refusal = {
        "error": {
            "message": "Unsupported parameter: 'reasoning_effort' is not supported with this "
            "model.",
            "type": "invalid_request_error",
            "param": "reasoning_effort",
            "code": "unsupported_parameter",
        }
    }
    llm.gate = lambda b: (400, refusal) if "reasoning_effort" in b else None
    reply = await chat(llm, [Step("ok")], reasoning_effort="low")
    assert "reasoning_effort" not in llm.chat_requests[-1].body
    assert any("refused 'reasoning_effort'" in n for n in reply.notes)


def test_reasoning_effort_and_the_new_settings_from_env_and_config():
    s, problems = from_env(
        {
            "PTXLS_REASONING_EFFORT": "HIGH",
            "PTXLS_LLM_MAX_REPLY_CHARS": "50000",
            "PTXLS_LLM_BUDGET_SECONDS": "120",
        }
    )
    assert (s.reasoning_effort, s.max_reply_chars, s.budget_s, problems) == (
        "high",
        50000,
        120.0,
        [],
    )
    s, problems = from_config(
        {"reasoningEffort": "extreme", "maxReplyChars": 10, "budgetSeconds": 30}
    )
    assert s.reasoning_effort is None and s.max_reply_chars == 400_000 and s.budget_s == 30
    assert any("reasoningEffort" in p for p in problems) and any(
        "maxReplyChars" in p for p in problems
    )
    assert from_config({"reasoningEffort": ""})[0].reasoning_effort is None


def test_package_json_declares_the_new_settings_with_the_same_defaults():
    import json
    from pathlib import Path

    props = json.loads(
        (Path(__file__).resolve().parent.parent / "vscode-client" / "package.json").read_text()
    )["contributes"]["configuration"]["properties"]
    d = LlmSettings()
    assert props["ptxls.llm.reasoningEffort"]["default"] == ""
    assert set(props["ptxls.llm.reasoningEffort"]["enum"]) == {"", "low", "medium", "high"}
    assert props["ptxls.llm.maxReplyChars"]["default"] == d.max_reply_chars
    assert props["ptxls.llm.budgetSeconds"]["default"] == d.budget_s
    assert props["ptxls.llm.timeoutSeconds"]["default"] == d.timeout_s
    assert props["ptxls.llm.maxTokens"]["default"] == d.max_tokens


# ---- reasoning, token limit, replies that are not replies


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_reasoning_fields_are_kept_apart_from_the_answer(llm, stream, field):
    reply = await chat(
        llm,
        [Step("the answer", reasoning="draft: .entry wrong", reasoning_field=field, chunk_size=5)],
        stream=stream,
    )
    assert reply.text == "the answer"
    assert reply.reasoning == "draft: .entry wrong"


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_finish_reason_length_is_passed_through(llm, stream):
    reply = await chat(
        llm, [Step("", reasoning="thinking...", finish_reason="length")], stream=stream
    )
    assert reply.finish_reason == "length" and reply.text == "" and reply.reasoning


@pytest.mark.parametrize(
    "step, stream, words",
    [
        (Step(raw_body=b"<html><body>502 Bad Gateway</body></html>"), False, "not valid JSON"),
        (Step(raw_body=b'{"choices": [{"message": {"content": "cut'), False, "not valid JSON"),
        (Step(raw_body=b'{"object": "list", "data": []}'), False, "without 'choices'"),
        (
            Step(raw_body=b"data: {not json}\n\n", content_type="text/event-stream"),
            True,
            "stream chunk that is not valid JSON",
        ),
        (
            Step(raw_body=b"<html>proxy login</html>", content_type="text/event-stream"),
            True,
            "no data events",
        ),
    ],
)
async def test_invalid_bodies_are_named_as_such(llm, step, stream, words):
    with pytest.raises(LlmError) as err:
        await chat(llm, [step], stream=stream)
    assert err.value.kind == "bad_reply" and words in str(err.value)
    assert "empty" not in str(err.value)


COMPLETION = (
    b'{"id": "x", "object": "chat.completion", "model": "scripted-model", "choices": [{"index": 0,'
    b' "message": {"role": "assistant", "content": [{"type": "text", "text": "part one, "},'
    b' {"type": "text", "text": "part two"}]}, "finish_reason": "stop"}]}'
)
SSE = (
    b'data: {"choices": [{"index": 0, "delta": {"content": "stre"}, "finish_reason": null}]}\r\n\r\n'
    b": keep-alive comment\n\n"
    b'data: {"choices": [{"index": 0, "delta": {"content": "amed"}, "finish_reason": "stop"}]}\n\n'
    b"data: [DONE]\n\n"
)


async def test_servers_that_ignore_the_stream_flag_or_send_content_parts(llm):
    # JSON (content as a list of parts) to a request that asked for a stream
    reply = await chat(llm, [Step(raw_body=COMPLETION)], stream=True)
    assert reply.text == "part one, part two" and not reply.streamed
    # SSE (CRLF framing, a comment line) to a request that did not
    reply = await chat(llm, [Step(raw_body=SSE, content_type="text/event-stream")], stream=False)
    assert reply.text == "streamed" and reply.streamed and reply.finish_reason == "stop"


async def test_an_error_inside_a_200_is_retried_like_a_5xx_and_named_when_it_stays(llm):
    body = b'{"error": {"message": "model is loading", "type": "server_error"}}'
    # OpenRouter documents a 200 with an error body for failures after generation started:
    # the next request may well work
    reply = await chat(llm, [Step(raw_body=body), Step("ok")], stream=False)
    assert reply.text == "ok" and reply.attempts == 2
    with pytest.raises(LlmError) as err:
        await chat(llm, [Step(raw_body=body)] * 3, stream=False, retries=2)
    assert err.value.kind == "server" and "model is loading" in str(err.value)
    assert len(llm.chat_requests) == 2 + 3


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_a_reply_over_the_size_cap_is_refused(llm, stream):
    big = "x" * 300_000
    started = time.monotonic()
    with pytest.raises(LlmError) as err:
        await chat(llm, [Step(big, chunk_size=4000)] * 2, stream=stream, max_reply_chars=50_000)
    assert err.value.kind == "too_long" and "ptxls.llm.maxReplyChars" in str(err.value)
    assert len(llm.chat_requests) == 2  # asked once more: a repetition loop is an accident
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_one_over_long_repetition_loop_is_asked_again(llm, stream):
    loop = "mov.u32 %r1, %r1;\n" * 20_000
    reply = await chat(llm, [Step(loop, chunk_size=4000), Step("ok")], stream=stream,
                       max_reply_chars=50_000)  # fmt: skip
    assert reply.text == "ok"
    assert any("asked again once" in n for n in reply.notes)


async def test_a_reply_under_the_cap_is_whole(llm):
    reply = await chat(llm, [Step("y" * 40_000, chunk_size=4000)], max_reply_chars=50_000)
    assert len(reply.text) == 40_000


# ---- bounded time


def test_a_hung_endpoint_gives_up_within_three_minutes_with_the_defaults():
    d = LlmSettings()
    # every timed-out request is retried TIMEOUT_RETRIES times, whatever `retries` says
    worst = d.timeout_s * (1 + TIMEOUT_RETRIES) + d.retry_backoff_s * TIMEOUT_RETRIES
    assert worst <= 185, worst
    assert d.budget_s > 0  # and the loop stops every lowering at the budget


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_a_hung_endpoint_is_given_up_after_one_retry(llm, stream):
    started = time.monotonic()
    with pytest.raises(LlmError) as err:
        await chat(llm, [Step("late", delay=30)] * 10, stream=stream, timeout_s=0.5, retries=4)
    took = time.monotonic() - started
    assert err.value.kind == "timeout" and "did not answer within 0.5 s" in str(err.value)
    assert len(llm.chat_requests) == 1 + TIMEOUT_RETRIES  # not 1 + retries
    assert took < 5, took


async def test_a_stream_that_goes_silent_times_out_but_a_slow_steady_one_does_not(llm):
    with pytest.raises(LlmError) as err:
        await chat(llm, [Step("abc", stall=30, reasoning="r")] * 3, timeout_s=0.5)
    assert err.value.kind == "timeout"
    # 12 chunks 0.2 s apart: 2.4 s in all, never 0.5 s of silence
    reply = await chat(llm, [Step("z" * 120, chunk_size=10, chunk_delay=0.2)], timeout_s=0.5)
    assert reply.text == "z" * 120


async def test_a_deadline_stops_retries(llm):
    client = client_for(llm)
    llm.set_script([Step(status=503, headers={"Retry-After": "5"})] * 5)
    started = time.monotonic()
    with pytest.raises(LlmError) as err:
        await client.chat(HI, deadline=time.monotonic() + 1)
    await client.aclose()
    assert "budget" in str(err.value) and time.monotonic() - started < 3


# ---- the key


async def test_the_first_request_with_a_key_to_a_host_is_said_once(llm, caplog):
    caplog.set_level(logging.INFO, logger="ptxls")
    first = await chat(llm, [Step("a")])
    second = await chat(llm, [Step("b")])
    host = llm.base_url.split("//")[1].split("/")[0]
    line = f"sending the API key to {host}"
    assert line in first.notes and line not in second.notes
    assert caplog.text.count(line) == 1
    assert SECRET not in caplog.text


async def test_no_key_no_announcement(llm):
    reply = await chat(llm, [Step("a")], api_key=None)
    assert not [n for n in reply.notes if "API key" in n]


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422, 500])
async def test_a_key_echoed_in_an_error_body_never_reaches_the_message(llm, status):
    with pytest.raises(LlmError) as err:
        await chat(
            llm,
            [Step(status=status, error="Incorrect API key provided: {key}", echo_key=True)] * 3,
            retries=1,
        )
    assert SECRET not in str(err.value) and SECRET[:12] not in str(err.value)


async def test_credentials_in_the_base_url_are_not_shown(llm):
    url = llm.base_url.replace("http://", "http://bob:hunter2secret@")
    client = client_for(llm, base_url=url)
    assert "hunter2secret" not in client.endpoint and "bob" not in client.endpoint
    await client.aclose()


def test_cancelling_a_request_propagates(llm):
    async def go():
        llm.set_script([Step("late", delay=30)])
        client = client_for(llm)
        task = asyncio.ensure_future(client.chat(HI))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await client.aclose()

    asyncio.run(go())
