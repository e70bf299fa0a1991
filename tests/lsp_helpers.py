"""Helpers for end-to-end tests: the real server process driven by a real LSP client.

The ``client`` fixture that starts one is in tests/conftest.py (configured with
``@pytest.mark.lsp(...)``); these are what a test does with it."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import make_test_lsp_client

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
DATA = Path(__file__).resolve().parent / "data"
# examples/broken.ptx uses %r6 while `.reg .b32 %r<6>` declares %r0-%r5; FIXED declares %r<7>.
BROKEN = (EXAMPLES / "broken.ptx").read_text()
FIXED = BROKEN.replace(".reg .b32   %r<6>;", ".reg .b32   %r<7>;")
SERVER_COMMAND = [sys.executable, "-m", "ptxls.server", "serve"]


def recording_client() -> LanguageClient:
    """pytest-lsp's client that also keeps every publishDiagnostics in order (the default keeps
    only the latest per uri, which cannot show that nothing stale arrived after it)."""
    client = make_test_lsp_client()
    client.publishes = []  # list[PublishDiagnosticsParams]
    client.notifications = []  # (method, params) of custom notifications

    def on_publish(params: types.PublishDiagnosticsParams) -> None:
        client.diagnostics[params.uri] = params.diagnostics
        client.publishes.append(params)

    client.protocol.fm.features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = on_publish

    @client.feature("ptxls/status")
    def on_status(params) -> None:
        client.notifications.append(("ptxls/status", params))

    @client.feature("ptxls/fileStatus")
    def on_file_status(params) -> None:
        client.notifications.append(("ptxls/fileStatus", params))

    return client


def server_config(env: dict[str, str] | None = None) -> ClientServerConfig:
    return ClientServerConfig(
        server_command=SERVER_COMMAND, client_factory=recording_client, server_env=env
    )


# What VS Code says it reads in hovers and completion documentation (markdown first).
READS_MARKDOWN = [types.MarkupKind.Markdown, types.MarkupKind.PlainText]


def init_params(
    root: Path, options: dict | None = None, formats: list | None = None
) -> types.InitializeParams:
    formats = READS_MARKDOWN if formats is None else formats
    return types.InitializeParams(
        capabilities=types.ClientCapabilities(
            text_document=types.TextDocumentClientCapabilities(
                hover=types.HoverClientCapabilities(content_format=formats),
                completion=types.CompletionClientCapabilities(
                    completion_item=types.ClientCompletionItemOptions(documentation_format=formats)
                ),
            ),
            workspace=types.WorkspaceClientCapabilities(configuration=False),
            window=types.WindowClientCapabilities(
                work_done_progress=True,
                show_document=types.ShowDocumentClientCapabilities(support=True),
            ),
        ),
        root_uri=root.as_uri(),
        initialization_options={"ptxls": options or {}},
    )


async def wait_for_publish(
    client: LanguageClient, uri: str, predicate=lambda p: True, timeout: float = 30.0
):
    """The first publish for ``uri`` arriving from now on that satisfies ``predicate``.

    Only publishes received after the call count: a test sends its edit, then waits, and an
    answer for an earlier edit must not satisfy it. Polls the recorded list: pytest-lsp wakes
    notification waiters before the handler that records the publish has run."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    seen = len(client.publishes)
    while True:
        for p in client.publishes[seen:]:
            if p.uri == uri and predicate(p):
                return p
        seen = len(client.publishes)
        if loop.time() > deadline:
            raise AssertionError(
                f"no matching publishDiagnostics for {uri} within {timeout} s; got {client.publishes[-3:]}"
            )
        await asyncio.sleep(0.01)


def open_doc(
    client: LanguageClient, uri: str, text: str, language: str = "ptx", version: int = 1
) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id=language, version=version, text=text
            )
        )
    )


def replace_all(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


@pytest.fixture
def examples() -> Path:
    return EXAMPLES


# pytestmark of a module whose tests share one server (the `shared_client` fixture in
# conftest.py): its async tests run in the module's event loop, where that server's client lives.
# A test there that needs a server of its own uses `client` and FRESH_SERVER.
SHARED_SERVER = [
    pytest.mark.asyncio(loop_scope="module"),
    # the module's plain (sync) tests carry the mark too; pytest-asyncio warns about those
    pytest.mark.filterwarnings(
        "ignore:The test <Function .* is marked with '@pytest.mark.asyncio'"
    ),
]
FRESH_SERVER = pytest.mark.asyncio(loop_scope="function")
