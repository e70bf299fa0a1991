"""Endpoint behaviours the first endpoint tests did not script, each as the real server sends
it, through real HTTP and the real openai SDK into ``LlmClient``: vLLM's, llama.cpp's and
Ollama's error bodies, proxies that refuse ``seed``/``reasoning_effort``/``stream`` in their
own words, FastAPI's 422 ``detail`` list, a 200 with no choices, OpenAI's ``refusal`` field,
``finish_reason: content_filter``, streams whose last chunk carries only usage or whose deltas
are empty, a model name with a slash, a base URL without ``/v1``, and error bodies that echo
the key in a URL or an ``Authorization`` header."""

from __future__ import annotations

import json

import pytest

from ptxls.lowering.extract import extract_ptx
from ptxls.lowering.llm_client import LlmClient, LlmError, forget_adaptations
from ptxls.lowering.settings import LlmSettings

from scripted_llm import GOOD_VEC_ADD, ScriptedLLM, Step, fenced

KEY = "sk-proj-probeSECRET0123456789abcdefXYZ"
HI = [{"role": "user", "content": "lower vec_add"}]
ANSWER = fenced(GOOD_VEC_ADD)


@pytest.fixture
def llm():
    forget_adaptations()
    with ScriptedLLM(models=("scripted-model", "org/model-7b")) as server:
        yield server
    forget_adaptations()


async def ask(server, script, *, gate=None, stream=True, **kw):
    server.set_script(script)
    server.gate = gate
    settings = dict(
        base_url=server.base_url,
        api_key=KEY,
        model="scripted-model",
        stream=stream,
        timeout_s=10,
        retries=1,
        retry_backoff_s=0.01,
    )
    settings.update(kw)
    client = LlmClient(LlmSettings(**settings))
    try:
        return await client.chat(HI, seed=3)
    finally:
        await client.aclose()


def sent(server) -> list[set[str]]:
    return [set(r.body) - {"messages", "model"} for r in server.chat_requests]


def refusing(param: str, status: int, body: dict):
    """A gate that refuses every request carrying ``param`` with this exact body."""
    return lambda b: (status, body) if param in b else None


# ---- refusals in each server's own words: dropped once, the request goes through

REFUSALS = {
    "vllm seed": (
        "seed",
        400,
        {
            "object": "error",
            "message": "seed is not supported by this endpoint",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    "ollama seed": ("seed", 400, {"error": 'option "seed" not supported'}),
    "litellm reasoning_effort": (
        "reasoning_effort",
        400,
        {
            "error": {
                "message": "litellm.UnsupportedParamsError: openai does not support parameters: "
                "['reasoning_effort'], for model=x. To drop these, set `litellm.drop_params=True`",
                "type": None,
                "param": None,
                "code": "400",
            }
        },
    ),
    "azure-style reasoning_effort": (
        "reasoning_effort",
        400,
        {
            "error": {
                "message": "Unrecognized request argument supplied: reasoning_effort",
                "type": "invalid_request_error",
                "param": None,
                "code": None,
            }
        },
    ),
    "fastapi 422 temperature": (
        "temperature",
        422,
        {
            "detail": [
                {
                    "type": "less_than_equal",
                    "loc": ["body", "temperature"],
                    "msg": "Input should be less than or equal to 0",
                    "input": 0.1,
                }
            ]
        },
    ),
    "anthropic-compatible temperature range": (
        "temperature",
        400,
        {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": "temperature: range: 0..1"},
        },
    ),
    "proxy without streaming": (
        "stream",
        400,
        {
            "error": {
                "message": "Streaming is not supported for this model",
                "type": "invalid_request_error",
                "param": "stream",
                "code": None,
            }
        },
    ),
    "o1-style stream value": (
        "stream",
        400,
        {
            "error": {
                "message": "Unsupported value: 'stream' does not support true with this model. "
                "Only the default (false) value is supported.",
                "type": "invalid_request_error",
                "param": "stream",
                "code": "unsupported_value",
            }
        },
    ),
}


@pytest.mark.parametrize("case", list(REFUSALS))
async def test_a_refused_parameter_is_dropped_once_and_said(llm, case):
    param, status, body = REFUSALS[case]
    reply = await ask(
        llm, [Step(ANSWER)] * 2, gate=refusing(param, status, body), reasoning_effort="high"
    )
    assert extract_ptx(reply.text, "vec_add").candidate
    requests = sent(llm)
    assert len(requests) == 2 and param in requests[0] and param not in requests[1], requests
    assert any(f"refused '{param}'" in n for n in reply.notes), reply.notes


async def test_a_server_that_refuses_streaming_is_read_whole_and_remembered(llm):
    gate = refusing(*REFUSALS["proxy without streaming"])
    first = await ask(llm, [Step(ANSWER)] * 3, gate=gate)
    assert not first.streamed and len(llm.chat_requests) == 2  # refused once, then whole
    reply = await ask(llm, [Step(ANSWER)], gate=gate)  # a second request: not refused again
    assert not reply.streamed and "stream" not in llm.chat_requests[-1].body
    assert len(llm.chat_requests) == 3


# ---- errors that are final: each server's own message reaches the person


@pytest.mark.parametrize(
    "status, body, words",
    [
        (
            400,
            {
                "object": "error",
                "message": "This model's maximum context length is 4096 tokens. However, your "
                "messages resulted in 5000 tokens. Please reduce the length of the messages.",
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            },
            "maximum context length is 4096",
        ),
        (
            400,
            {
                "error": {
                    "code": 400,
                    "message": "the request exceeds the available context size",
                    "type": "invalid_request_error",
                }
            },
            "exceeds the available context size",
        ),
        (400, {"error": "invalid options: frobnicate"}, "invalid options: frobnicate"),
        (
            422,
            {
                "detail": [
                    {
                        "type": "missing",
                        "loc": ["body", "messages", 0, "content"],
                        "msg": "Field required",
                    }
                ]
            },
            "messages.0.content: Field required",
        ),
    ],
    ids=["vllm context", "llama.cpp context", "ollama string error", "fastapi 422 messages"],
)
async def test_a_final_refusal_says_what_the_server_said(llm, status, body, words):
    with pytest.raises(LlmError) as err:
        await ask(llm, [Step(ANSWER)] * 4, gate=lambda b: (status, body))
    assert err.value.kind == "bad_request"
    assert words in str(err.value), str(err.value)
    assert len(llm.chat_requests) <= 4  # never a dead loop


async def test_a_200_with_no_choices_is_named_not_called_empty(llm):
    body = {"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": []}
    with pytest.raises(LlmError) as err:
        await ask(llm, [Step(raw_body=json.dumps(body).encode())], stream=False)
    assert err.value.kind == "bad_reply" and "no choices" in str(err.value)


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_openai_refusal_field_is_read_as_the_models_words(llm, stream):
    refusal = "I'm sorry, but I cannot assist with that request."
    if stream:
        chunks = [{"role": "assistant", "content": None}, {"refusal": refusal[:20]}]
        chunks += [{"refusal": refusal[20:]}]
        raw = b"".join(
            b"data: "
            + json.dumps(
                {
                    "id": "x",
                    "object": "chat.completion.chunk",
                    "created": 1,
                    "model": "m",
                    "choices": [{"index": 0, "delta": d, "finish_reason": None}],
                }
            ).encode()
            + b"\n\n"
            for d in chunks
        )
        step = Step(raw_body=raw + b"data: [DONE]\n\n", content_type="text/event-stream")
    else:
        body = {
            "id": "x",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": None, "refusal": refusal},
                    "finish_reason": "stop",
                }
            ],
        }
        step = Step(raw_body=json.dumps(body).encode())
    reply = await ask(llm, [step], stream=stream)
    assert reply.text == refusal
    ext = extract_ptx(reply.text, "vec_add", finish_reason=reply.finish_reason)
    assert not ext.candidate and "declines" in ext.problem and "cannot assist" in ext.problem


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_content_filter_is_named(llm, stream):
    partial = ANSWER[: len(ANSWER) // 2]
    reply = await ask(llm, [Step(partial, finish_reason="content_filter")], stream=stream)
    assert reply.finish_reason == "content_filter"
    ext = extract_ptx(reply.text, "vec_add", finish_reason=reply.finish_reason)
    assert ext.truncated and "content filter" in ext.problem and "token limit" not in ext.problem


def _sse(*events: dict) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + (
        b"data: [DONE]\n\n"
    )


def _chunk(delta: dict, finish: str | None = None) -> dict:
    return {
        "id": "x",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "org/model-7b",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


async def test_a_stream_whose_last_chunk_carries_only_usage(llm):
    usage = {"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14}
    raw = _sse(
        _chunk({"role": "assistant"}),
        _chunk({"content": ANSWER}),
        _chunk({}, "stop"),
        {"id": "x", "object": "chat.completion.chunk", "created": 1, "choices": [], "usage": usage},
    )
    reply = await ask(llm, [Step(raw_body=raw, content_type="text/event-stream")])
    assert reply.text == ANSWER and reply.finish_reason == "stop" and reply.usage == usage


async def test_empty_and_null_deltas_are_skipped(llm):
    raw = _sse(
        _chunk({}),
        _chunk({"content": ANSWER[:50]}),
        _chunk({"content": None}),
        _chunk({}),
        _chunk({"content": ANSWER[50:]}),
        _chunk({}, "stop"),
    )
    reply = await ask(llm, [Step(raw_body=raw, content_type="text/event-stream")])
    assert reply.text == ANSWER and extract_ptx(reply.text, "vec_add").candidate


async def test_a_model_name_with_a_slash(llm):
    reply = await ask(llm, [Step(ANSWER)], model="org/model-7b")
    assert llm.chat_requests[-1].body["model"] == "org/model-7b"
    assert reply.model == "org/model-7b"


async def test_a_404_at_the_chat_path_points_at_the_base_url_not_the_model(llm):
    # what vLLM (FastAPI) answers at /chat/completions when the base URL lacks its /v1
    with pytest.raises(LlmError) as err:
        await ask(llm, [Step(status=404, raw_body=b'{"detail":"Not Found"}')])
    msg = str(err.value)
    assert "/v1" in msg and "base URL" in msg and "is not served" not in msg, msg


async def test_a_404_naming_the_model_still_lists_the_models(llm):
    body = {"object": "error", "message": "The model `gpt-4` does not exist.", "code": 404}
    with pytest.raises(LlmError) as err:
        await ask(llm, [Step(status=404, raw_body=json.dumps(body).encode())], model="gpt-4")
    assert "does not exist" in str(err.value) and "Available: org/model-7b" in str(err.value)


@pytest.mark.parametrize(
    "status, message",
    [
        (400, "bad header Authorization: Bearer {key} for url https://x/v1?api_key={key}"),
        (500, "upstream https://api.example.com/v1/chat?key={key} failed"),
        (422, "{key}"),
    ],
)
async def test_an_echoed_key_never_reaches_the_error(llm, status, message):
    body = (
        {"detail": [{"loc": ["body", "messages"], "msg": message.replace("{key}", KEY)}]}
        if status == 422
        else {"error": {"message": message.replace("{key}", KEY), "type": "x"}}
    )
    with pytest.raises(LlmError) as err:
        await ask(llm, [Step(status=status, raw_body=json.dumps(body).encode())] * 3)
    assert KEY not in str(err.value) and KEY[8:20] not in str(err.value)
    assert "[redacted]" in str(err.value) or status == 422
