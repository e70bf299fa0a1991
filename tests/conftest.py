"""Test-suite wiring: tests/ on sys.path for the shared helpers (lsp_helpers.py), and the one
``client`` fixture every end-to-end LSP test uses.

``client`` is a real server process (``python -m ptxls.server serve``) driven by pytest-lsp's
client (see ``lsp_helpers.recording_client``). A module or a test says how its server differs
with the ``lsp`` marker; keywords of the closest marker win, module-level ones fill the rest::

    pytestmark = pytest.mark.lsp(env=ENV, options={"debounceMs": 50})

    @pytest.mark.lsp(initialize=False)      # this test sends initialize itself
    async def test_x(client, tmp_path): ...

Keywords (all optional):

- ``env``: the server's environment (default: this process's);
- ``server_args``: extra arguments after ``serve`` (``["-v"]``: pygls logs every message);
- ``options``: the ``ptxls`` initializationOptions (settings) given to ``init``;
- ``init``: ``init(root, options) -> InitializeParams`` (default ``lsp_helpers.init_params``),
  for a test that needs other client capabilities (applyEdit, workspace folders);
- ``on_start``: ``on_start(client)`` before initialize, to register client-side handlers
  (workspace/applyEdit);
- ``initialize``: ``False`` when the test initializes the session itself.
"""

import contextlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# Older tests import the LSP helpers from conftest; the GPU machine has no pytest-lsp, and there
# the LSP tests are not collected (they import pytest_lsp themselves).
with contextlib.suppress(ImportError):
    import pytest_asyncio

    from lsp_helpers import *  # noqa: F403
    from lsp_helpers import SERVER_COMMAND, init_params, recording_client

    @pytest_asyncio.fixture
    async def client(request, tmp_path):
        """A started (and, unless told otherwise, initialized) server with a recording client."""
        how = _lsp_marker_kwargs(request)
        lsp = recording_client()
        await lsp.start_io(*SERVER_COMMAND, *how.get("server_args", ()), env=how.get("env"))
        try:
            if "on_start" in how:
                how["on_start"](lsp)
            if how.get("initialize", True):
                init = how.get("init", init_params)
                await lsp.initialize_session(init(tmp_path, how.get("options")))
            yield lsp
            # a test may have shut the server down itself, or never initialized it
            with contextlib.suppress(RuntimeError):
                await lsp.shutdown_session()
        finally:
            await lsp.stop()


def _lsp_marker_kwargs(request) -> dict:
    merged: dict = {}
    for marker in reversed(list(request.node.iter_markers("lsp"))):  # farthest first
        merged.update(marker.kwargs)
    return merged


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "lsp(env, server_args, options, init, on_start, initialize): how the `client` fixture "
        "starts the server (see tests/conftest.py)",
    )
