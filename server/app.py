"""The ptxls language server object: settings, the diagnostics store, feature hooks, logging.

Features live in ``server/features/`` (the pattern is described in features/__init__.py). pygls
accepts one handler per LSP method, so methods that several features answer (hover, code lens,
code action, completion) are registered once (features/core.py, features/ptx_navigation.py) and
ask the providers the features append to:

    server.hover_providers:       (server, params) -> Hover | None          (joined)
    server.code_lens_providers:   (server, params) -> list[CodeLens]        (concatenated)
    server.code_action_providers: (server, params) -> list[CodeAction]      (concatenated)
    server.completion_providers:  (server, text, in_function) -> list[convert.Completion]

Document lifecycle notifications (didOpen/didChange/didSave/didClose) are handled once in
``features/ptx_diagnostics.py``; other features hook in through ``server.did_open_hooks``,
``did_change_hooks``, ``did_save_hooks`` and ``did_close_hooks`` — plain callables
``(server, params) -> None`` that must return at once (start a task for slow work).

A provider may be a coroutine function. Providers must be cheap: they read caches and state,
never start GPU, compiler or LLM work (that belongs in commands).

A feature's state is its own dataclass, kept by the server: ``server.state(GpuTestState)``
(made on first use, one per server).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

from ptxls.toolchain.discovery import set_probe_timeout

from .inflight import InFlight
from .protocol import PtxlsProtocol
from .settings import Settings, settings_from_dict
from .store import DiagnosticStore
from .uris import find_document

log = logging.getLogger("ptxls")

SERVER_NAME = "ptxls"
# Settings that choose a program to run or the host that receives the API key: a cloned
# repository's .vscode/settings.json (or any workspace-level configuration) must not set them.
RESTRICTED_SETTINGS = (
    ("ptxasPath",), ("nvccPath",), ("sanitizer", "path"), ("llm", "baseUrl"),
)  # fmt: skip
SERVER_VERSION = "0.1.0"

State = TypeVar("State")


class PtxlsServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            SERVER_NAME,
            SERVER_VERSION,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=PtxlsProtocol,
        )
        self.settings = Settings()
        self.store = DiagnosticStore()
        self.hover_providers: list[Callable[..., Any]] = []
        self.code_lens_providers: list[Callable[..., Any]] = []
        self.code_action_providers: list[Callable[..., Any]] = []
        self.completion_providers: list[Callable[..., list]] = []
        self.settings_listeners: list[Callable[[Settings], None]] = []
        self.initialized_hooks: list[Callable[..., Any]] = []  # (server) -> None | awaitable
        self.did_open_hooks: list[Callable[..., None]] = []
        self.did_change_hooks: list[Callable[..., None]] = []
        self.did_save_hooks: list[Callable[..., None]] = []
        self.did_close_hooks: list[Callable[..., None]] = []
        # The client opens files that commands return ({uri}) and shows their summaries; then
        # the server does not also (initializationOptions.client.opensCommandResults).
        self.client_opens_results = False
        self.client_debug_links = False  # hovers may hold command links to the debugger
        self._told: set[str] = set()
        self._error_times: dict[str, float] = {}
        self.exit_code = 0
        # Whether the person trusts the workspace (initializationOptions.trustedWorkspace: the
        # editor's own trust decision, e.g. VS Code's workspace trust). Untrusted: a ref: the
        # restricted evaluator refuses is not run, and tool paths / the LLM endpoint are taken
        # only from the client's user-level configuration (settings.py).
        self.workspace_trusted = False
        self.client_applies_trust = False  # the client filters workspace settings by trust
        self.user_settings: dict = {}  # the ptxls section of initializationOptions
        self._feature_states: dict[type, object] = {}
        self.inflight = InFlight()  # commands running now (cancel, replace, stop at shutdown)
        # how many messages were read and wait to be dispatched (the transport sets it)
        self.messages_waiting: Callable[[], int] = lambda: 0

    def state(self, kind: type[State]) -> State:
        """The feature state of type ``kind`` (a dataclass the feature module declares), made
        on first use; one per server, so a test's or a second server's state is its own."""
        found = self._feature_states.get(kind)
        if found is None:
            found = self._feature_states[kind] = kind()
        return found  # type: ignore[return-value]

    def start_io(self, stdin=None, stdout=None) -> None:  # pygls' signature
        """Serve over stdio with ptxls's message loop instead of pygls' (framing resync, size
        limit, an answer to every request, LSP lifecycle: see transport.py). The process exit
        code is left in ``exit_code``."""
        from .transport import serve_stdio

        self.exit_code = serve_stdio(self, stdin, stdout)

    def client_reads_markdown(self, where: str) -> bool:
        """Whether the client lists markdown among the formats it reads for ``where`` ("hover":
        hover.contentFormat, "completion": completionItem.documentationFormat). A client that
        lists none is sent markdown, as every editor we know reads it."""
        doc = self.client_capabilities.text_document
        formats = None
        if where == "hover" and doc and doc.hover:
            formats = doc.hover.content_format
        elif where == "completion" and doc and doc.completion and doc.completion.completion_item:
            formats = doc.completion.completion_item.documentation_format
        return formats is None or types.MarkupKind.Markdown in formats

    # -- talking to the person --------------------------------------------------------------

    def log_message(self, message: str, kind: types.MessageType = types.MessageType.Log) -> None:
        # The client shows window/logMessage in its log (VS Code: the ptxls output channel), and
        # it also shows the server's stderr there: on stderr only with -v, or each line is twice.
        log.debug("%s", message)
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

    def show_message(self, message: str, kind: types.MessageType = types.MessageType.Warning):
        """A popup every time (tell_once for what may repeat per keystroke)."""
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def show_document(self, uri: str) -> None:
        """Ask the client to open ``uri``, when it says it can; never wait for its answer in a
        command (a client busy waiting for the command's result would deadlock us), and a
        client without showDocument still gets the uri in the command's result."""
        window = self.client_capabilities.window
        support = window.show_document if window else None
        if not (support and support.support):
            return

        async def show() -> None:
            try:
                await asyncio.wait_for(
                    self.window_show_document_async(
                        types.ShowDocumentParams(uri=uri, take_focus=True)
                    ),
                    30,
                )
            except Exception as e:  # opening is a courtesy
                self.log_message(f"showDocument {uri} failed: {e}")

        asyncio.get_running_loop().create_task(show())

    def command(self, command_name: str):
        """pygls' command decorator, with every command's end made visible: a client that does
        not present command results itself (initializationOptions.client.opensCommandResults:
        VS Code's extension does, Neovim does not) is asked to open the file the command
        produced (window/showDocument) and shown its summary (window/showMessage), whichever
        way the command was started (code action, lens, a client's own command). Returns the
        handler unchanged, so it can still be called directly."""
        register = super().command(command_name)

        def decorate(handler):
            async def presented(ls: PtxlsServer, *args):  # named ls: pygls passes the server
                # Cancellable by $/cancelRequest, replaced by the same request again, stopped at
                # shutdown (inflight.py); cancelling reaches the command's processes.
                task, key = ls.inflight.begin(command_name, args)
                try:
                    result = handler(ls, *args)
                    if inspect.isawaitable(result):
                        result = await result
                except asyncio.CancelledError:
                    if task is None or task not in ls.inflight.superseded:
                        raise
                    result = {"ok": False, "status": "cancelled",
                              "summary": f"{command_name}: replaced by a newer request"}  # fmt: skip
                finally:
                    ls.inflight.end(task, key)
                ls.present_result(result)
                return result

            presented.__name__ = getattr(handler, "__name__", command_name)
            register(presented)
            return handler

        return decorate

    def present_result(self, result: object) -> None:
        """A command's ``{ok, summary, uri}`` shown to a client that does not show results
        itself: the file opened, the summary as a message (a warning when it failed). A
        cancelled command says nothing: the person cancelled it."""
        if self.client_opens_results or not isinstance(result, dict):
            return
        if result.get("status") == "cancelled":
            return
        ok = result.get("ok") is not False
        uri = result.get("uri")
        if ok and isinstance(uri, str) and uri.startswith("file:"):
            self.show_document(uri)
        summary = result.get("summary")
        if isinstance(summary, str) and summary.strip():
            kind = types.MessageType.Info if ok else types.MessageType.Warning
            with contextlib.suppress(Exception):  # no client attached (unit use)
                self.show_message(f"ptxls: {summary.strip()}"[:1000], kind)

    async def apply_edit(self, edit: types.WorkspaceEdit, label: str):
        """workspace/applyEdit; None when the client cannot apply edits."""
        caps = self.client_capabilities.workspace
        if not (caps and caps.apply_edit):
            return None
        return await self.workspace_apply_edit_async(
            types.ApplyWorkspaceEditParams(edit=edit, label=label)
        )

    def refresh_code_lenses(self) -> None:
        """Ask the client to ask again for code lenses (their titles changed)."""
        caps = self.client_capabilities.workspace
        if caps and caps.code_lens and caps.code_lens.refresh_support:
            try:
                self.workspace_code_lens_refresh(None)
            except Exception as e:  # a refresh is a courtesy
                log.info("code lens refresh failed: %s", e)

    def report_server_error(self, error: Exception, source) -> None:
        """Log handler exceptions (with the traceback) instead of pygls' popup per failure,
        at most once a second per kind of error so a bug on every keystroke stays readable."""
        key = f"{type(error).__name__}:{error}"
        now = time.monotonic()
        if now - self._error_times.get(key, 0.0) < 1.0:
            return
        self._error_times[key] = now
        if isinstance(error, JsonRpcException):  # the client's message was wrong: one line
            log.error("%s: %s", getattr(source, "__name__", source), error)
        else:
            log.exception(
                "internal error in %s", getattr(source, "__name__", source), exc_info=error
            )
        self.log_message(
            f"ptxls internal error ({getattr(source, '__name__', source)}): "
            f"{type(error).__name__}: {error}",
            types.MessageType.Error,
        )

    def stop_all_work(self) -> None:
        """``shutdown``/``exit``: cancel every command and kill every tool and GPU worker now,
        synchronously, so that the process can end within a second (the loop's teardown
        waits for worker threads, and a thread draining a hung tool would hold it)."""
        from ptxls.gputest.supervisor import kill_workers_now
        from ptxls.toolchain.process import kill_all

        self.inflight.cancel_all()
        kill_all()
        kill_workers_now()

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

    def apply_settings(self, raw: Any, *, from_workspace: bool = False) -> None:
        """``from_workspace``: the values came from workspace/configuration or
        didChangeConfiguration, where a cloned repository's own settings file may have put
        them; the settings that choose a program to run or a host to send the API key to are
        then honoured only in a trusted workspace (see restrict_untrusted)."""
        if from_workspace and isinstance(raw, dict):
            raw = self.restrict_untrusted(raw)
        settings, problems = settings_from_dict(raw if isinstance(raw, dict) else None)
        self.settings = settings
        # A tool that hangs on --version is killed after this (probes run in worker threads).
        set_probe_timeout(settings.ptxas_timeout_seconds)
        for p in problems:
            self.tell_once("setting:" + p, p)
        for listener in self.settings_listeners:
            listener(settings)

    def restrict_untrusted(self, raw: dict) -> dict:
        """In a workspace the person has not trusted, ptxasPath, nvccPath and llm.baseUrl keep
        their user-level values (initializationOptions: the client's own configuration), and
        a different value from the workspace is ignored and said. A client that applies trust
        to settings itself (VS Code: restrictedConfigurations) says so at initialize."""
        if self.workspace_trusted or self.client_applies_trust:
            return raw
        raw = dict(raw)
        for path in RESTRICTED_SETTINGS:
            *parents, key = path
            holder: dict | None = raw  # the section at ``parents`` (None: not an object there)
            user: dict | None = self.user_settings
            for part in parents:
                holder = holder.get(part) if isinstance(holder, dict) else None
                user = user.get(part) if isinstance(user, dict) else None
            if not isinstance(holder, dict) or key not in holder:
                continue
            user_value = user.get(key) if isinstance(user, dict) else None
            if holder[key] == user_value or holder[key] in (None, ""):
                continue
            # copy the nested dicts we change, so the client's object is not altered
            target = raw
            for part in parents:
                target[part] = dict(target[part])
                target = target[part]
            if user_value is None:
                del target[key]
            else:
                target[key] = user_value
            name = "ptxls." + ".".join(path)
            self.tell_once(
                "untrusted:" + name,
                f"ptxls: ignored {name} from the workspace settings: the workspace is not "
                "trusted, and this setting chooses a program to run or where the API key goes. "
                "Trust the workspace, or set it in your user settings.",
            )
        return raw

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
            self.apply_settings(result[0], from_workspace=True)


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


def run_server(verbose: bool = False) -> int:
    """Serve over stdio until exit; returns the process exit code (1 after 'exit' without
    'shutdown', as the LSP lifecycle says)."""
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        stream=sys.stderr,  # stdout carries the protocol
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if not verbose:
        logging.getLogger("pygls").setLevel(logging.WARNING)  # it logs every message at INFO
    # A killed server leaves nothing of its own running: the watcher ends every tool and
    # worker still registered when our end of its pipe closes (toolchain/reaper.py).
    from ptxls.toolchain import reaper

    from .memory import tune_allocator

    reaper.enable()
    tune_allocator()  # a long session of large texts keeps no freed memory (memory.py)
    server = create_server()
    server.start_io()
    _exit_now(server.exit_code)
    return server.exit_code  # not reached


def _exit_now(code: int) -> None:
    """End the process as soon as the session is over: ``exit`` within a second. The cleanup
    that matters (tools and workers killed, scratch folders removed) is in atexit handlers, run
    here; the interpreter's own teardown of pygls, numpy and cuda-python afterwards took 0.8-1.3
    s on a busy machine and has nothing to clean that the kernel does not."""
    import atexit
    import os

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    logging.shutdown()
    os._exit(code)
