"""One background job per document: a new edit cancels the old job (and kills its process)."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger("ptxls")


class DocumentJobs:
    def __init__(self, name: str) -> None:
        self.name = name
        self._tasks: dict[str, asyncio.Task] = {}

    def start(self, uri: str, coro: Coroutine[Any, Any, Any]) -> asyncio.Task:
        self.cancel(uri)
        task = asyncio.get_running_loop().create_task(coro, name=f"{self.name}:{uri}")
        self._tasks[uri] = task
        task.add_done_callback(functools.partial(self._done, uri))
        return task

    def _done(self, uri: str, task: asyncio.Task) -> None:
        if self._tasks.get(uri) is task:
            del self._tasks[uri]
        if not task.cancelled() and task.exception() is not None:
            log.error("%s job for %s failed", self.name, uri, exc_info=task.exception())

    def cancel(self, uri: str) -> None:
        task = self._tasks.pop(uri, None)
        if task is not None and not task.done():
            task.cancel()
