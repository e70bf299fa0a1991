"""Cancellable ``$/progress`` for a long command (GPU test, lowering); a no-op when the client
cannot show progress. Cancelling it in the editor sets ``cancel``, which the work polls."""

from __future__ import annotations

import asyncio
import logging
import uuid

from lsprotocol import types

log = logging.getLogger("ptxls")


class CommandProgress:
    def __init__(self, ls, title: str):  # a PtxlsServer
        self.ls, self.title, self.token = ls, title, str(uuid.uuid4())
        self.enabled = False
        self.cancel = asyncio.Event()

    async def begin(self) -> None:
        caps = self.ls.client_capabilities.window
        if not (caps and caps.work_done_progress):
            return
        try:
            await self.ls.work_done_progress.create_async(self.token)
        except Exception as e:  # progress is a courtesy; the work goes on
            log.info("client refused a progress token: %s", e)
            return
        self.enabled = True
        self.ls.work_done_progress.begin(
            self.token,
            types.WorkDoneProgressBegin(title=self.title, cancellable=True, message="starting"),
        )
        future = self.ls.work_done_progress.tokens.get(self.token)
        if future is not None:
            future.add_done_callback(lambda f: self.cancel.set() if f.cancelled() else None)

    def report(self, message: str) -> None:
        log.info("%s: %s", self.title, message)
        if self.enabled:
            self.ls.work_done_progress.report(
                self.token, types.WorkDoneProgressReport(message=message)
            )

    def end(self, message: str) -> None:
        if self.enabled:
            self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))


class Stopped(Exception):
    """A tracked command ended without a result: ``status`` is "cancelled" (the person
    cancelled it) or "error" (the work raised; ``summary`` names the exception)."""

    def __init__(self, status: str, summary: str):
        super().__init__(summary)
        self.status, self.summary = status, summary


async def run_tracked(ls, progress: CommandProgress, work, running: dict, key, owner):
    """Run the coroutine ``work`` as a task the person can cancel from the progress
    notification, listed in ``running[key]`` while it runs (code lenses say "running").
    Returns its result; raises ``Stopped`` when it was cancelled or failed, after ending the
    progress. A bug in the work is logged against ``owner`` and never takes the server down."""
    task = asyncio.get_running_loop().create_task(work)
    running[key] = task
    ls.refresh_code_lenses()
    try:
        return await _unless_cancelled(task, progress)
    except asyncio.CancelledError:
        # the person cancelled (the progress' button) or the client cancelled the request
        # ($/cancelRequest cancels this coroutine): the work stops either way
        task.cancel()
        progress.end("cancelled")
        raise Stopped("cancelled", "cancelled") from None
    except Exception as e:
        ls.report_server_error(e, owner)
        progress.end("failed")
        raise Stopped("error", f"{type(e).__name__}: {e}") from e
    finally:
        if running.get(key) is task:
            del running[key]


async def _unless_cancelled(task: asyncio.Task, progress: CommandProgress):
    """The task's result; CancelledError (the task cancelled) when the person cancels."""
    cancel_wait = asyncio.ensure_future(progress.cancel.wait())
    try:
        done, _ = await asyncio.wait({task, cancel_wait}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        cancel_wait.cancel()
    if task not in done:
        task.cancel()
        raise asyncio.CancelledError
    return task.result()
