"""Commands in flight: cancelled by ``$/cancelRequest``, by a newer request for the same thing,
and all at ``shutdown``/``exit`` — the work *and* its processes.

pygls runs ``workspace/executeCommand`` as a generator whose inner step (our command handler) is
a task of its own; ``$/cancelRequest`` cancels only the outer future, answers -32800, and the
handler runs on (50 cancelled Show PTX with a hung nvcc left 50 nvcc processes alive). The
transport (``transport.py``) sets ``CURRENT_REQUEST`` while pygls starts a request's handler,
so the handler's task knows its request id; ``app.PtxlsServer.command`` registers that task
here, and the transport cancels it when the client cancels that id. Cancelling the task
reaches every ``await``: ``toolchain.process.run_killable`` then kills the tool's whole
process group, the GPU supervisor kills its worker.

A newer request with the same command and arguments (a second click on Show PTX of the same
kernel) replaces the older one: the older is cancelled and answers ``{"status":
"cancelled"}`` (it is not the client's cancellation, so it still gets an answer).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import weakref

CURRENT_REQUEST: contextvars.ContextVar = contextvars.ContextVar("ptxls_request", default=None)


def command_key(name: str, args: tuple) -> str:
    """Which earlier request a new one replaces: same command, same arguments."""
    try:
        text = json.dumps([name, *args], sort_keys=True, default=str)
    except (TypeError, ValueError, RecursionError):
        text = f"{name}:{id(args)}"  # unkeyable arguments: replaces nothing
    return text[:4096]


class InFlight:
    def __init__(self) -> None:
        self.by_id: dict = {}
        self.by_key: dict[str, asyncio.Task] = {}
        self.superseded: weakref.WeakSet = weakref.WeakSet()
        self.cancelled_early: set = set()

    def begin(self, name: str, args: tuple) -> tuple[asyncio.Task | None, str]:
        task = asyncio.current_task()
        key = command_key(name, args)
        older = self.by_key.get(key)
        if older is not None and older is not task and not older.done():
            self.superseded.add(older)
            older.cancel()
        if task is not None:
            self.by_key[key] = task
            request = CURRENT_REQUEST.get()
            if request is not None:
                self.by_id[request] = task
                if request in self.cancelled_early:  # cancelled before its task first ran
                    self.cancelled_early.discard(request)
                    task.cancel()
        return task, key

    def end(self, task: asyncio.Task | None, key: str) -> None:
        if self.by_key.get(key) is task:
            del self.by_key[key]
        for request, t in list(self.by_id.items()):
            if t is task:
                del self.by_id[request]

    def cancel_request(self, request) -> bool:
        """The client cancelled ``request``: stop its handler (and so its processes)."""
        task = self.by_id.pop(request, None)
        if task is None:
            # Its task may exist and not have run yet: begin() cancels it when it does.
            if len(self.cancelled_early) > 10_000:
                self.cancelled_early.clear()
            self.cancelled_early.add(request)
            return False
        if task.done():
            return False
        task.cancel()
        return True

    def cancel_all(self) -> int:
        tasks = {t for t in [*self.by_id.values(), *self.by_key.values()] if not t.done()}
        for t in tasks:
            t.cancel()
        self.by_id.clear()
        self.by_key.clear()
        return len(tasks)
