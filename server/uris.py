"""Document URIs as clients send them and as pygls stores them.

pygls 2 keys its open documents by ``urllib.parse.unquote(uri)`` (workspace.put_text_document)
while clients send the URI percent-encoded: VS Code writes a space as ``%20``, an accent as
``%C3%A9`` and every Windows drive as ``file:///c%3A/...``. Looking a document up by the raw
URI finds nothing for all of those (no diagnostics, hovers, lenses or actions, and no message),
so every lookup goes through ``find_document`` here. Beyond what pygls does, a lookup also
matches a URI that differs only in the drive letter's case (``file:///C:/`` vs ``c%3A``) or an
explicit ``localhost`` host, which different clients (and a client and a command argument)
write differently for the same file.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlparse

from pygls.uris import to_fs_path

from ptxls.lowering.safe_write import is_inside

_DRIVE = re.compile(r"^file:///([A-Za-z]):", re.ASCII)


def storage_key(uri: str) -> str:
    """The key pygls files the document under."""
    return unquote(uri)


def canonical(uri: str) -> str:
    """One spelling per file: decoded, ``localhost`` dropped, the drive letter lower case."""
    u = unquote(uri)
    if u.lower().startswith("file://localhost/"):
        u = "file:///" + u[len("file://localhost/") :]
    return _DRIVE.sub(lambda m: f"file:///{m.group(1).lower()}:", u)


def find_document(documents: dict, uri: str):
    """The open document ``uri`` names, however the client spelled it; None when not open."""
    doc = documents.get(storage_key(uri))
    if doc is not None:
        return doc
    want = canonical(uri)
    for key, candidate in list(documents.items()):
        if canonical(key) == want:
            return candidate
    return None


def to_path(uri: str) -> str | None:
    """The file system path of a ``file:`` URI (None for other schemes): decoded, with the
    Windows drive (``c:/...``) or UNC host (``//host/share/...``) as the platform writes it."""
    if not uri.lower().startswith("file:"):
        return None
    try:
        path = to_fs_path(uri)
    except Exception:  # a malformed URI names no file
        return None
    # '%00' decodes to a NUL, which no file name holds (every file call raises ValueError).
    return None if path is None or "\0" in path else path


def uri_to_path(uri: str) -> Path:
    """The path part of any URI, decoded (for workspace folders and command arguments)."""
    return Path(unquote(urlparse(uri).path))


def workspace_root(workspace, path: Path) -> Path | None:  # pygls' Workspace
    """The workspace folder ``path`` lies in (symlinks resolved), or None: then nothing is
    written beside it (a result is shown as an untitled document instead)."""
    for folder in (workspace.folders or {}).values():
        root = uri_to_path(folder.uri)
        if is_inside(path, root):
            return root
    root = workspace.root_path
    if root and is_inside(path, root):
        return Path(root)
    return None
