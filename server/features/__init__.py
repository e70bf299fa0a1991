"""The server's features, one module each, registered in FEATURES order.

The pattern every feature module follows (copy it for a new one):

    '''What the feature does for the person, which LSP methods / commands / hooks it uses.'''

    @dataclass
    class SassState:                      # the feature's own state, declared, with defaults
        listings: dict[str, Listing] = field(default_factory=dict)

    def hover(ls: PtxlsServer, params: types.HoverParams) -> types.Hover | None:
        state = ls.state(SassState)       # typed: never getattr(ls, ...) or setattr
        found = sass.lookup(...)          # the domain does the work (no lsprotocol there)
        return convert.markdown_hover(found.text, found.span) if found else None

    async def show_sass(ls: PtxlsServer, uri: str = "", kernel: str = "", *_rest) -> dict:
        ...                               # a command: arguments come from the client, check them

    def register(server: PtxlsServer) -> None:
        server.hover_providers.append(hover)
        server.did_close_hooks.append(on_close)
        server.command(COMMAND)(show_sass)
        server.feature(types.TEXT_DOCUMENT_X)(handler)   # a method no other feature answers

Rules: handlers are module-level and thin (params → the domain → convert.py); every lsprotocol
object a feature returns is built in ``server/convert.py``; hover, code lens, code action and
completion go through the server's provider lists (one handler per LSP method, in core.py and
ptx_navigation.py), document open/change/save/close through its ``did_*_hooks``; providers and
hooks return at once (slow work runs as a task, crash-prone work in its own process).
"""

from __future__ import annotations

from ..app import PtxlsServer
from . import (
    core,
    cuda_diagnostics,
    gputest_feature,
    kernels,
    key_scrub,
    library_feature,
    lowering_feature,
    ptx_diagnostics,
    ptx_navigation,
    sanitizer_feature,
    sass_feature,
    show_ptx,
    status,
    triton_feature,
)

# Order matters only for hover/code-lens providers: earlier ones answer first.
FEATURES = (
    key_scrub,
    core,
    ptx_diagnostics,
    cuda_diagnostics,
    status,
    sass_feature,  # a PTX line's SASS above the opcode docs: it is what was asked for
    ptx_navigation,
    show_ptx,
    kernels,
    gputest_feature,
    sanitizer_feature,  # "Run with sanitizer" beside "Run GPU test"
    lowering_feature,
    triton_feature,
    library_feature,
)


def register_all(server: PtxlsServer) -> None:
    for feature in FEATURES:
        feature.register(server)
