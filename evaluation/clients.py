"""The model side of an eval run: one shared client for every sample, with at most ``limit``
requests in flight and a run-wide pause when the endpoint says to slow down; and the replay
client, which answers from a recorded transcript instead of a model.

The LLM client (lowering/llm_client.py) already retries a request on 429/5xx and dropped
streams, waiting what Retry-After says. What one lowering cannot know is that fifty others are
about to hit the same limit: ``SharedClient`` holds every new request until the latest
Retry-After (or backoff) any of them was told has passed.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Callable

from ptxls.lowering.llm_client import ChatReply, LlmError


class SharedClient:
    def __init__(self, inner, limit: int):
        self.inner = inner
        self.limit = max(1, limit)
        self._slots = asyncio.Semaphore(self.limit)
        self._not_before = 0.0  # time.monotonic() before which no new request starts
        self.retries = 0
        self.waited_s = 0.0

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
        def retried(reason: str, wait: float) -> None:
            self.retries += 1
            self._not_before = max(self._not_before, time.monotonic() + wait)
            if on_retry:
                on_retry(reason, wait)

        async with self._slots:
            pause = self._not_before - time.monotonic()
            if pause > 0:
                self.waited_s += pause
                await asyncio.sleep(pause)
            return await self.inner.chat(messages, seed=seed, temperature=temperature,
                                         on_text=on_text, on_retry=retried, deadline=deadline)  # fmt: skip

    async def aclose(self) -> None:
        await self.inner.aclose()


class ReplayClient:
    """Answers each candidate's requests with that candidate's recorded replies, in order (a
    recorded endpoint failure is raised again). Candidates are told apart by their seed (the
    loop gives candidate i the seed ``seed + i - 1``), else by the order of the requests."""

    def __init__(self, records: list[dict], base_seed: int | None):
        self.base_seed = base_seed
        self.queues: dict[int, list[dict]] = defaultdict(list)
        for r in records:
            if r.get("kind") in ("reply", "llm_error") and isinstance(r.get("candidate"), int):
                self.queues[r["candidate"]].append(r)
        self._order: list[int] = sorted(self.queues)
        self.requests = 0

    def _candidate(self, seed: int | None) -> int:
        if seed is not None and self.base_seed is not None:
            return seed - self.base_seed + 1
        return next((c for c in self._order if self.queues[c]), 1)

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
        self.requests += 1
        queue = self.queues.get(self._candidate(seed))
        if not queue:
            raise LlmError("bad_request", "replay: the transcript holds no further reply for "
                           "this request (today's checks asked for a round the run never had)")  # fmt: skip
        r = queue.pop(0)
        if r["kind"] == "llm_error":
            raise LlmError(r.get("error_kind") or "server", r.get("message") or "recorded error")
        return ChatReply(
            text=r.get("text") or "",
            model=r.get("model") or "replay",
            finish_reason=r.get("finish_reason"),
            attempts=int(r.get("attempts") or 1),
            seconds=0.0,
            usage=r.get("usage"),
            reasoning=r.get("reasoning") or "",
        )

    async def aclose(self) -> None:
        return None
