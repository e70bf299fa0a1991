"""What a failed chat request says, whatever the shape of the endpoint's error body.

The endpoint's words, the parameter it refuses, a Retry-After, and the exceptions the client
raises between its steps.

``LlmError`` is the one error the lowering loop sees; ``Broken``, ``TooLong``, ``Refused`` and
``Failure`` are the client's own steps (retried, asked again, adapted). endpoint_errors.py holds
the wordings of the providers, imported on the first error only (its expressions are not
compiled before the first request).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ptxls.toolchain.secrets import scrub

if TYPE_CHECKING:
    from .endpoint_errors import ErrorFields

MAX_RETRY_AFTER_S = 60.0


class LlmError(Exception):
    """A request that did not produce a reply. ``kind``: config, auth, model, unreachable,
    timeout, rate_limit, server, bad_request, bad_reply (not JSON / not a chat completion),
    too_long (over ``max_reply_chars``). The message is scrubbed of the key."""

    def __init__(self, kind: str, message: str, *, status: int | None = None):
        super().__init__(scrub(message))
        self.kind = kind
        self.status = status


# The parameters we send and may change. The token limit has two spellings; an endpoint that
# refuses one gets the other, and one that refuses both gets neither.
TOKEN_PARAMS = ("max_tokens", "max_completion_tokens")
# ``stream``: some proxies and servers answer 400 to streaming ("streaming is not supported");
# the reply is then read whole.
ADAPTABLE = (*TOKEN_PARAMS, "temperature", "seed", "reasoning_effort", "stream", "stream_options")
# a token limit the endpoint takes but not at this value ("max_tokens is too large: 8192 ...
# supports at most 4096", vLLM's "maximum context length is 4096 tokens ... reduce the length")
TOO_LARGE = re.compile(
    r"(?i)too large|at most|maximum context|context length|context window|exceed|"
    r"reduce the length|greater than|too many tokens|maximum allowed|must be <=|"
    r"less than or equal|context size"
)
REFUSAL_WORDS = re.compile(
    r"(?i)unsupported|not supported|does not support|unrecognized|unknown|not allowed|"
    r"not permitted|extra (?:inputs|fields)|unexpected|invalid|only the default|not available|"
    # a value out of the server's range: "temperature: range: 0..1", pydantic's "Input should
    # be less than or equal to 0", "must be between 0 and 1", "out of range"
    r"\brange\b|should be|must be|less than|not in"
)


def body_of(exc):
    body = getattr(exc, "body", None)
    if body is None:
        resp = getattr(exc, "response", None)
        try:
            body = resp.text if resp is not None else None
        except Exception:  # a streamed body not read: the SDK's own text then
            body = None
    return body


def fields_of(exc) -> ErrorFields:
    """The endpoint's words, parameter and code, from a body of any shape (endpoint_errors,
    imported on the first error: its expressions are not compiled before the first request)."""
    from .endpoint_errors import ErrorFields, error_fields

    found = error_fields(body_of(exc))
    param = getattr(exc, "param", None) or found.param
    code = getattr(exc, "code", None) or found.code
    return ErrorFields(found.message, param, code, found.numbers)


def error_fields_of(exc) -> tuple[str | None, str | None, str]:
    """(param, code, message) of an API error, from its body (any shape) and its text."""
    f = fields_of(exc)
    text = f"{f.message}\n{exc}"
    return (str(f.param) if f.param else None, str(f.code) if f.code else None, text)


def api_error_text(exc) -> str:
    """The server's own words for an API error: the message of its JSON body (OpenAI's,
    vLLM's, llama.cpp's, Ollama's, pydantic's 422 list), else the SDK's text. The SDK's
    ``str()`` of a 422 is only "Error code: 422"."""
    message = error_fields_of(exc)[2].split("\n", 1)[0].strip()
    status = getattr(exc, "status_code", None)
    return scrub(f"Error code: {status} - {message}"[:300] if message else short(exc))


def refused_parameter(exc, sent: dict) -> str | None:
    """The parameter of ``sent`` that a 400/422 refuses, or None when it names none we sent.

    Reads the body's ``param`` first (OpenAI: ``"param": "max_tokens"``), then the message:
    a parameter we sent named in it (quoted or as a word, e.g. pydantic's
    ``"loc": ["body", "seed"]``), together with a refusal word."""
    param, code, text = error_fields_of(exc)
    if param:
        p = param.rsplit(".", 1)[-1].strip("[]'\" ")
        if p in sent and p in ADAPTABLE:
            return p
    if TOO_LARGE.search(text):
        # a context-length error names no parameter: it is the token limit we sent
        limit = next((p for p in TOKEN_PARAMS if p in sent), None)
        if limit:
            return limit
    if not (REFUSAL_WORDS.search(text) or code in ("unsupported_parameter", "unsupported_value")):
        return None
    lowered = text.lower()
    # the earliest-named parameter wins: "'max_tokens' is not supported ... use
    # 'max_completion_tokens' instead" refuses the first, not the one it suggests
    best, best_at = None, len(lowered) + 1
    for name in ADAPTABLE:
        if name not in sent:
            continue
        for m in re.finditer(rf"(?<![a-z_]){re.escape(name)}(?![a-z_])", lowered):
            if m.start() < best_at:
                best, best_at = name, m.start()
            break
    return best


def short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return scrub(text[0][:300]) if text else type(exc).__name__


def retry_after(exc) -> float | None:
    resp = getattr(exc, "response", None)
    headers = getattr(resp, "headers", None)
    if not headers:
        return None
    value = headers.get("retry-after")
    try:
        return min(float(value), MAX_RETRY_AFTER_S) if value is not None else None
    except ValueError:
        return None


class Broken(Exception):
    """A body that stopped mid-way (connection reset, bad chunking), an error object inside a
    200 or inside the stream, a chunk with finish_reason "error": retried like a 5xx."""


class TooLong(Exception):
    """A reply over the size cap (most often a repetition loop): retried once."""

    def __init__(self, error: LlmError):
        super().__init__(str(error))
        self.error = error


def limit_too_large(exc) -> bool:
    """Whether a refusal of the token limit is about its value, not its name."""
    return bool(TOO_LARGE.search(error_fields_of(exc)[2]))


class Refused(Exception):
    """A 400 that refuses a parameter we can change; the caller adapts and asks again."""

    def __init__(self, param: str, original: Exception):
        super().__init__(param)
        self.param = param
        self.original = original
        self.too_large = param in TOKEN_PARAMS and limit_too_large(original)


@dataclass(frozen=True)
class Failure:
    """A request that failed in a way worth retrying."""

    kind: str  # LlmError.kind if no retry is left
    reason: str  # for the log and the caller's on_retry
    final: str  # the LlmError message if no retry is left
    wait: float | None = None  # the endpoint's Retry-After; None: exponential backoff
