"""The ptxls language server object: settings, the diagnostics store, feature hooks, logging.

Features live in ``server/features/``; each module has ``register(server)``. pygls accepts one
handler per LSP method, so methods that several features answer (hover, code lens, code action)
are registered once here and ask the providers the features append to:

    server.hover_providers:       (server, params) -> Hover | None          (first non-None wins)
    server.code_lens_providers:   (server, params) -> list[CodeLens]        (concatenated)
    server.code_action_providers: (server, params) -> list[CodeAction]      (concatenated)

Document lifecycle notifications (didOpen/didChange/didSave/didClose) are handled once in
``features/ptx_diagnostics.py``; other features hook in through ``server.did_open_hooks``,
``did_change_hooks``, ``did_save_hooks`` and ``did_close_hooks`` — plain callables
``(server, params) -> None`` that must return at once (start a task for slow work).

A provider may be a coroutine function. Providers must be cheap: they read caches and state,
never start GPU, compiler or LLM work (that belongs in commands).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import Callable
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from .settings import Settings, settings_from_dict
from .store import DiagnosticStore
from .uris import find_document

log = logging.getLogger("ptxls")

SERVER_NAME = "ptxls"
SERVER_VERSION = "0.1.0"


class PtxlsServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            SERVER_NAME,
            SERVER_VERSION,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        )
        self.settings = Settings()
        self.store = DiagnosticStore()
        self.hover_providers: list[Callable[..., Any]] = []
        self.code_lens_providers: list[Callable[..., Any]] = []
        self.code_action_providers: list[Callable[..., Any]] = []
        self.settings_listeners: list[Callable[[Settings], None]] = []
        self.initialized_hooks: list[Callable[..., Any]] = []  # (server) -> None | awaitable
        self.did_open_hooks: list[Callable[..., None]] = []
        self.did_change_hooks: list[Callable[..., None]] = []
        self.did_save_hooks: list[Callable[..., None]] = []
        self.did_close_hooks: list[Callable[..., None]] = []
        # The client opens files that commands return ({uri}); then the server does not also
        # ask it to with window/showDocument (initializationOptions.client.opensCommandResults).
        self.client_opens_results = False
        self._told: set[str] = set()
        self._error_times: dict[str, float] = {}
        self.exit_code = 0
        # Whether the person trusts the workspace (initializationOptions.trustedWorkspace: the
        # editor's own trust decision, e.g. VS Code's workspace trust). Untrusted: a ref: the
        # restricted evaluator refuses is not run, and tool paths / the LLM endpoint are taken
        # only from the client's user-level configuration (settings.py).
        self.workspace_trusted = False

    def start_io(self, stdin=None, stdout=None) -> None:  # noqa: ANN001 - pygls' signature
        """Serve over stdio with ptxls's message loop instead of pygls' (framing resync, size
        limit, an answer to every request, LSP lifecycle: see transport.py). The process exit
        code is left in ``exit_code``."""
        from .transport import serve_stdio

        self.exit_code = serve_stdio(self, stdin, stdout)

    # -- talking to the person --------------------------------------------------------------

    def log_message(self, message: str, kind: types.MessageType = types.MessageType.Log) -> None:
        log.info("%s", message)
        # no client attached (unit use): logging must never fail a feature
        with contextlib.suppress(Exception):
            self.window_log_message(types.LogMessageParams(type=kind, message=message))

    def tell_once(
        self, key: str, message: str, kind: types.MessageType = types.MessageType.Warning
    ) -> None:
        """A popup the person sees once per server run, not once per keystroke."""
        self.log_message(message, kind)
        if key in self._told:
            return
        self._told.add(key)
        with contextlib.suppress(Exception):
            self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def report_server_error(self, error: Exception, source) -> None:  # noqa: ANN001
        """Log handler exceptions (with the traceback) instead of pygls' popup per failure,
        at most once a second per kind of error so a bug on every keystroke stays readable."""
        key = f"{type(error).__name__}:{error}"
        now = time.monotonic()
        if now - self._error_times.get(key, 0.0) < 1.0:
            return
        self._error_times[key] = now
        log.exception("internal error in %s", getattr(source, "__name__", source), exc_info=error)
        self.log_message(
            f"ptxls internal error ({getattr(source, '__name__', source)}): "
            f"{type(error).__name__}: {error}",
            types.MessageType.Error,
        )

    # -- documents -----------------------------------------------------------------------------

    def open_document(self, uri: str):
        """The editor's buffer, or None when the editor has not opened it (never a disk read).
        Percent-encoded, drive-letter and localhost spellings all find it (see uris.py)."""
        return find_document(self.workspace.text_documents, uri)

    def publish(self, uri: str, version: int | None) -> None:
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=uri, version=version, diagnostics=self.store.all(uri)
            )
        )

    # -- settings --------------------------------------------------------------------------

    def apply_settings(self, raw: Any) -> None:
        settings, problems = settings_from_dict(raw if isinstance(raw, dict) else None)
        self.settings = settings
        for p in problems:
            self.tell_once("setting:" + p, p)
        for listener in self.settings_listeners:
            listener(settings)

    async def fetch_settings(self) -> None:
        caps = self.client_capabilities.workspace
        if not (caps and caps.configuration):
            return
        try:
            result = await asyncio.wait_for(
                self.workspace_configuration_async(
                    types.ConfigurationParams(items=[types.ConfigurationItem(section="ptxls")])
                ),
                5,
            )
        except Exception as e:
            self.log_message(f"could not read settings from the client: {e}")
            return
        if result and isinstance(result[0], dict):
            self.apply_settings(result[0])


def short_name(text: str, limit: int = 120) -> str:
    """A name or URI from the client or a file, cut for a message or a progress title (a
    kernel name can be megabytes long)."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def call_provider(provider: Callable[..., Any], *args: Any) -> Any:
    value = provider(*args)
    if inspect.isawaitable(value):
        value = await value
    return value


def create_server() -> PtxlsServer:
    server = PtxlsServer()
    from .features import register_all

    register_all(server)
    return server
