"""``ptxls.showPtx(uri, kernel)``: open nvcc's PTX of one CUDA kernel, source lines interleaved.

The view is written under ``.ptxls/show/`` in the workspace folder of the source (never beside
the user's sources, never through a symlink: a repository that ships ``.ptxls/show/k.show.ptx``
as a link gets the link replaced, not its target written) and opened with window/showDocument;
a source outside every workspace folder gets no file, only the text (``untitled``). The command
answers ``{ok, summary, uri, ptx}``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsprotocol import types

from ptxls.lowering import safe_write
from ptxls.lowering.show_ptx import show_ptx
from ptxls.toolchain.arch import choose_arch

from ..app import PtxlsServer
from ..uris import to_path

MAX_NAME = 4096  # a C++ mangled kernel name is a few hundred characters

COMMAND = "ptxls.showPtx"


def _view_root(server: PtxlsServer, source: Path) -> Path | None:
    from .lowering_feature import _workspace_root

    return _workspace_root(server, source)


def register(server: PtxlsServer) -> None:
    @server.command(COMMAND)
    async def show(ls: PtxlsServer, uri: str = "", kernel: str = "", *_rest) -> dict:
        if (
            not isinstance(uri, str)
            or not isinstance(kernel, str | None)
            or (kernel and len(kernel) > MAX_NAME)
        ):
            # A 5 MB "kernel name" was compiled for and echoed whole in the result.
            what = f"{len(kernel)} characters" if isinstance(kernel, str) else type(kernel).__name__
            return {"ok": False, "summary": "ptxls.showPtx takes (uri, kernel name): got a "
                    f"kernel name of {what}"}  # fmt: skip
        doc = ls.open_document(uri)
        path = to_path(uri)  # None for other schemes and for a URI naming no file ('%00')
        if doc is None and path and Path(path).exists():
            text = Path(path).read_text(errors="replace")
        elif doc is not None:
            text = doc.source
        else:
            return {
                "ok": False,
                "summary": f"ptxls.showPtx: {uri or '(no uri)'} is not open and not on disk",
            }
        if not kernel:
            return {
                "ok": False,
                "summary": "ptxls.showPtx needs the kernel's name (arguments: uri, kernel)",
            }
        shown = await show_ptx(
            text,
            kernel=kernel,
            file_path=path,
            arch=choose_arch(ls.settings.arch, None),
            nvcc_path=ls.settings.nvcc_path,
        )
        if not shown.ok:
            return {"ok": False, "summary": shown.message}
        result: dict = {"ok": True, "summary": shown.message, "ptx": shown.ptx}
        root = _view_root(ls, Path(path)) if path else None
        if root is None:
            result["untitled"] = True
            result["summary"] += " (the source is outside the workspace: not written to a file)"
            return result
        safe_name = "".join(c if c.isalnum() or c in "_$." else "_" for c in kernel)[:120]
        target = root / ".ptxls" / "show" / f"{safe_name}.show.ptx"  # never a lowering result
        try:
            written = safe_write.write_text(target, shown.ptx, root=root, replace_symlink=True)
        except (safe_write.UnsafeWrite, OSError) as e:
            result["summary"] += f" (view not written: {e})"
            return result
        result["uri"] = written.as_uri()
        _show_document(ls, result["uri"])
        return result


def _show_document(ls: PtxlsServer, uri: str) -> None:
    """Ask the client to open the view, when it says it can; never wait for its answer in the
    command (a client busy waiting for the command's result would deadlock us), and a client
    without showDocument still gets the uri in the result."""
    window = ls.client_capabilities.window
    support = window.show_document if window else None
    if ls.client_opens_results or not (support and support.support):
        return

    async def show() -> None:
        try:
            await asyncio.wait_for(
                ls.window_show_document_async(types.ShowDocumentParams(uri=uri, take_focus=True)),
                30,
            )
        except Exception as e:
            ls.log_message(f"showDocument {uri} failed: {e}")

    asyncio.get_running_loop().create_task(show())
