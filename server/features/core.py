"""Lifecycle and the shared methods: initialize/settings, hover, code lens, code action.

Hover, code lens and code action are answered by every feature that appends a provider to the
server's lists (app.py); a provider that fails is logged and the others still answer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lsprotocol import types

from .. import convert
from ..app import PtxlsServer, call_provider

CODE_ACTION_OPTIONS = types.CodeActionOptions(
    code_action_kinds=[
        types.CodeActionKind.QuickFix,
        types.CodeActionKind.Refactor,
        types.CodeActionKind.Source,
    ],
    resolve_provider=False,
)


def on_initialize(ls: PtxlsServer, params: types.InitializeParams) -> None:
    init = params.initialization_options
    if not isinstance(init, dict):
        return
    client = init.get("client")
    ls.client_opens_results = isinstance(client, dict) and bool(client.get("opensCommandResults"))
    # the client runs ptxls.debugFirstWrong from a hover's command link (VS Code extension)
    ls.client_debug_links = isinstance(client, dict) and client.get("debugLinks") is True
    # Trust is the editor's decision, sent by the client (VS Code: workspace.isTrusted;
    # other clients: their own configuration). Only an explicit true trusts.
    ls.workspace_trusted = init.get("trustedWorkspace") is True
    ls.client_applies_trust = isinstance(client, dict) and (
        client.get("appliesWorkspaceTrust") is True
    )
    user = init.get("ptxls", init)
    ls.user_settings = dict(user) if isinstance(user, dict) else {}
    ls.apply_settings(user)


async def on_initialized(ls: PtxlsServer, params: types.InitializedParams) -> None:
    await ls.fetch_settings()
    for hook in ls.initialized_hooks:
        try:
            await call_provider(hook, ls)
        except Exception as e:
            ls.report_server_error(e, hook)


async def on_config(ls: PtxlsServer, params: types.DidChangeConfigurationParams) -> None:
    raw = params.settings
    if isinstance(raw, dict) and "ptxls" in raw:
        ls.apply_settings(raw["ptxls"], from_workspace=True)
    else:
        await ls.fetch_settings()


async def _answers(ls: PtxlsServer, providers: list[Callable[..., Any]], params) -> list:
    """Every provider's answer, in order; one broken provider must not hide the others."""
    answers = []
    for provider in providers:
        try:
            answers.append(await call_provider(provider, ls, params))
        except Exception as e:
            ls.report_server_error(e, provider)
    return answers


async def on_hover(ls: PtxlsServer, params: types.HoverParams) -> types.Hover | None:
    """Every provider that has something to say here, joined: on a kernel's .entry line
    the GPU-test result and the ptxas -v resources both belong in the hover."""
    answers = await _answers(ls, ls.hover_providers, params)
    hovers = [h for h in answers if h is not None]
    return convert.join_hovers(hovers, ls.client_reads_markdown("hover"))


async def on_code_lens(ls: PtxlsServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    return [
        lens
        for answer in await _answers(ls, ls.code_lens_providers, params)
        for lens in answer or []
    ]


async def on_code_action(ls: PtxlsServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    answers = await _answers(ls, ls.code_action_providers, params)
    return [action for answer in answers for action in answer or []]


def register(server: PtxlsServer) -> None:
    server.feature(types.INITIALIZE)(on_initialize)
    server.feature(types.INITIALIZED)(on_initialized)
    server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)(on_config)
    server.feature(types.TEXT_DOCUMENT_HOVER)(on_hover)
    server.feature(types.TEXT_DOCUMENT_CODE_LENS)(on_code_lens)
    server.feature(types.TEXT_DOCUMENT_CODE_ACTION, CODE_ACTION_OPTIONS)(on_code_action)
