"""pygls's LanguageServerProtocol with one leak closed: a handled notification is forgotten.

pygls 2.x runs a notification whose handler is a generator, a coroutine or a thread function
(its own didOpen/didChange/didSave/didClose are generators that chain to ours) under a future
it files in ``_request_futures`` under a fresh uuid, and only a *request's* completion removes
its entry (``_send_handler_result``); a notification's (``_check_handler_result``) does not. So
every didChange, didOpen and didClose stayed in that dict for the server's life: 3,050 futures
(each with a Condition, an RLock and a deque) after 30 s of the soak (tracemalloc), one per
document notification, some 40,000 in its five minutes; and pygls's ``shutdown`` walks them all.
Here the entry goes as the notification's handler ends.

And a didChange for a document that is not open (a client's mistake) is said in one line and
dropped: pygls's own handler raised KeyError on it, which read as an internal error of ours.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

log = logging.getLogger("ptxls.transport")


class PtxlsProtocol(LanguageServerProtocol):
    def _execute_handler(
        self,
        msg_id: Any,
        handler: Any,
        callback: Any,
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> None:
        if callback != self._check_handler_result:  # a request: pygls removes it when answered
            super()._execute_handler(msg_id, handler, callback, args, kwargs)
            return

        def forget(future: Any) -> None:
            if self._request_futures.get(msg_id) is future:
                del self._request_futures[msg_id]
            callback(future)

        super()._execute_handler(msg_id, handler, forget, args, kwargs)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(
        self, params: types.DidChangeTextDocumentParams
    ) -> Iterator[Any]:
        uri = params.text_document.uri
        if unquote(uri) not in self.workspace.text_documents:  # pygls's key for a document
            log.warning("didChange of a document that is not open: ignored (%.200s)", uri)
            return
        yield from super().lsp_text_document__did_change(params)
