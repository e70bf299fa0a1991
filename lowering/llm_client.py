"""Chat completions against any OpenAI-compatible server (OpenAI, vLLM, llama.cpp, Ollama).

The openai SDK sends each request (base URL, auth header, proxies and TLS through httpx, HTTP
errors as typed exceptions); the reply body is read here, from the raw bytes, because real
endpoints differ in what they send
back and the loop must survive all of them:

- **Parameters an endpoint refuses.** OpenAI's reasoning models answer HTTP 400 to
  ``max_tokens`` (they take ``max_completion_tokens``) and to any ``temperature`` but 1; some
  servers refuse ``seed`` or ``reasoning_effort``. The refusal is read from the error body's
  ``param``/``code`` and its message, the parameter is renamed or dropped once, the change is
  remembered for that (endpoint, model) for the life of the process, and each change is a line
  in ``ChatReply.notes`` for the transcript. A 400 that names nothing we can change is final.
- **Reasoning.** ``reasoning_content`` / ``reasoning`` fields (whole messages and streamed
  deltas) go to ``ChatReply.reasoning``, never into the text the PTX is taken from.
- **Faults.** A body that is not JSON is ``LlmError("bad_reply")``; a reply longer than
  ``max_reply_chars`` is refused and a stream stops being read there; a streamed request times
  out on silence (no chunk for ``timeout_s``), a plain one on the whole reply, and a timeout is
  retried once only, so a hung endpoint gives up in about two timeouts.

There are no transport-level retries: 429 / 5xx / connection errors are retried here with backoff
(Retry-After wins) so each wait can be reported as progress. Every ``LlmError`` message is
scrubbed of the key (an endpoint may echo it in an error body); the first request that carries
a key to a host is said once in the log and in the reply's notes.

The openai SDK is imported when a client is made, not when this module is, so the GPU-side code
and the nvcc path never load it; ``prefetch_sdk()`` starts that import in a thread as soon as a
command knows it will talk to a model, so the SDK's second of imports overlaps the prompt's
preparation instead of following it.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ptxls.toolchain.secrets import host_of, public_url, remember_secret, scrub

from .settings import LlmSettings

log = logging.getLogger("ptxls.lowering.llm")

MAX_RETRY_AFTER_S = 60.0
TIMEOUT_RETRIES = 1  # a server that hung once will most likely hang again
TOO_LONG_RETRIES = 1  # a repetition loop is a sampling accident: one more try
# a stream that sent finish_reason but neither [DONE] nor a close: how long to wait for them
FINISHED_STREAM_GRACE_S = 2.0


class LlmError(Exception):
    """A request that did not produce a reply. ``kind``: config, auth, model, unreachable,
    timeout, rate_limit, server, bad_request, bad_reply (not JSON / not a chat completion),
    too_long (over ``max_reply_chars``). The message is scrubbed of the key."""

    def __init__(self, kind: str, message: str, *, status: int | None = None):
        super().__init__(scrub(message))
        self.kind = kind
        self.status = status


@dataclass
class ChatReply:
    text: str
    model: str
    finish_reason: str | None
    attempts: int
    seconds: float
    usage: dict | None = None
    streamed: bool = False
    reasoning: str = ""  # reasoning_content / reasoning fields: kept, never the answer
    notes: list[str] = field(default_factory=list)  # adaptations made for this request
    read_notes: list[str] = field(default_factory=list)  # how the body was read (tool call …)


# ---- what endpoints refused, per (endpoint, model), for the life of the process

# parameter → what to send instead (None: drop it)
_adapted: dict[tuple[str, str], dict[str, str | None]] = {}
# the completion limit an endpoint stated in a refusal, per (endpoint, model)
_limits: dict[tuple[str, str], int] = {}
_adapted_lock = threading.Lock()
_hosts_told: set[str] = set()

# The parameters we send and may change. The token limit has two spellings; an endpoint that
# refuses one gets the other, and one that refuses both gets neither.
_TOKEN_PARAMS = ("max_tokens", "max_completion_tokens")
# ``stream``: some proxies and servers answer 400 to streaming ("streaming is not supported");
# the reply is then read whole.
_ADAPTABLE = (*_TOKEN_PARAMS, "temperature", "seed", "reasoning_effort", "stream", "stream_options")
# a token limit the endpoint takes but not at this value ("max_tokens is too large: 8192 ...
# supports at most 4096", vLLM's "maximum context length is 4096 tokens ... reduce the length")
_TOO_LARGE = re.compile(
    r"(?i)too large|at most|maximum context|context length|context window|exceed|"
    r"reduce the length|greater than|too many tokens|maximum allowed|must be <=|"
    r"less than or equal|context size"
)
_REFUSAL_WORDS = re.compile(
    r"(?i)unsupported|not supported|does not support|unrecognized|unknown|not allowed|"
    r"not permitted|extra (?:inputs|fields)|unexpected|invalid|only the default|not available|"
    # a value out of the server's range: "temperature: range: 0..1", pydantic's "Input should
    # be less than or equal to 0", "must be between 0 and 1", "out of range"
    r"\brange\b|should be|must be|less than|not in"
)


def forget_adaptations() -> None:
    """Forget what endpoints refused (tests)."""
    with _adapted_lock:
        _adapted.clear()
        _limits.clear()
        _hosts_told.clear()


def _body_of(exc):
    body = getattr(exc, "body", None)
    if body is None:
        resp = getattr(exc, "response", None)
        try:
            body = resp.text if resp is not None else None
        except Exception:  # a streamed body not read: the SDK's own text then
            body = None
    return body


def _fields(exc):  # -> endpoint_errors.ErrorFields
    """The endpoint's words, parameter and code, from a body of any shape (endpoint_errors,
    imported on the first error: its expressions are not compiled before the first request)."""
    from .endpoint_errors import ErrorFields, error_fields

    found = error_fields(_body_of(exc))
    param = getattr(exc, "param", None) or found.param
    code = getattr(exc, "code", None) or found.code
    return ErrorFields(found.message, param, code, found.numbers)


def _error_fields(exc) -> tuple[str | None, str | None, str]:
    """(param, code, message) of an API error, from its body (any shape) and its text."""
    f = _fields(exc)
    text = f"{f.message}\n{exc}"
    return (str(f.param) if f.param else None, str(f.code) if f.code else None, text)


def api_error_text(exc) -> str:
    """The server's own words for an API error: the message of its JSON body (OpenAI's,
    vLLM's, llama.cpp's, Ollama's, pydantic's 422 list), else the SDK's text. The SDK's
    ``str()`` of a 422 is only "Error code: 422"."""
    message = _error_fields(exc)[2].split("\n", 1)[0].strip()
    status = getattr(exc, "status_code", None)
    return scrub(f"Error code: {status} - {message}"[:300] if message else _short(exc))


def refused_parameter(exc, sent: dict) -> str | None:
    """The parameter of ``sent`` that a 400/422 refuses, or None when it names none we sent.

    Reads the body's ``param`` first (OpenAI: ``"param": "max_tokens"``), then the message:
    a parameter we sent named in it (quoted or as a word, e.g. pydantic's
    ``"loc": ["body", "seed"]``), together with a refusal word."""
    param, code, text = _error_fields(exc)
    if param:
        p = param.rsplit(".", 1)[-1].strip("[]'\" ")
        if p in sent and p in _ADAPTABLE:
            return p
    if _TOO_LARGE.search(text):
        # a context-length error names no parameter: it is the token limit we sent
        limit = next((p for p in _TOKEN_PARAMS if p in sent), None)
        if limit:
            return limit
    if not (_REFUSAL_WORDS.search(text) or code in ("unsupported_parameter", "unsupported_value")):
        return None
    lowered = text.lower()
    # the earliest-named parameter wins: "'max_tokens' is not supported ... use
    # 'max_completion_tokens' instead" refuses the first, not the one it suggests
    best, best_at = None, len(lowered) + 1
    for name in _ADAPTABLE:
        if name not in sent:
            continue
        for m in re.finditer(rf"(?<![a-z_]){re.escape(name)}(?![a-z_])", lowered):
            if m.start() < best_at:
                best, best_at = name, m.start()
            break
    return best


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return scrub(text[0][:300]) if text else type(exc).__name__


def _retry_after(exc) -> float | None:
    resp = getattr(exc, "response", None)
    headers = getattr(resp, "headers", None)
    if not headers:
        return None
    value = headers.get("retry-after")
    try:
        return min(float(value), MAX_RETRY_AFTER_S) if value is not None else None
    except ValueError:
        return None


class _Broken(Exception):
    """A body that stopped mid-way (connection reset, bad chunking), an error object inside a
    200 or inside the stream, a chunk with finish_reason "error": retried like a 5xx."""


class _TooLong(Exception):
    """A reply over the size cap (most often a repetition loop): retried once."""

    def __init__(self, error: LlmError):
        super().__init__(str(error))
        self.error = error


def limit_too_large(exc) -> bool:
    """Whether a refusal of the token limit is about its value, not its name."""
    return bool(_TOO_LARGE.search(_error_fields(exc)[2]))


class _Refused(Exception):
    """A 400 that refuses a parameter we can change; the caller adapts and asks again."""

    def __init__(self, param: str, original: Exception):
        super().__init__(param)
        self.param = param
        self.original = original
        self.too_large = param in _TOKEN_PARAMS and limit_too_large(original)


@dataclass(frozen=True)
class _Failure:
    """A request that failed in a way worth retrying."""

    kind: str  # LlmError.kind if no retry is left
    reason: str  # for the log and the caller's on_retry
    final: str  # the LlmError message if no retry is left
    wait: float | None = None  # the endpoint's Retry-After; None: exponential backoff


@dataclass
class _Reading:
    """A reply being assembled from a plain JSON body or from SSE chunks."""

    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    chars: int = 0
    finish: str | None = None
    model: str | None = None
    usage: dict | None = None
    tool_call: bool = False  # the text came from tool-call arguments
    unterminated: bool = False  # a stream that finished without [DONE] or a close


def _content_text(value) -> str:
    """A message's content: a string, or a list of parts (``{"type": "text", "text": …}``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(
            p.get("text", "") if isinstance(p, dict) and isinstance(p.get("text"), str) else ""
            for p in value
        )
    return ""


def _tool_arguments(calls, streamed: bool = False) -> str:
    """The arguments of a message's tool calls (OpenAI's ``tool_calls[].function.arguments``),
    joined: a model that answers through a tool puts its PTX there, often as a JSON string."""
    if not isinstance(calls, list):
        return ""
    parts = []
    for call in calls[:16]:
        fn = call.get("function") if isinstance(call, dict) else None
        args = fn.get("arguments") if isinstance(fn, dict) else None
        if isinstance(args, str):
            parts.append(args)
        elif isinstance(args, dict):
            parts.append(json.dumps(args))
    return "".join(parts) if streamed else "\n".join(parts)


def _reasoning_text(message: dict) -> str:
    for key in ("reasoning_content", "reasoning", "thinking"):
        value = message.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


_sdk_import: threading.Thread | None = None
# SDK clients made ahead by prefetch_sdk(settings), by what they were made with; each is taken
# by the first LlmClient with the same settings (a client is never shared).
_made_ahead: dict[tuple, object] = {}
_made_ahead_lock = threading.Lock()
# What the SDK imports at its first request, not at its own import: anyio's asyncio backend.
_FIRST_REQUEST_MODULES = ("anyio._backends._asyncio",)


def prefetch_sdk(settings: LlmSettings | None = None) -> None:
    """Start importing the openai SDK in a thread (0.5-1 s of CPU on a 2-core machine), so it
    runs while the caller reads the kernel, the spec and the few-shot examples.

    With the ``settings`` the lowering will use, the thread then also makes that SDK client
    (its TLS context reads the CA certificates with the GIL released) and loads what the
    client's first request would load on the way (the chat resource, anyio's backend), so
    ``LlmClient(settings)`` finds it made and sends at once. Everything still goes through the
    SDK; only the order changes."""
    global _sdk_import
    if _sdk_import is None:
        _sdk_import = threading.Thread(
            target=_prefetch_quietly, args=(settings,), name="ptxls-openai-import", daemon=True
        )
        _sdk_import.start()


def _prefetch_quietly(settings: LlmSettings | None) -> None:
    # a broken install or a refused setting is reported by LlmClient, on the caller's thread
    with contextlib.suppress(Exception):
        import platform

        import openai

        if settings is None or not settings.ready:
            return
        client = _new_sdk_client(openai, settings)
        _ = client.chat.completions.with_streaming_response  # imports the chat resource
        for name in _FIRST_REQUEST_MODULES:
            with contextlib.suppress(ImportError):
                importlib.import_module(name)
        # its platform headers: platform.platform() runs `uname -p` (a child process) and reads
        # the interpreter for its libc; the standard library keeps the answer for the process
        platform.platform()
        with _made_ahead_lock:
            _made_ahead[_client_key(settings)] = client


def _sdk():
    if _sdk_import is not None:
        _sdk_import.join()
    import openai

    return openai


def _client_key(settings: LlmSettings) -> tuple:
    return (
        settings.api_key,
        settings.base_url,
        settings.timeout_s,
        tuple(sorted(settings.extra_headers.items())),
    )


def _new_sdk_client(openai, settings: LlmSettings):
    return openai.AsyncOpenAI(
        # local servers take any key; the SDK insists on one
        api_key=settings.api_key or "no-key",
        base_url=settings.base_url,
        timeout=settings.timeout_s,
        max_retries=0,  # retried here, with each wait reported as progress
        default_headers=dict(settings.extra_headers) or None,
    )


def _sdk_client(openai, settings: LlmSettings):
    """The SDK client for these settings: the one prefetch_sdk made for them, else a new one."""
    with _made_ahead_lock:
        made = _made_ahead.pop(_client_key(settings), None)
    return made if made is not None else _new_sdk_client(openai, settings)


class LlmClient:
    def __init__(self, settings: LlmSettings):
        if not settings.ready:
            raise LlmError("config", settings.not_ready_message())
        openai = _sdk()  # lazy: see the module docstring

        self._openai = openai
        self.settings = settings
        remember_secret(settings.api_key)
        # what people see: never credentials embedded in the URL
        self.endpoint = public_url(settings.base_url) or "https://api.openai.com/v1"
        self._key = (settings.base_url or "https://api.openai.com/v1", settings.model or "")
        # OpenAI's own API documents max_completion_tokens (max_tokens is deprecated there and
        # refused by its reasoning models); every other server is asked with max_tokens first
        self._token_param = (
            "max_completion_tokens"
            if host_of(settings.base_url) == "api.openai.com"
            else "max_tokens"
        )
        for value in settings.extra_headers.values():
            remember_secret(value)  # header values are scrubbed like the key
        self._client = _sdk_client(openai, settings)

    async def aclose(self) -> None:
        await self._client.close()

    # ---- the request's parameters, after what this endpoint refused before

    def _params(self, seed: int | None, temperature: float | None) -> dict:
        s = self.settings
        with _adapted_lock:
            stated = _limits.get(self._key)
        params: dict = {
            "temperature": s.temperature if temperature is None else temperature,
            self._token_param: min(s.max_tokens, stated) if stated else s.max_tokens,
        }
        if seed is not None and s.seed is not None:
            params["seed"] = seed
        if s.reasoning_effort:
            params["reasoning_effort"] = s.reasoning_effort
        if s.stream:
            params["stream"] = True
            # the usage of a streamed reply comes in its last chunk only when asked for
            params["stream_options"] = {"include_usage": True}
        with _adapted_lock:
            changes = dict(_adapted.get(self._key, {}))
        for name, instead in changes.items():
            if name in params:
                value = params.pop(name)
                if instead:
                    params[instead] = value
        if "stream" not in params:
            params.pop("stream_options", None)  # only allowed with stream
        return params

    def _adapt(self, param: str, sent: dict, too_large: bool = False) -> str | None:
        """Record what to do about a refused parameter; the note to report, or None when there
        is nothing left to try (the refusal is final)."""
        with _adapted_lock:
            changes = _adapted.setdefault(self._key, {})
            if param in _TOKEN_PARAMS and too_large:
                from .endpoint_errors import stated_token_limit

                stated = stated_token_limit(self._refusal_fields, sent.get(param))
                if stated.prompt_too_long:
                    raise LlmError(
                        "bad_request",
                        f"{self.endpoint}: the prompt alone fills the model's context "
                        f"({stated.context} tokens; it said: {self._refusal_fields.message[:200]}). "
                        "Send fewer few-shot examples (ptxls.llm.fewshot / PTXLS_LLM_FEWSHOT, 0 "
                        "allowed) or use a model or server with a longer context.",
                        status=400,
                    )
                if stated.tokens and stated.tokens < (_limits.get(self._key) or 10**9):
                    # the endpoint says what it takes: ask for that much, and say so
                    _limits[self._key] = stated.tokens
                    return (
                        f"endpoint allows at most {stated.tokens} completion tokens (it refused "
                        f"'{param}'={sent.get(param)}); sent {stated.tokens}. Set "
                        f"ptxls.llm.maxTokens (PTXLS_LLM_MAX_TOKENS) to {stated.tokens} or "
                        "less to skip this refusal"
                    )
                # the endpoint takes the parameter, not this value: let its own limit apply
                original = next((k for k, v in changes.items() if v == param), param)
                changes[original] = None
                return (
                    f"endpoint refused '{param}'={sent.get(param)} as too large and stated no "
                    "limit; sent no token limit (the endpoint's own applies; lower "
                    "ptxls.llm.maxTokens to set one)"
                )
            if param in _TOKEN_PARAMS:
                other = _TOKEN_PARAMS[1] if param == _TOKEN_PARAMS[0] else _TOKEN_PARAMS[0]
                original = next((k for k, v in changes.items() if v == param), param)
                if other not in changes and other not in changes.values():
                    changes[original] = other
                    return f"endpoint refused '{param}'; sent '{other}'"
                changes[original] = None
                changes.pop(other, None)
                changes[other] = None
                return (
                    f"endpoint refused both '{_TOKEN_PARAMS[0]}' and '{_TOKEN_PARAMS[1]}'; "
                    "sent no token limit (the endpoint's own applies)"
                )
            if changes.get(param, "") is None:
                return None  # already dropped, and refused again: nothing left to change
            changes[param] = None
        value = sent.get(param)
        what = {
            "temperature": "no temperature (the model's default)",
            "seed": "no seed (replies may differ between runs)",
            "reasoning_effort": "no reasoning_effort (the model's default)",
            "stream": "no stream (the reply is read whole; the timeout then covers all of it)",
            "stream_options": "no stream_options (the endpoint does not report a streamed "
            "reply's token usage then)",
        }.get(param, f"no '{param}'")
        return f"endpoint refused '{param}' ({value!r}); sent {what}"

    def _announce_key(self, notes: list[str]) -> None:
        if not self.settings.api_key:
            return
        host = host_of(self.settings.base_url)
        with _adapted_lock:
            if host in _hosts_told:
                return
            _hosts_told.add(host)
        line = f"sending the API key to {host}"
        log.warning("%s", line)
        notes.append(line)

    # ---- one request

    async def _once(self, messages: list[dict], params: dict, on_text) -> ChatReply:
        s = self.settings
        started = time.monotonic()
        kwargs = dict(model=s.model, messages=messages, **params)
        if s.extra_body:  # chat_template_kwargs, top_k …: what this server takes besides
            kwargs["extra_body"] = dict(s.extra_body)
        try:
            async with asyncio.timeout(s.timeout_s) as deadline:
                async with self._client.chat.completions.with_streaming_response.create(
                    **kwargs
                ) as raw:
                    ctype = (raw.headers.get("content-type") or "").lower()
                    reading = _Reading()
                    body = await self._read_body(raw, ctype, reading, on_text, deadline)
        except self._openai.BadRequestError as e:
            param = refused_parameter(e, params)
            if param:
                raise _Refused(param, e) from e
            raise
        except self._openai.UnprocessableEntityError as e:  # pydantic servers: 422 per field
            param = refused_parameter(e, params)
            if param:
                raise _Refused(param, e) from e
            raise
        if body is not None:  # a plain JSON body
            self._parse_plain(body, reading)
        text = "".join(reading.text)
        read_notes = []
        if reading.tool_call:
            read_notes.append("the answer came as tool-call arguments; read like content")
        if reading.unterminated:
            read_notes.append(
                f"the stream sent finish_reason '{reading.finish}' but neither [DONE] nor a "
                f"close within {FINISHED_STREAM_GRACE_S:g} s; the text received is the reply"
            )
        return ChatReply(
            text,
            reading.model or s.model or "",
            reading.finish,
            1,
            time.monotonic() - started,
            reading.usage,
            body is None,
            "".join(reading.reasoning),
            read_notes=read_notes,
        )

    async def _read_body(self, raw, ctype: str, reading: _Reading, on_text, deadline):
        """Read the body within the limits. Returns the bytes of a plain JSON body, or None
        when it was an SSE stream (then ``reading`` holds the reply)."""
        s = self.settings
        cap_chars = s.max_reply_chars
        # a JSON body escapes characters (\\uXXXX: 6 bytes) and wraps them in an envelope
        cap_bytes = cap_chars * 6 + 65536
        declared = raw.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > cap_bytes:
            raise _TooLong(LlmError(
                "too_long",
                f"{self.endpoint} sent a reply of {int(declared)} bytes, over the limit of "
                f"{cap_chars} characters (ptxls.llm.maxReplyChars); not read",
            ))  # fmt: skip
        chunks: list[bytes] = []
        size = 0
        sse: _SseReader | None = None
        iterator = raw.iter_bytes().__aiter__()
        heard = 0  # data lines so far: keep-alive comments (": PROCESSING") are not progress
        while True:
            if sse is not None and sse.data_lines > heard:
                # a stream: the timeout is on silence, not on the whole reply
                heard = sse.data_lines
                deadline.reschedule(asyncio.get_running_loop().time() + s.timeout_s)
            try:
                if sse is not None and reading.finish:
                    # finished (finish_reason sent): [DONE] or the close should follow at once;
                    # a server that sends neither has still sent the whole reply
                    chunk = await asyncio.wait_for(iterator.__anext__(), FINISHED_STREAM_GRACE_S)
                else:
                    chunk = await iterator.__anext__()
            except StopAsyncIteration:
                break
            except TimeoutError:
                if sse is not None and reading.finish:
                    reading.unterminated = True
                    break
                raise
            except asyncio.CancelledError:
                raise
            except Exception as e:  # the HTTP library's read errors, after the SDK let go
                if "timeout" in type(e).__name__.lower():
                    raise TimeoutError from e
                raise _Broken(f"the reply broke off ({type(e).__name__}: {_short(e)})") from e
            size += len(chunk)
            if size > cap_bytes:
                raise _TooLong(self._too_long(size))
            if sse is None and not chunks:
                head = chunk.lstrip()[:5]
                if "text/event-stream" in ctype or head.startswith((b"data:", b"event", b":")):
                    sse = _SseReader(self.endpoint)
            if sse is None:
                chunks.append(chunk)
                continue
            for event in sse.feed(chunk):
                self._take_chunk(event, reading)
                if reading.chars > cap_chars:
                    raise _TooLong(self._too_long(reading.chars, chars=True))
                if on_text and reading.text:
                    on_text(reading.chars)
            if sse.done:
                break
        if sse is not None:
            for event in sse.feed(b"\n\n"):
                self._take_chunk(event, reading)
            if not sse.events and not sse.done:
                raise self._bad_reply("a stream with no data events", sse.first_line)
            return None
        return b"".join(chunks)

    def _too_long(self, n: int, chars: bool = False) -> LlmError:
        unit = "characters" if chars else "bytes"
        return LlmError(
            "too_long",
            f"{self.endpoint} sent more than {n} {unit}, over the limit of "
            f"{self.settings.max_reply_chars} characters per reply (ptxls.llm.maxReplyChars); "
            "stopped reading",
        )

    def _bad_reply(self, what: str, sample: str, hint: str = "") -> LlmError:
        sample = sample.strip().replace("\n", " ")[:200]
        hint = hint or "is the base URL an OpenAI-compatible /v1 endpoint?"
        return LlmError("bad_reply", f"{self.endpoint} sent {what} (starts: {sample!r}); {hint}")

    def _parse_plain(self, body: bytes, reading: _Reading) -> None:
        try:
            data = json.loads(body.decode("utf-8", errors="replace"))
        except json.JSONDecodeError as e:
            raise self._bad_reply(
                f"a reply that is not valid JSON ({e.msg} at byte {e.pos})",
                body[:200].decode("utf-8", errors="replace"),
            ) from None
        if not isinstance(data, dict):
            raise self._bad_reply("JSON that is not a chat completion", json.dumps(data)[:200])
        if data.get("error") not in (None, "", {}):
            # OpenRouter documents this for failures after generation started: retried
            from .endpoint_errors import error_fields

            raise _Broken(f"HTTP 200 with an error: {error_fields(data).message[:300]}")
        choices = data.get("choices")
        if not isinstance(choices, list):
            raise self._bad_reply("JSON without 'choices'", json.dumps(data)[:200])
        reading.model = data.get("model") if isinstance(data.get("model"), str) else None
        reading.usage = data.get("usage") if isinstance(data.get("usage"), dict) else None
        if not choices:
            # not an empty answer: the server produced no completion at all (a filtered
            # prompt, an overloaded proxy); saying "empty reply" would blame the model
            raise self._bad_reply(
                "a completion with no choices",
                json.dumps(data)[:200],
                "the server produced no answer at all (a filtered prompt or an overloaded "
                "server); try again or another model",
            )
        choice = choices[0] if isinstance(choices[0], dict) else {}
        message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
        text = _content_text(message.get("content"))
        if not text:  # a tool call: its arguments are read like content
            text = _tool_arguments(message.get("tool_calls"))
            if text:
                reading.tool_call = True
        if not text and isinstance(message.get("refusal"), str):
            # OpenAI's structured refusal: content null, the model's words in "refusal"
            text = message["refusal"]
        if not text and isinstance(choice.get("text"), str):  # completions-style servers
            text = choice["text"]
        reasoning = _reasoning_text(message)
        reading.text, reading.reasoning = [text], [reasoning]
        reading.chars = len(text) + len(reasoning)
        reading.finish = choice.get("finish_reason")
        if reading.finish == "error":
            raise _Broken("the endpoint ended the reply with finish_reason 'error'")
        if reading.chars > self.settings.max_reply_chars:
            raise _TooLong(self._too_long(reading.chars, chars=True))

    def _take_chunk(self, data, reading: _Reading) -> None:
        if not isinstance(data, dict):
            return
        if data.get("error") not in (None, "", {}):
            from .endpoint_errors import error_fields

            raise _Broken(f"an error in the stream: {error_fields(data).message[:300]}")
        if isinstance(data.get("model"), str) and data["model"]:
            reading.model = data["model"]
        if isinstance(data.get("usage"), dict):
            reading.usage = data["usage"]
        for choice in data.get("choices") or []:
            if not isinstance(choice, dict):
                continue
            delta = choice.get("delta")
            if not isinstance(delta, dict):
                delta = choice.get("message") if isinstance(choice.get("message"), dict) else {}
            piece = _content_text(delta.get("content")) or (
                delta["refusal"] if isinstance(delta.get("refusal"), str) else ""
            )
            if not piece and delta.get("tool_calls"):  # streamed tool-call arguments
                piece = _tool_arguments(delta["tool_calls"], streamed=True)
                reading.tool_call = reading.tool_call or bool(piece)
            thought = _reasoning_text(delta)
            if piece:
                reading.text.append(piece)
            if thought:
                reading.reasoning.append(thought)
            reading.chars += len(piece) + len(thought)
            if choice.get("finish_reason"):
                reading.finish = choice["finish_reason"]
                if reading.finish == "error":
                    raise _Broken("the stream ended with finish_reason 'error'")

    # ---- the public call

    async def chat(
        self,
        messages: list[dict],
        *,
        seed: int | None = None,
        temperature: float | None = None,
        on_text: Callable[[int], None] | None = None,
        on_retry: Callable[[str, float], None] | None = None,
        deadline: float | None = None,
    ) -> ChatReply:
        """One reply, retried on transient failures. ``temperature`` overrides the setting for
        this request (None: the setting); ``on_text(chars)`` sees streaming progress;
        ``on_retry(reason, wait_s)`` each retry; ``deadline`` (``time.monotonic()``) is when
        the caller's budget ends: no retry waits past it. Raises LlmError."""
        attempt = timeouts = too_long = 0
        notes: list[str] = []
        self._announce_key(notes)
        while True:
            attempt += 1
            params = self._params(seed, temperature)
            try:
                reply = await self._once(messages, params, on_text)
            except _Refused as r:
                notes.append(self._adapted(r, params))
                attempt -= 1  # an adaptation is not a retry
                continue
            except _TooLong as t:
                too_long += 1
                if too_long > TOO_LONG_RETRIES:
                    raise t.error from None
                notes.append(f"{t.error}; asked again once (a repetition loop is an accident)")
                if on_retry:
                    on_retry("the reply ran past the size cap (a repetition loop?)", 0.0)
                attempt -= 1
                continue
            except (self._openai.APIError, _Broken, TimeoutError) as e:
                failure = await self._failure(e, attempt)
                if failure.kind == "timeout":
                    timeouts += 1
                    if timeouts > TIMEOUT_RETRIES:
                        raise LlmError(failure.kind, failure.final) from None
            else:
                reply.attempts = attempt
                reply.notes = notes + reply.read_notes
                return reply
            await self._wait_to_retry(failure, attempt, deadline, on_retry)

    # ---- what a failed request means: a parameter to adapt, a final error, or a retry

    def _adapted(self, refused: _Refused, params: dict) -> str:
        """The note for the change made to a refused parameter; LlmError when nothing is left
        to change."""
        self._refusal_fields = _fields(refused.original)
        note = self._adapt(refused.param, params, refused.too_large)
        if note is None:
            raise LlmError(
                "bad_request",
                f"{self.endpoint} rejected the request (HTTP 400) and refused "
                f"'{refused.param}' again after it was changed: {api_error_text(refused.original)}",
                status=400,
            ) from None
        log.info("%s (model %s)", note, self.settings.model)
        return note

    async def _failure(self, e: Exception, attempt: int) -> _Failure:
        """The retry a transient failure calls for; LlmError for a final one."""
        o = self._openai
        s = self.settings
        if isinstance(e, o.APIStatusError):
            return await self._status_failure(e, attempt)
        if isinstance(e, (o.APITimeoutError, TimeoutError)):
            return _Failure(
                "timeout",
                f"no reply within {s.timeout_s:g} s" + (" of silence" if s.stream else ""),
                f"{self.endpoint} did not answer within {s.timeout_s:g} s"
                f"{' of silence' if s.stream else ''} ({attempt} attempts); raise "
                "ptxls.llm.timeoutSeconds (PTXLS_LLM_TIMEOUT) for a slow model, or check "
                "the server",
            )
        if isinstance(e, o.APIConnectionError):
            return _Failure(
                "unreachable",
                f"cannot connect ({_short(e)})",
                f"cannot reach {self.endpoint}: {_short(e.__cause__ or e)}. Is the server "
                "running and the URL right (ptxls.llm.baseUrl / OPENAI_BASE_URL)?",
            )
        # another API error or a body that broke mid-way (a stream cut off)
        reason = str(e) if isinstance(e, _Broken) else f"{type(e).__name__}: {_short(e)}"
        return _Failure("server", reason, f"{self.endpoint}: {reason} after {attempt} attempts")

    async def _status_failure(self, e, attempt: int) -> _Failure:
        """An HTTP error status: 401/403/404/400, an exhausted quota and any other 4xx are
        final (LlmError); 429 and 5xx are retried."""
        from .endpoint_errors import AUTH_WORDS, QUOTA_WORDS

        o = self._openai
        status = getattr(e, "status_code", None)
        said = _fields(e).message or _short(e)
        if status in (400, 402, 403, 429) and QUOTA_WORDS.search(f"{said}\n{e}"):
            # no retry can help: the account has no quota or credit left
            raise LlmError(
                "rate_limit",
                f"{self.endpoint}: the account's quota or credit is used up (HTTP {status}): "
                f"{said[:200]}. Add credit or raise the limit in the provider's billing "
                "settings, or use another key (OPENAI_API_KEY) or model (ptxls.llm.model).",
                status=status,
            ) from None
        if isinstance(e, o.AuthenticationError) or (
            status in (400, 403) and AUTH_WORDS.search(said)
        ):
            raise LlmError(
                "auth",
                f"{self.endpoint} refused the API key (HTTP {status}): {said[:200]}. Set "
                "OPENAI_API_KEY to a valid key for this endpoint, in the environment ptxls "
                "runs in (the editor's server inherits the editor's environment).",
                status=status,
            ) from None
        if isinstance(e, o.PermissionDeniedError):
            raise LlmError(
                "auth",
                f"{self.endpoint} denied access (HTTP 403): {said[:200]}. The key may lack "
                "access to this model or region: check the key's permissions, or choose "
                "another model (ptxls.llm.model).",
                status=403,
            ) from None
        if isinstance(e, o.NotFoundError):
            raise LlmError("model", await self._model_message(e), status=404) from None
        if isinstance(e, o.BadRequestError):
            text = str(e).lower()
            if "model" in text and ("not found" in text or "does not exist" in text):
                raise LlmError("model", await self._model_message(e), status=400) from None
            raise LlmError(
                "bad_request",
                f"{self.endpoint} rejected the request (HTTP 400): {api_error_text(e)}",
                status=400,
            ) from None
        if status is not None and status < 500 and status != 429:
            raise LlmError(
                "bad_request",
                f"{self.endpoint} answered HTTP {status}: {api_error_text(e)}",
                status=status,
            ) from None
        reason = f"HTTP {status}"
        return _Failure(
            "rate_limit" if status == 429 else "server",
            reason,
            f"{self.endpoint} kept failing ({reason}: {api_error_text(e)}) after "
            f"{attempt} attempts",
            _retry_after(e),
        )

    async def _wait_to_retry(
        self,
        failure: _Failure,
        attempt: int,
        deadline: float | None,
        on_retry: Callable[[str, float], None] | None,
    ) -> None:
        """Sleep before the next attempt (Retry-After, else exponential backoff); LlmError when
        the retries or the caller's time budget are spent."""
        s = self.settings
        if attempt > s.retries:
            raise LlmError(failure.kind, failure.final)
        backoff = s.retry_backoff_s * (2 ** (attempt - 1))
        delay = failure.wait if failure.wait is not None else backoff
        if deadline is not None and time.monotonic() + delay >= deadline:
            raise LlmError(
                failure.kind, failure.final + "; the time budget (ptxls.llm.budgetSeconds) is spent"
            )
        log.info(
            "LLM request failed (%s); retry %d/%d in %.2f s",
            failure.reason,
            attempt,
            s.retries,
            delay,
        )
        if on_retry:
            on_retry(scrub(failure.reason), delay)
        await asyncio.sleep(delay)

    async def _model_message(self, exc) -> str:
        model = self.settings.model
        said = api_error_text(exc)
        names: list[str] = []
        listed = False
        try:
            async with asyncio.timeout(min(self.settings.timeout_s, 10)):
                page = await self._client.models.list()
                names = sorted(m.id for m in page.data)[:20]
                listed = True
        except Exception:  # listing models is a courtesy: its failure changes nothing
            pass
        if (not listed and "model" not in said.lower()) or model in names:
            # a 404 that names no model, from a server that lists none either: the path is
            # wrong, not the model (a base URL without its "/v1": vLLM's {"detail": "Not
            # Found"}, Ollama's "404 page not found")
            listed_too = f" (it lists model '{model}')" if model in names else ""
            return (
                f"{self.endpoint}/chat/completions was not found{listed_too} ({said}). Is "
                "the base URL "
                "right? OpenAI-compatible servers serve under /v1 (e.g. "
                "http://localhost:8000/v1, http://localhost:11434/v1): set ptxls.llm.baseUrl "
                "/ OPENAI_BASE_URL."
            )
        msg = f"model '{model}' is not served by {self.endpoint} ({said})."
        if names:
            msg += f" Available: {', '.join(names)}."
        return msg + " Set PTXLS_MODEL or the setting ptxls.llm.model."


class _SseReader:
    """Server-sent events from byte chunks: yields each ``data:`` payload parsed as JSON.
    Lines are split as they arrive (bytes kept only up to the last newline), so reading is
    linear in the stream's size."""

    def __init__(self, endpoint: str):
        self.endpoint = endpoint
        self.done = False
        self._pending = b""
        self._data: list[bytes] = []
        self.events = 0
        self.data_lines = 0  # "data:" lines seen: what counts as the stream making progress
        self.first_line = ""  # for the message when nothing in the stream is an event

    def feed(self, chunk: bytes):
        buf = self._pending + chunk
        lines = buf.split(b"\n")
        self._pending = lines.pop()
        for line in lines:
            line = line.rstrip(b"\r")
            if not self.first_line and line.strip():
                self.first_line = line[:200].decode("utf-8", errors="replace")
            if not line:
                if self._data:
                    payload, self._data = b"\n".join(self._data), []
                    event = self._event(payload)
                    if event is not None:
                        yield event
                continue
            if line.startswith(b"data:"):
                self.data_lines += 1
                value = line[5:]
                if value.startswith(b" "):
                    value = value[1:]
                self._data.append(value)
            # "event:", "id:", "retry:" and ":" comments carry nothing we use

    def _event(self, payload: bytes):
        if payload.strip() == b"[DONE]":
            self.done = True
            return None
        self.events += 1
        try:
            return json.loads(payload.decode("utf-8", errors="replace"))
        except json.JSONDecodeError as e:
            raise LlmError(
                "bad_reply",
                f"{self.endpoint} sent a stream chunk that is not valid JSON ({e.msg}; starts: "
                f"{payload[:120].decode('utf-8', errors='replace')!r})",
            ) from None
