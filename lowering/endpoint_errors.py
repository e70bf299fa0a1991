"""An endpoint's error body read for what it says, whatever its shape, and what a token-limit
refusal states as the limit.

Error bodies seen in the wild:

- OpenAI, vLLM, llama.cpp: ``{"error": {"message", "type", "param", "code"}}`` (vLLM also
  ``{"object": "error", "message": …}``; llama.cpp adds ``n_prompt_tokens``/``n_ctx``);
- Gemini's OpenAI endpoint: a JSON **list**, ``[{"error": {"code": 400, "message": …,
  "status": "INVALID_ARGUMENT"}}]``;
- Ollama, some proxies: ``{"error": "text"}``; a bare JSON string; plain text;
- FastAPI/pydantic: ``{"detail": [{"loc": ["body", "seed"], "msg": …}]}`` or ``{"detail": "…"}``;
- Anthropic (and proxies in front of it): ``{"type": "error", "error": {"type":
  "invalid_request_error", "message": …}}``;
- nested: ``{"error": {"message": {"message": …}}}``, ``{"message": {"content": …}}``, a
  proxy's ``{"error": {"message": "…", "metadata": {"raw": "<the upstream's body>"}}}``.

``error_fields(body)`` finds the message, the parameter named and the code in any of them.
``stated_token_limit(fields, sent)`` reads the largest completion the endpoint says it takes,
from OpenAI's, Anthropic's, TGI's, vLLM's and llama.cpp's wordings.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

_MESSAGE_KEYS = ("message", "error", "detail", "msg", "error_message", "description",
                 "content", "text", "raw", "title")  # fmt: skip


@dataclass(frozen=True)
class ErrorFields:
    message: str  # the endpoint's own words ("" when it said nothing readable)
    param: str | None = None
    code: str | None = None
    numbers: dict | None = None  # numeric fields of the body (n_ctx, n_prompt_tokens …)


def _pydantic(detail: list) -> tuple[str, str | None]:
    """(the items as "field: message; …", the one request field they name, if one)."""
    parts, fields = [], set()
    for item in detail[:20]:
        if not isinstance(item, dict):
            if isinstance(item, str):
                parts.append(item)
            continue
        loc = item.get("loc")
        if not isinstance(loc, list):
            loc = []
        where = [str(x) for x in loc if str(x) not in ("body", "query")]
        if where:
            fields.add(where[0])
        parts.append(f"{'.'.join(where) or 'request'}: {item.get('msg') or item.get('type') or ''}")
    return "; ".join(parts)[:2000], (next(iter(fields)) if len(fields) == 1 else None)


def error_fields(body, depth: int = 0) -> ErrorFields:
    """The message, parameter and code of an error body of any shape (see the module doc)."""
    if depth > 6 or body is None:
        return ErrorFields("")
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    if isinstance(body, str):
        text = body.strip()
        if text[:1] in "[{":
            try:
                return error_fields(json.loads(text), depth + 1)
            except json.JSONDecodeError:
                pass
        return ErrorFields(text[:2000])
    if isinstance(body, list):
        if body and all(isinstance(x, dict) and "loc" in x for x in body[:5]):
            message, param = _pydantic(body)
            return ErrorFields(message, param)
        for item in body[:5]:
            found = error_fields(item, depth + 1)
            if found.message:
                return found
        return ErrorFields("")
    if not isinstance(body, dict):
        return ErrorFields(str(body)[:2000])
    param = body.get("param") if isinstance(body.get("param"), str) else None
    code = body.get("code") if isinstance(body.get("code"), str | int) else None
    code = code or (body.get("type") if isinstance(body.get("type"), str) else None)
    code = code or (body.get("status") if isinstance(body.get("status"), str) else None)
    numbers = {k: v for k, v in body.items() if isinstance(v, int) and not isinstance(v, bool)}
    message = ""
    for key in _MESSAGE_KEYS:
        value = body.get(key)
        if value is None or value == "":
            continue
        if key == "detail" and isinstance(value, list):
            message, named = _pydantic(value)
            param = param or named
        else:
            inner = error_fields(value, depth + 1)
            message = inner.message
            param = param or inner.param
            code = code or inner.code
            numbers = {**(inner.numbers or {}), **numbers}
        if message:
            break
    metadata = body.get("metadata")
    if isinstance(metadata, dict) and metadata.get("raw"):  # OpenRouter: the upstream's body
        upstream = error_fields(metadata["raw"], depth + 1)
        if upstream.message and upstream.message not in message:
            message = f"{message} (upstream: {upstream.message})" if message else upstream.message
            param = param or upstream.param
    if not message and body:
        message = json.dumps(body)[:2000]
    return ErrorFields(message, param, str(code) if code is not None else None, numbers or None)


# ---- what a token-limit refusal states

_INT = r"(\d[\d,]{0,9})"
_STATED = [
    # OpenAI: "max_tokens is too large: 8192. This model supports at most 4096 completion tokens"
    re.compile(rf"(?i)supports at most {_INT} (?:completion|output)? ?tokens"),
    # Anthropic: "max_tokens: 8192 > 4096, which is the maximum allowed number of output tokens"
    re.compile(rf"(?i)max_tokens:? {_INT} > {_INT}, which is the maximum", re.I),
    # TGI: "`max_new_tokens` must be <= 4096. Given: 8192"
    re.compile(rf"(?i)max_new_tokens`? must be <= {_INT}"),
    # generic: "maximum value for max_tokens is 4096", "max_tokens must be less than or equal to 4096"
    re.compile(
        rf"(?i)max(?:imum)?[ _](?:value for )?(?:max_)?(?:completion_|output_|new_)?tokens"
        rf"(?: is| must be| should be)?(?: less than or equal to| at most| <=)? {_INT}"
    ),  # fmt: skip
    re.compile(rf"(?i)(?:less than or equal to|at most|<=) {_INT}(?: tokens)?"),
]
# the context minus the prompt, as vLLM and TGI state them
_CONTEXT = [
    # vLLM: "maximum context length is 8192 tokens. However, you requested 9000 tokens (1000 in
    # the messages, 8000 in the completion)"
    re.compile(rf"(?i)maximum context length is {_INT} tokens.{{0,80}}?\({_INT} in the messages"),
    # vLLM (newer): "maximum context length is 4096 tokens and your request has 1234 input tokens"
    re.compile(rf"(?i)maximum context length is {_INT} tokens and your request has {_INT} input"),
    # TGI: "`inputs` tokens + `max_new_tokens` must be <= 8192. Given: 1234 `inputs` tokens"
    re.compile(rf"(?i)max_new_tokens`? must be <= {_INT}\. Given: {_INT} `?inputs"),
]


def _n(s: str) -> int:
    return int(s.replace(",", ""))


@dataclass(frozen=True)
class StatedLimit:
    tokens: int | None  # the largest completion the endpoint takes; None: not stated
    prompt_too_long: bool = False  # the prompt alone fills the context
    context: int | None = None


def stated_token_limit(fields: ErrorFields, sent: int | None) -> StatedLimit:
    """The completion limit a refusal states. llama.cpp states it as numbers in the body
    (``n_ctx``, ``n_prompt_tokens``); the others in words."""
    text = fields.message
    nums = fields.numbers or {}
    if "n_ctx" in nums and "n_prompt_tokens" in nums:
        room = nums["n_ctx"] - nums["n_prompt_tokens"]
        return StatedLimit(room if room > 0 else None, room <= 0, nums["n_ctx"])
    for rx in _CONTEXT:
        m = rx.search(text)
        if m:
            context, prompt = _n(m.group(1)), _n(m.group(2))
            room = context - prompt
            return StatedLimit(room if room > 0 else None, room <= 0, context)
    anthropic = _STATED[1].search(text)
    if anthropic:
        return StatedLimit(_n(anthropic.group(2)))
    for rx in _STATED:
        m = rx.search(text)
        if m:
            value = _n(m.groups()[-1])
            if value > 0 and (sent is None or value < sent):
                return StatedLimit(value)
    return StatedLimit(None)


# ---- final errors: what to do

QUOTA_WORDS = re.compile(
    r"(?i)insufficient_quota|exceeded your current quota|quota exceeded|billing|"
    r"credit balance is too low|insufficient (?:credits|balance|funds)|out of credits|"
    r"payment required|RESOURCE_EXHAUSTED.{0,40}quota"
)
AUTH_WORDS = re.compile(
    r"(?i)invalid[_ ]api[_ ]key|incorrect api key|authentication|unauthori[sz]ed|"
    r"invalid x-api-key|API key not valid|permission[_ ]denied|PERMISSION_DENIED"
)
