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

The request and its retries are here; what an error body says is llm_errors.py, reading the
reply's bytes (whole or streamed) is llm_reading.py, and the SDK's import and client, made ahead
on the start-up path (``prefetch_sdk``), are llm_sdk.py.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ptxls.toolchain.secrets import Endpoint, endpoint_of, scrub

from .llm_errors import (
    MAX_RETRY_AFTER_S,
    TOKEN_PARAMS,
    Broken,
    Failure,
    LlmError,
    Refused,
    TooLong,
    api_error_text,
    fields_of,
    limit_too_large,
    refused_parameter,
    retry_after,
    short,
)
from .llm_reading import FINISHED_STREAM_GRACE_S, Reading, parse_plain, read_body
from .llm_sdk import prefetch_sdk, sdk, sdk_client, warm_sdk
from .settings import LlmSettings

# importable from here as before the split (the loop, the service, the tests)
__all__ = [
    "FINISHED_STREAM_GRACE_S",
    "MAX_RETRY_AFTER_S",
    "TIMEOUT_RETRIES",
    "TOO_LONG_RETRIES",
    "ChatReply",
    "LlmClient",
    "LlmError",
    "api_error_text",
    "forget_adaptations",
    "limit_too_large",
    "prefetch_sdk",
    "refused_parameter",
    "warm_sdk",
]

log = logging.getLogger("ptxls.lowering.llm")

TIMEOUT_RETRIES = 1  # a server that hung once will most likely hang again
TOO_LONG_RETRIES = 1  # a repetition loop is a sampling accident: one more try


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


def forget_adaptations() -> None:
    """Forget what endpoints refused (tests)."""
    with _adapted_lock:
        _adapted.clear()
        _limits.clear()
        _hosts_told.clear()


class LlmClient:
    def __init__(self, settings: LlmSettings, endpoint: Endpoint | None = None):
        """``endpoint``: ``endpoint_of(settings.base_url, settings.secrets())``, made where the
        lowering started (the key and header values are scrubbed from then on); made here when
        not given."""
        if not settings.ready:
            raise LlmError("config", settings.not_ready_message())
        openai = sdk()  # lazy: llm_sdk.py

        self._openai = openai
        self.settings = settings
        shown = endpoint or endpoint_of(settings.base_url, settings.secrets())
        self.host = shown.host
        # what people see: never credentials embedded in the URL
        self.endpoint = shown.url or "https://api.openai.com/v1"
        self._key = (settings.base_url or "https://api.openai.com/v1", settings.model or "")
        # OpenAI's own API documents max_completion_tokens (max_tokens is deprecated there and
        # refused by its reasoning models); every other server is asked with max_tokens first
        self._token_param = (
            "max_completion_tokens" if shown.host == "api.openai.com" else "max_tokens"
        )
        self._client = sdk_client(openai, settings)

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
            if param in TOKEN_PARAMS and too_large:
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
            if param in TOKEN_PARAMS:
                other = TOKEN_PARAMS[1] if param == TOKEN_PARAMS[0] else TOKEN_PARAMS[0]
                original = next((k for k, v in changes.items() if v == param), param)
                if other not in changes and other not in changes.values():
                    changes[original] = other
                    return f"endpoint refused '{param}'; sent '{other}'"
                changes[original] = None
                changes.pop(other, None)
                changes[other] = None
                return (
                    f"endpoint refused both '{TOKEN_PARAMS[0]}' and '{TOKEN_PARAMS[1]}'; "
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
        host = self.host
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
                    reading = Reading()
                    body = await read_body(
                        raw, ctype, reading, on_text, deadline, endpoint=self.endpoint, settings=s
                    )
        except self._openai.BadRequestError as e:
            param = refused_parameter(e, params)
            if param:
                raise Refused(param, e) from e
            raise
        except self._openai.UnprocessableEntityError as e:  # pydantic servers: 422 per field
            param = refused_parameter(e, params)
            if param:
                raise Refused(param, e) from e
            raise
        if body is not None:  # a plain JSON body
            parse_plain(body, reading, endpoint=self.endpoint, max_chars=s.max_reply_chars)
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
            except Refused as r:
                notes.append(self._adapted(r, params))
                attempt -= 1  # an adaptation is not a retry
                continue
            except TooLong as t:
                too_long += 1
                if too_long > TOO_LONG_RETRIES:
                    raise t.error from None
                notes.append(f"{t.error}; asked again once (a repetition loop is an accident)")
                if on_retry:
                    on_retry("the reply ran past the size cap (a repetition loop?)", 0.0)
                attempt -= 1
                continue
            except (self._openai.APIError, Broken, TimeoutError) as e:
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

    def _adapted(self, refused: Refused, params: dict) -> str:
        """The note for the change made to a refused parameter; LlmError when nothing is left
        to change."""
        self._refusal_fields = fields_of(refused.original)
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

    async def _failure(self, e: Exception, attempt: int) -> Failure:
        """The retry a transient failure calls for; LlmError for a final one."""
        o = self._openai
        s = self.settings
        if isinstance(e, o.APIStatusError):
            return await self._status_failure(e, attempt)
        if isinstance(e, (o.APITimeoutError, TimeoutError)):
            return Failure(
                "timeout",
                f"no reply within {s.timeout_s:g} s" + (" of silence" if s.stream else ""),
                f"{self.endpoint} did not answer within {s.timeout_s:g} s"
                f"{' of silence' if s.stream else ''} ({attempt} attempts); raise "
                "ptxls.llm.timeoutSeconds (PTXLS_LLM_TIMEOUT) for a slow model, or check "
                "the server",
            )
        if isinstance(e, o.APIConnectionError):
            return Failure(
                "unreachable",
                f"cannot connect ({short(e)})",
                f"cannot reach {self.endpoint}: {short(e.__cause__ or e)}. Is the server "
                "running and the URL right (ptxls.llm.baseUrl / OPENAI_BASE_URL)?",
            )
        # another API error or a body that broke mid-way (a stream cut off)
        reason = str(e) if isinstance(e, Broken) else f"{type(e).__name__}: {short(e)}"
        return Failure("server", reason, f"{self.endpoint}: {reason} after {attempt} attempts")

    async def _status_failure(self, e, attempt: int) -> Failure:
        """An HTTP error status: 401/403/404/400, an exhausted quota and any other 4xx are
        final (LlmError); 429 and 5xx are retried."""
        from .endpoint_errors import AUTH_WORDS, QUOTA_WORDS

        o = self._openai
        status = getattr(e, "status_code", None)
        said = fields_of(e).message or short(e)
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
        return Failure(
            "rate_limit" if status == 429 else "server",
            reason,
            f"{self.endpoint} kept failing ({reason}: {api_error_text(e)}) after "
            f"{attempt} attempts",
            retry_after(e),
        )

    async def _wait_to_retry(
        self,
        failure: Failure,
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
