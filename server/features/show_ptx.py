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

from ptxls.lowering import safe_write
from ptxls.lowering.show_ptx import show_ptx
from ptxls.toolchain.arch import choose_arch

from ..app import PtxlsServer
from ..uris import to_path, workspace_root
from ..user_files import UnreadableFile, read_user_file

MAX_NAME = 4096  # a C++ mangled kernel name is a few hundred characters

COMMAND = "ptxls.showPtx"


async def _source_text(ls: PtxlsServer, uri: str, path: str | None) -> tuple[str | None, str]:
    """The editor's buffer, else the file on disk (off the loop, a regular file of a bounded
    size: server/user_files.py), else (None, why)."""
    doc = ls.open_document(uri)
    if doc is not None:
        return doc.source, ""
    if not path:
        return None, "not open and not on disk"
    try:
        return await read_user_file(path), ""
    except UnreadableFile as e:
        return None, str(e)


def _bad_arguments(uri, kernel) -> dict | None:
    if (
        isinstance(uri, str)
        and isinstance(kernel, str | None)
        and not (kernel and len(kernel) > MAX_NAME)
    ):
        return None
    # A 5 MB "kernel name" was compiled for and echoed whole in the result.
    what = f"{len(kernel)} characters" if isinstance(kernel, str) else type(kernel).__name__
    return {"ok": False, "summary": "ptxls.showPtx takes (uri, kernel name): got a "
            f"kernel name of {what}"}  # fmt: skip


async def show(ls: PtxlsServer, uri: str = "", kernel: str = "", *_rest) -> dict:
    bad = _bad_arguments(uri, kernel)
    if bad is not None:
        return bad
    path = to_path(uri)  # None for other schemes and for a URI naming no file ('%00')
    text, why = await _source_text(ls, uri, path)
    if text is None:
        return {"ok": False, "summary": f"ptxls.showPtx: {_short(uri) or '(no uri)'}: {why}"}
    if not kernel:
        return {
            "ok": False,
            "summary": "ptxls.showPtx needs the kernel's name (arguments: uri, kernel)",
        }
    # choose_arch may ask the local GPU (a child process, the first time): not on the event loop
    arch = await asyncio.to_thread(choose_arch, ls.settings.arch, None)
    shown = await show_ptx(
        text, kernel=kernel, file_path=path, arch=arch, nvcc_path=ls.settings.nvcc_path
    )
    if not shown.ok:
        return {"ok": False, "summary": shown.message}
    result: dict = {"ok": True, "summary": shown.message, "ptx": shown.ptx}
    root = workspace_root(ls.workspace, Path(path)) if path else None
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
    result["uri"] = written.as_uri()  # opened by the client, or on request (app.command)
    return result


def register(server: PtxlsServer) -> None:
    server.command(COMMAND)(show)


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
