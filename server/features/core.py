"""Lifecycle and the shared methods: initialize/settings, hover, code lens, code action."""

from __future__ import annotations

from lsprotocol import types

from ..app import PtxlsServer, call_provider


def register(server: PtxlsServer) -> None:
    @server.feature(types.INITIALIZE)
    def on_initialize(ls: PtxlsServer, params: types.InitializeParams) -> None:
        init = params.initialization_options
        if isinstance(init, dict):
            client = init.get("client")
            ls.client_opens_results = isinstance(client, dict) and bool(
                client.get("opensCommandResults")
            )
            # Trust is the editor's decision, sent by the client (VS Code: workspace.isTrusted;
            # other clients: their own configuration). Only an explicit true trusts.
            ls.workspace_trusted = init.get("trustedWorkspace") is True
            ls.client_applies_trust = isinstance(client, dict) and (
                client.get("appliesWorkspaceTrust") is True
            )
            user = init.get("ptxls", init)
            ls.user_settings = dict(user) if isinstance(user, dict) else {}
            ls.apply_settings(user)

    @server.feature(types.INITIALIZED)
    async def on_initialized(ls: PtxlsServer, params: types.InitializedParams) -> None:
        await ls.fetch_settings()
        for hook in ls.initialized_hooks:
            try:
                await call_provider(hook, ls)
            except Exception as e:
                ls.report_server_error(e, hook)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def on_config(ls: PtxlsServer, params: types.DidChangeConfigurationParams) -> None:
        raw = params.settings
        if isinstance(raw, dict) and "ptxls" in raw:
            ls.apply_settings(raw["ptxls"], from_workspace=True)
        else:
            await ls.fetch_settings()

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def on_hover(ls: PtxlsServer, params: types.HoverParams) -> types.Hover | None:
        """Every provider that has something to say here, joined: on a kernel's .entry line
        the GPU-test result and the ptxas -v resources both belong in the hover."""
        hovers: list[types.Hover] = []
        for provider in ls.hover_providers:
            try:
                hover = await call_provider(provider, ls, params)
            except Exception as e:  # one broken provider must not hide the others
                ls.report_server_error(e, provider)
                continue
            if hover is not None:
                hovers.append(hover)
        if len(hovers) <= 1:
            return hovers[0] if hovers else None
        parts = [
            h.contents.value if isinstance(h.contents, types.MarkupContent) else str(h.contents)
            for h in hovers
        ]
        return types.Hover(
            contents=types.MarkupContent(
                kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(parts)
            ),
            range=hovers[0].range,
        )

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    async def on_code_lens(ls: PtxlsServer, params: types.CodeLensParams) -> list[types.CodeLens]:
        lenses: list[types.CodeLens] = []
        for provider in ls.code_lens_providers:
            try:
                lenses.extend(await call_provider(provider, ls, params) or [])
            except Exception as e:
                ls.report_server_error(e, provider)
        return lenses

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[
                types.CodeActionKind.QuickFix,
                types.CodeActionKind.Refactor,
                types.CodeActionKind.Source,
            ],
            resolve_provider=False,
        ),
    )
    async def on_code_action(
        ls: PtxlsServer, params: types.CodeActionParams
    ) -> list[types.CodeAction]:
        actions: list[types.CodeAction] = []
        for provider in ls.code_action_providers:
            try:
                actions.extend(await call_provider(provider, ls, params) or [])
            except Exception as e:
                ls.report_server_error(e, provider)
        return actions
