"""Reading a file whose name came from a user's project or a client: only a regular file of a
bounded size, never blocking.

``Path.read_text`` of a FIFO blocks until a writer comes (forever, on the language server's
event loop), ``/dev/zero`` never ends, ``/proc/self/pagemap`` is terabytes behind a size of 0.
Here the file is opened with ``O_NONBLOCK`` (a FIFO's open returns at once), checked with
``fstat`` on the open descriptor (no race with a swapped path) to be a regular file outside
``/proc``, ``/sys`` and ``/dev``, at most ``limit`` bytes, and read with that cap. Used by the
server's commands (``server/user_files.py``, in a worker thread) and by the GPU test's paired
files (``gputest/pairing.py``).
"""

from __future__ import annotations

import os
import stat

DEFAULT_LIMIT = 32 << 20  # a CUDA, Triton or PTX source; a 100 MB file is not one
_PSEUDO = ("/proc/", "/sys/", "/dev/")


class UnreadableFile(OSError):
    """The file cannot be used; the message says why, for a person."""


def read_regular_file(path: str | os.PathLike[str], limit: int = DEFAULT_LIMIT) -> str:
    """The file's text (UTF-8, undecodable bytes replaced). Blocking: call from a thread.
    Raises UnreadableFile with a message."""
    name = os.fspath(path)
    real = os.path.realpath(name)
    if real.startswith(_PSEUDO) or real in ("/proc", "/sys", "/dev"):
        raise UnreadableFile(f"{name} is a system file ({real}), not a source file")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(name, flags)
    except OSError as e:
        raise UnreadableFile(f"cannot open {name}: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = _kind(st.st_mode)
            raise UnreadableFile(f"{name} is {kind}, not a regular file: not read")
        if st.st_size > limit:
            raise UnreadableFile(f"{name} has {st.st_size} bytes, above the {limit} bytes read")
        os.set_blocking(fd, True)
        chunks, total = [], 0
        while total <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:  # it grew while we read
            raise UnreadableFile(f"{name} is larger than the {limit} bytes read")
        return b"".join(chunks).decode("utf-8", errors="replace")
    finally:
        os.close(fd)


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"
