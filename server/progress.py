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
