"""Chat completions against any OpenAI-compatible server (OpenAI, vLLM, llama.cpp, Ollama).

The openai SDK is imported when a client is made, not when this module is, so the GPU-side code
and the nvcc path work where openai is not installed. The SDK's own retries are off: this
module retries 429 / 5xx / timeouts / connection errors itself, with backoff (Retry-After
wins), so each wait can be reported as progress and recorded in the transcript. Everything that
ends a request becomes an ``LlmError`` whose message says what to do; the key never appears in
one.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from .settings import LlmSettings

log = logging.getLogger("ptxls.lowering.llm")

MAX_RETRY_AFTER_S = 60.0


class LlmError(Exception):
    """A request that did not produce a reply. ``kind``: config, auth, model, unreachable,
    timeout, rate_limit, server, bad_request."""

    def __init__(self, kind: str, message: str, *, status: int | None = None):
        super().__init__(message)
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


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


class LlmClient:
    def __init__(self, settings: LlmSettings):
        if not settings.ready:
            raise LlmError("config", settings.not_ready_message())
        import openai  # lazy: see module docstring

        self._openai = openai
        self.settings = settings
        self.endpoint = settings.base_url or "https://api.openai.com/v1"
        self._client = openai.AsyncOpenAI(
            # local servers take any key; the SDK insists on one
            api_key=settings.api_key or "no-key",
            base_url=settings.base_url,
            timeout=settings.timeout_s,
            max_retries=0,
        )
        self._send_seed = settings.seed is not None

    async def aclose(self) -> None:
        await self._client.close()

    async def _once(self, messages: list[dict], seed: int | None, on_text) -> ChatReply:
        s = self.settings
        kwargs = dict(
            model=s.model,
            messages=messages,
            temperature=s.temperature,
            max_tokens=s.max_tokens,
        )
        if self._send_seed and seed is not None:
            kwargs["seed"] = seed
        started = time.monotonic()
        async with asyncio.timeout(s.timeout_s):
            if not s.stream:
                resp = await self._client.chat.completions.create(**kwargs)
                choice = resp.choices[0] if resp.choices else None
                text = (choice.message.content or "") if choice else ""
                usage = resp.usage.model_dump() if getattr(resp, "usage", None) else None
                return ChatReply(
                    text,
                    resp.model or s.model,
                    choice.finish_reason if choice else None,
                    1,
                    time.monotonic() - started,
                    usage,
                )
            stream = await self._client.chat.completions.create(stream=True, **kwargs)
            parts: list[str] = []
            finish, model, usage = None, s.model, None
            async for chunk in stream:
                model = getattr(chunk, "model", None) or model
                if getattr(chunk, "usage", None):
                    usage = chunk.usage.model_dump()
                for choice in chunk.choices or []:
                    delta = getattr(choice.delta, "content", None) if choice.delta else None
                    if delta:
                        parts.append(delta)
                        if on_text:
                            on_text(sum(map(len, parts)))
                    finish = choice.finish_reason or finish
            return ChatReply(
                "".join(parts), model, finish, 1, time.monotonic() - started, usage, True
            )

    async def chat(
        self,
        messages: list[dict],
        *,
        seed: int | None = None,
        on_text: Callable[[int], None] | None = None,
        on_retry: Callable[[str, float], None] | None = None,
    ) -> ChatReply:
        """One reply, retried on transient failures. ``on_text(chars)`` sees streaming
        progress; ``on_retry(reason, wait_s)`` each retry. Raises LlmError."""
        o = self._openai
        s = self.settings
        attempt = 0
        while True:
            attempt += 1
            try:
                reply = await self._once(messages, seed, on_text)
                reply.attempts = attempt
                return reply
            except asyncio.CancelledError:
                raise
            except o.AuthenticationError as e:
                raise LlmError(
                    "auth",
                    f"{self.endpoint} refused the API key (HTTP 401). Check OPENAI_API_KEY in "
                    "the environment the server runs in.",
                    status=401,
                ) from e
            except o.PermissionDeniedError as e:
                raise LlmError(
                    "auth", f"{self.endpoint} denied access (HTTP 403): {_short(e)}", status=403
                ) from e
            except o.NotFoundError as e:
                raise LlmError("model", await self._model_message(e), status=404) from e
            except o.BadRequestError as e:
                text = str(e).lower()
                if "seed" in text and self._send_seed:
                    # some servers reject the seed parameter: drop it once, quietly
                    log.info("endpoint rejected 'seed'; retrying without it")
                    self._send_seed = False
                    attempt -= 1
                    continue
                if "model" in text and ("not found" in text or "does not exist" in text):
                    raise LlmError("model", await self._model_message(e), status=400) from e
                raise LlmError(
                    "bad_request",
                    f"{self.endpoint} rejected the request (HTTP 400): {_short(e)}",
                    status=400,
                ) from e
            except (o.RateLimitError, o.InternalServerError, o.APIStatusError) as e:
                status = getattr(e, "status_code", None)
                if isinstance(e, o.RateLimitError) and "insufficient_quota" in str(e):
                    raise LlmError(
                        "rate_limit",
                        f"{self.endpoint}: quota exhausted (HTTP 429): {_short(e)}",
                        status=429,
                    ) from e
                if status is not None and status < 500 and status != 429:
                    raise LlmError(
                        "bad_request",
                        f"{self.endpoint} answered HTTP {status}: {_short(e)}",
                        status=status,
                    ) from e
                kind = "rate_limit" if status == 429 else "server"
                reason = f"HTTP {status}"
                final = (
                    f"{self.endpoint} kept failing ({reason}: {_short(e)}) after {attempt} attempts"
                )
                wait = _retry_after(e)
            except (o.APITimeoutError, TimeoutError) as e:
                kind, reason = "timeout", f"no reply within {s.timeout_s:g} s"
                final = f"{self.endpoint} did not answer within {s.timeout_s:g} s ({attempt} attempts); raise ptxls.llm.timeout or check the server"
                wait = None
                del e
            except o.APIConnectionError as e:
                kind, reason = "unreachable", f"cannot connect ({_short(e)})"
                final = f"cannot reach {self.endpoint}: {_short(e.__cause__ or e)}. Is the server running and the URL right (ptxls.llm.baseUrl / OPENAI_BASE_URL)?"
                wait = None
            except o.APIError as e:  # e.g. a stream that broke mid-way
                kind, reason = "server", f"{type(e).__name__}: {_short(e)}"
                final = f"{self.endpoint}: {reason} after {attempt} attempts"
                wait = None
            if attempt > s.retries:
                raise LlmError(kind, final)
            delay = wait if wait is not None else s.retry_backoff_s * (2 ** (attempt - 1))
            log.info(
                "LLM request failed (%s); retry %d/%d in %.2f s", reason, attempt, s.retries, delay
            )
            if on_retry:
                on_retry(reason, delay)
            await asyncio.sleep(delay)

    async def _model_message(self, exc) -> str:
        model = self.settings.model
        msg = f"model '{model}' is not served by {self.endpoint} ({_short(exc)})."
        try:
            async with asyncio.timeout(min(self.settings.timeout_s, 10)):
                page = await self._client.models.list()
                names = sorted(m.id for m in page.data)[:20]
            if names:
                msg += f" Available: {', '.join(names)}."
        except Exception:  # noqa: BLE001 - listing models is a courtesy; its failure changes nothing
            pass
        return msg + " Set PTXLS_MODEL or the setting ptxls.llm.model."
