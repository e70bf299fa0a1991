"""Writing files that stay where they belong: inside one folder, never through a symlink.

A cloned repository can ship ``.ptxls/show/k.show.ptx`` or ``k.ptx`` as a symbolic link to any
file the user can write (``~/.bashrc``); a plain ``open(path, "w")`` would write through it.
Every file ptxls creates for a person — a lowering result, a best attempt, a Show PTX view, a
transcript, a plan — goes through this module:

- the path must lie inside ``root`` (the workspace folder of the source, or a folder the person
  named) once every existing symlink on the way is resolved: a link that leads out is refused;
- folders are created one component at a time relative to an open directory descriptor with
  ``O_NOFOLLOW``, so a component swapped for a link between the check and the write is refused
  too;
- the file is written to a fresh temporary name (``O_CREAT | O_EXCL | O_NOFOLLOW``) in the same
  folder and renamed over the target: a symlink at the target is refused (or, with
  ``replace_symlink``, the link itself is replaced), never followed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from pathlib import Path

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_DIR_FD_OK = os.replace in os.supports_dir_fd and os.open in os.supports_dir_fd


class UnsafeWrite(Exception):
    """The write would leave its folder or go through a symlink; the message says which."""


def is_inside(path: Path | str, root: Path | str) -> bool:
    """Whether ``path`` (symlinks on the way resolved) lies inside ``root`` (resolved)."""
    try:
        real = Path(os.path.realpath(path))
        base = Path(os.path.realpath(root))
    except (OSError, ValueError):
        return False
    return real == base or real.is_relative_to(base)


def _open_dir_chain(root: Path, parts: tuple[str, ...], create: bool) -> int:
    """A descriptor of root/parts..., each component opened without following links."""
    fd = os.open(root, os.O_RDONLY | _DIRECTORY)
    try:
        for name in parts:
            try:
                nxt = os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o755, dir_fd=fd)
                nxt = os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW, dir_fd=fd)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise UnsafeWrite(
                        f"'{name}' on the way is a symbolic link or not a folder"
                    ) from None
                raise
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


def _checked_parts(path: Path, root: Path) -> tuple[Path, tuple[str, ...], str]:
    """(real root, the folder components below it, the file name) — or UnsafeWrite."""
    real_root = Path(os.path.realpath(root))
    if not real_root.is_dir():
        raise UnsafeWrite(f"{root} is not a folder")
    absolute = Path(os.path.abspath(path))
    name = absolute.name
    if not name or name in (".", ".."):
        raise UnsafeWrite(f"{path} names no file")
    real_parent = Path(os.path.realpath(absolute.parent))
    if not (real_parent == real_root or real_parent.is_relative_to(real_root)):
        raise UnsafeWrite(f"{path} is outside {root} (after following links: {real_parent})")
    return real_root, real_parent.relative_to(real_root).parts, name


def write_text(
    path: Path | str,
    text: str,
    *,
    root: Path | str,
    replace_symlink: bool = False,
    mode: int = 0o644,
) -> Path:
    """Write ``text`` to ``path`` inside ``root`` atomically, never through a symlink.
    Returns the path written. Raises UnsafeWrite (outside ``root``, a symlink on the way or at
    the target) or OSError (disk full, permissions)."""
    path = Path(path)
    real_root, parts, name = _checked_parts(path, Path(root))
    data = text.encode("utf-8")
    if not _DIR_FD_OK:  # pragma: no cover - Windows: no dir_fd; check, then write by path
        return _write_by_path(real_root.joinpath(*parts) / name, data, replace_symlink, mode)
    dfd = _open_dir_chain(real_root, parts, create=True)
    try:
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            is_link = (st.st_mode & 0o170000) == 0o120000
        except FileNotFoundError:
            is_link = False
        if is_link and not replace_symlink:
            raise UnsafeWrite(f"{path} is a symbolic link; not writing through it")
        tmp = f".{name}.{secrets.token_hex(6)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, mode, dir_fd=dfd)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)  # replaces a link, not its target
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
            raise
    finally:
        os.close(dfd)
    return real_root.joinpath(*parts) / name


def _write_by_path(target: Path, data: bytes, replace_symlink: bool, mode: int) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink() and not replace_symlink:
        raise UnsafeWrite(f"{target} is a symbolic link; not writing through it")
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, target)
    return target


def create_new(path: Path | str, *, root: Path | str, mode: int = 0o644) -> Path:
    """Create an empty file that must not exist yet (a transcript), inside ``root``; later
    appends open it with ``O_APPEND | O_NOFOLLOW`` (``append_text``)."""
    path = Path(path)
    real_root, parts, name = _checked_parts(path, Path(root))
    if not _DIR_FD_OK:  # pragma: no cover
        target = real_root.joinpath(*parts) / name
        target.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, mode))
        return target
    dfd = _open_dir_chain(real_root, parts, create=True)
    try:
        os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, mode, dir_fd=dfd))
    finally:
        os.close(dfd)
    return real_root.joinpath(*parts) / name


def append_text(path: Path | str, text: str) -> None:
    """Append to a file created by ``create_new``; a symlink put in its place is refused."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | _NOFOLLOW)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise UnsafeWrite(f"{path} became a symbolic link; not writing through it") from None
        raise
    with os.fdopen(fd, "ab") as f:
        f.write(text.encode("utf-8"))


def user_cache_dir() -> Path:
    """ptxls's own folder for files that belong to no workspace (a source outside every
    workspace folder): ``$XDG_CACHE_HOME/ptxls`` or ``~/.cache/ptxls``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ptxls"
