"""Endpoint faults as providers and proxies send them (issue 20), through real HTTP (the scripted
OpenAI-compatible server on loopback), the real openai SDK and ``LlmClient``: each is either
retried within the budget or final at once with the setting or action that fixes it."""

from __future__ import annotations

import time

import pytest

from ptxls.lowering.llm_client import LlmClient, LlmError, forget_adaptations
from ptxls.lowering.settings import LlmSettings

from scripted_llm import ScriptedLLM, Step

SECRET = "sk-faults-0123456789abcdefghij"
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture
def llm():
    forget_adaptations()
    with ScriptedLLM() as server:
        yield server
    forget_adaptations()


async def chat(server: ScriptedLLM, script, **kw):
    server.set_script(script)
    base = dict(base_url=server.base_url, api_key=SECRET, model="scripted-model",
                retry_backoff_s=0.01, timeout_s=10)  # fmt: skip
    base.update(kw)
    client = LlmClient(LlmSettings(**base))
    try:
        return await client.chat(HI, seed=5)
    finally:
        await client.aclose()


# ---- error bodies of every shape: the message and the parameter are found

GEMINI_REASONING_REFUSAL = [
    {
        "error": {
            "code": 400,
            "message": 'Invalid JSON payload received. Unknown name "reasoning_effort": Cannot '
            "find field.",
            "status": "INVALID_ARGUMENT",
        }
    }
]


async def test_gemini_list_body_refusing_reasoning_effort_drops_it(llm):
    llm.gate = lambda b: (400, GEMINI_REASONING_REFUSAL) if "reasoning_effort" in b else None
    reply = await chat(llm, [Step("ok")], reasoning_effort="high")
    assert reply.text == "ok"
    assert ["reasoning_effort" in r.body for r in llm.chat_requests] == [True, False]
    assert any("refused 'reasoning_effort'" in n for n in reply.notes)


@pytest.mark.parametrize(
    "body, words",
    [
        ([{"error": {"code": 400, "message": "Request contains an invalid argument.",
                     "status": "INVALID_ARGUMENT"}}], "invalid argument"),  # Gemini, a list
        ("upstream said: messages must alternate", "must alternate"),  # a bare JSON string
        ({"error": {"message": {"message": "nested: bad role"}}}, "nested: bad role"),
        ({"detail": "Input should be a valid list"}, "valid list"),  # FastAPI, a string detail
        ({"message": {"content": "proxy: request rejected"}}, "request rejected"),
        ({"type": "error", "error": {"type": "invalid_request_error",
                                     "message": "messages.0.content: empty"}}, "content: empty"),
        ({"error": {"message": "Provider returned error", "code": 400,
                    "metadata": {"raw": '{"error":{"message":"prompt is malformed"}}'}}},
         "prompt is malformed"),  # OpenRouter: the upstream's body in metadata.raw
    ],
    ids=["gemini-list", "string", "nested-message", "detail-string", "message-object",
         "anthropic", "openrouter-raw"],
)  # fmt: skip
async def test_a_final_400_says_the_endpoints_words_whatever_the_shape(llm, body, words):
    with pytest.raises(LlmError) as e:
        await chat(llm, [Step(status=400, error_json=body)])
    assert e.value.kind == "bad_request"
    assert words in str(e.value) and "Error code: 400 - " in str(e.value)
    assert len(llm.chat_requests) == 1


# ---- passing faults: retried like a 5xx


async def test_a_mid_stream_error_chunk_is_retried(llm):
    chunk = {"error": {"message": "upstream overloaded", "code": 502}}
    reply = await chat(llm, [Step("x" * 400, stream_error=chunk), Step("ok")])
    assert reply.text == "ok" and reply.attempts == 2


async def test_finish_reason_error_is_retried(llm):
    reply = await chat(llm, [Step("partial", finish_reason="error"), Step("ok")])
    assert reply.text == "ok" and reply.attempts == 2


async def test_a_finished_stream_without_done_or_close_is_accepted_after_a_short_grace(llm):
    started = time.monotonic()
    reply = await chat(llm, [Step("the whole answer", no_done=30)], timeout_s=20)
    took = time.monotonic() - started
    assert reply.text == "the whole answer" and reply.finish_reason == "stop"
    assert took < 6, took  # the grace (2 s), not the 20 s timeout, and no retry
    assert any("neither [DONE] nor a close" in n for n in reply.notes)
    assert len(llm.chat_requests) == 1


async def test_keep_alive_comments_do_not_count_as_progress(llm):
    # a stalled upstream behind a proxy that sends ": OPENROUTER PROCESSING" every 0.3 s
    stalled = Step("never", stall=30, keepalive=0.3)
    started = time.monotonic()
    with pytest.raises(LlmError) as e:
        await chat(llm, [stalled, stalled], timeout_s=1.5)
    took = time.monotonic() - started
    assert e.value.kind == "timeout" and "of silence" in str(e.value)
    assert took < 8, took  # two silences of 1.5 s, not 30 s of comments


# ---- final at once, with what to do


@pytest.mark.parametrize(
    "status, body",
    [
        (429, {"error": {"message": "You exceeded your current quota, please check your plan "
                         "and billing details.", "type": "insufficient_quota",
                         "code": "insufficient_quota"}}),
        (402, {"error": {"message": "Insufficient credits. Add more using "
                         "https://openrouter.ai/settings/credits", "code": 402}}),
        (400, {"type": "error", "error": {"type": "invalid_request_error", "message":
               "Your credit balance is too low to access the Anthropic API."}}),
        (429, [{"error": {"code": 429, "message": "Quota exceeded for quota metric "
                "'Generate Content API requests per minute'", "status": "RESOURCE_EXHAUSTED"}}]),
    ],
    ids=["openai", "openrouter-402", "anthropic-credit", "gemini-list"],
)  # fmt: skip
async def test_quota_errors_are_final_at_once_with_what_to_do(llm, status, body):
    with pytest.raises(LlmError) as e:
        await chat(llm, [Step(status=status, error_json=body)] * 5)
    assert len(llm.chat_requests) == 1
    assert "quota or credit" in str(e.value) and "billing" in str(e.value)


@pytest.mark.parametrize(
    "status, body",
    [
        (401, {"error": {"message": "Incorrect API key provided: sk-fa***ij.",
                         "type": "invalid_request_error", "code": "invalid_api_key"}}),
        (400, [{"error": {"code": 400, "message": "API key not valid. Please pass a valid API "
                "key.", "status": "INVALID_ARGUMENT"}}]),
    ],
    ids=["openai-401", "gemini-400-list"],
)  # fmt: skip
async def test_auth_errors_are_final_at_once_and_name_the_key_variable(llm, status, body):
    with pytest.raises(LlmError) as e:
        await chat(llm, [Step(status=status, error_json=body)] * 5)
    assert e.value.kind == "auth" and "OPENAI_API_KEY" in str(e.value)
    assert len(llm.chat_requests) == 1
    assert SECRET not in str(e.value)


# ---- replies in other fields


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_tool_call_arguments_are_read_like_content(llm, stream):
    args = '{"ptx": ".version 8.0\\n.target sm_90\\n"}'
    reply = await chat(llm, [Step(args, tool_call=True, chunk_size=7)], stream=stream)
    assert reply.text == args
    assert any("tool-call arguments" in n for n in reply.notes)


async def test_a_streamed_reply_reports_its_tokens(llm):
    usage = {"prompt_tokens": 1200, "completion_tokens": 300, "total_tokens": 1500,
             "completion_tokens_details": {"reasoning_tokens": 120}}  # fmt: skip
    reply = await chat(llm, [Step("ok", usage=usage)])
    assert reply.usage == usage
    assert llm.chat_requests[0].body["stream_options"] == {"include_usage": True}


# ---- the transport: the request as the SDK sends it, through a proxy where the environment says


async def test_the_request_goes_through_the_http_proxy_the_environment_names(llm, monkeypatch):
    # the scripted server stands in for the proxy: it gets the absolute-form request line
    proxy = llm.base_url.rsplit("/v1", 1)[0]
    monkeypatch.setenv("HTTP_PROXY", proxy)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    reply = await chat(llm, [Step("ok")], base_url="http://llm.invalid/v1")
    assert reply.text == "ok"
    seen = llm.chat_requests[0]
    # absolute-form request line (RFC 9112 3.2.2), the default port written or not
    assert seen.path.replace(":80/", "/") == "http://llm.invalid/v1/chat/completions"
    assert seen.headers["authorization"] == f"Bearer {SECRET}"
    monkeypatch.setenv("NO_PROXY", "llm.invalid")
    with pytest.raises(LlmError) as e:  # bypassed: the made-up host itself is not reachable
        await chat(llm, [Step("ok")], base_url="http://llm.invalid/v1", retries=0)
    assert e.value.kind == "unreachable"
