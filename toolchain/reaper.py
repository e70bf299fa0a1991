"""A watcher that ends every process a server started when the server itself is killed.

A tool runs in a session of its own so that a timeout or a cancelled job kills it *and its
children* (``process.py``). When the server is ended normally, ``atexit`` does that; when it is
killed (SIGKILL, an editor that gives up, the OOM killer) nothing in it runs any more, and a
hung nvcc, a ptxas stuck on a version probe or a GPU worker spinning on a kernel would live on.

So the server starts one small helper (``enable()``): a Python process in its own session,
isolated, which reads "+GROUP", "-GROUP", "+pid PID", "-pid PID" lines from a pipe whose
write end only the server holds. When that pipe reaches end of file — the server is gone, however
it went — the helper SIGKILLs every process group and process still registered, and exits
(end of file is the signal, on every Unix: ``PR_SET_PDEATHSIG`` would kill the helper itself
at the server's death, before it could clean up). It ignores SIGINT/SIGHUP/SIGTERM sent to a
terminal's or an editor's process group, so it outlives the server by the moment it needs.
Registration is a write of a few bytes; a process without the helper (the CLI, tests)
registers nothing.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading

from .isolated import private_cwd

_WATCHER = r"""
import os, signal, sys
for s in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
    signal.signal(s, signal.SIG_IGN)
groups, pids = set(), set()
for line in sys.stdin.buffer:
    op, _, arg = line.decode("ascii", "replace").strip().partition(" ")
    try:
        n = int(arg)
    except ValueError:
        continue
    {"+g": groups.add, "-g": groups.discard, "+p": pids.add, "-p": pids.discard}.get(op, id)(n)
for g in groups:
    try:
        os.killpg(g, signal.SIGKILL)
    except OSError:
        pass
for p in pids:
    try:
        os.kill(p, signal.SIGKILL)
    except OSError:
        pass
"""

_lock = threading.Lock()
_proc: subprocess.Popen[bytes] | None = None


def enable() -> int | None:
    """Start the watcher for this process (idempotent). Returns its pid, None where it could not
    start (the server then works as before, with atexit's cleanup only)."""
    global _proc
    with _lock:
        if _proc is not None and _proc.poll() is None:
            return _proc.pid
        try:
            _proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _WATCHER],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd=private_cwd(),
                start_new_session=True,  # a signal to the server's group does not reach it
                close_fds=True,
            )
        except OSError:
            _proc = None
            return None
        return _proc.pid


def enabled() -> bool:
    return _proc is not None and _proc.poll() is None


def _send(line: str) -> None:
    with _lock:
        proc = _proc
        if proc is None or proc.stdin is None:
            return
        with contextlib.suppress(OSError, ValueError):
            proc.stdin.write(line.encode("ascii"))
            proc.stdin.flush()


def watch_group(pgid: int) -> None:
    _send(f"+g {pgid}\n")


def forget_group(pgid: int) -> None:
    _send(f"-g {pgid}\n")


def watch_pid(pid: int) -> None:
    _send(f"+p {pid}\n")


def forget_pid(pid: int) -> None:
    _send(f"-p {pid}\n")


def watcher_pid() -> int | None:
    proc = _proc
    return proc.pid if proc is not None and enabled() else None
