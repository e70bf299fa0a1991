"""One way to run a compiler as a killable subprocess, from asyncio code or from a thread.

The process is started with Popen and drained in a worker thread: on Python 3.11 that is
~6 ms faster per run than asyncio's subprocess transport (which also spawns a watcher thread
per child), and ptxas runs after every pause in typing. It gets its own process group (a new
session), so a timeout, a cancelled job or its normal end kills it *and anything it started*:
a tool that forks children that would outlive it leaves no orphans, and a child that keeps
our pipes open cannot keep us waiting. A child that leaves the group (``setsid``) still carries
the run's mark in its environment and is killed when the run ends (``reaper.py``).

Output is read with a byte cap (``MAX_OUTPUT_BYTES`` per stream, the first bytes kept): a tool
that prints 300 MB costs a few MB of memory; the rest is counted, not kept, and said.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import os
import selectors
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import IO, cast

from . import reaper

MAX_OUTPUT_BYTES = 4 << 20  # per stream; ptxas's errors for a 100k-line file fit many times
_CHUNK = 1 << 16
# After the tool itself exited, how long its pipes may stay open (a child still writing).
_PIPE_GRACE_S = 0.5


@dataclass
class ProcessResult:
    returncode: int | None  # None when killed by our timeout
    stdout: str
    stderr: str
    timed_out: bool = False
    seconds: float = 0.0
    dropped_bytes: int = 0  # output beyond the cap, counted and not kept

    @property
    def crashed(self) -> bool:
        return self.returncode is not None and self.returncode < 0


# Compilers still running when the server exits (the editor closed mid-check) die with it.
_LIVE: set[subprocess.Popen[bytes]] = set()
_LIVE_LOCK = threading.Lock()


_STARTED: list[bool] = []  # whether this process started a tool (the exit sweep is for them)


@atexit.register
def kill_all() -> None:
    """Kill every tool still running (its whole group) and whatever carries this process's mark
    (children that left their group): at exit, and at the server's exit. In the server (the
    watcher enabled, a subreaper) every other process below it ends too."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for proc in live:
        _kill(proc)
    if _STARTED:
        reaper.kill_marked(reaper.owner_id() + ".", exact=False)
    if reaper.enabled():
        reaper.kill_descendants()


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the tool's whole process group (it is the leader of its own session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, OSError):
        proc.kill()


def _start(args: list[str], cwd: str | None, env: dict[str, str] | None) -> subprocess.Popen[bytes]:
    marked_env, mark = reaper.tool_env(env)
    proc = subprocess.Popen(
        args,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=marked_env,
        start_new_session=True,
    )
    _MARKS[proc.pid] = mark
    if not _STARTED:
        _STARTED.append(True)
    with _LIVE_LOCK:
        _LIVE.add(proc)
    reaper.watch_group(proc.pid)  # a no-op unless the server started its watcher
    return proc


_MARKS: dict[int, str] = {}  # tool pid -> the mark its run's processes carry (reaper.tool_env)


def _drain(
    proc: subprocess.Popen[bytes], timeout: float, cap: int, stop: threading.Event
) -> tuple[bytes, bytes, bool, int]:
    """Read both pipes (capped) until EOF, the deadline, or ``stop``; then reap the process and
    kill what is left of its group. Returns (stdout, stderr, timed_out, dropped bytes)."""
    deadline = time.monotonic() + timeout
    out_pipe, err_pipe = proc.stdout, proc.stderr
    assert out_pipe is not None and err_pipe is not None  # both are PIPE (_start)
    kept: dict[IO[bytes], bytearray] = {out_pipe: bytearray(), err_pipe: bytearray()}
    dropped = 0
    timed_out = False
    exited_at: float | None = None
    with selectors.DefaultSelector() as sel:
        for pipe in kept:
            os.set_blocking(pipe.fileno(), False)
            sel.register(pipe, selectors.EVENT_READ)
        while sel.get_map():
            now = time.monotonic()
            if stop.is_set():
                break
            if now >= deadline:
                timed_out = True
                break
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > _PIPE_GRACE_S:
                break  # a child of the tool holds the pipes open: it is killed below
            for key, _ in sel.select(timeout=min(0.1, max(0.0, deadline - now))):
                try:
                    data = os.read(key.fd, _CHUNK)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    sel.unregister(key.fileobj)
                    continue
                buf = kept[cast(IO[bytes], key.fileobj)]
                room = cap - len(buf)
                if room > 0:
                    buf += data[:room]
                dropped += max(0, len(data) - max(room, 0))
    if timed_out or stop.is_set():
        _kill(proc)
    try:
        proc.wait(timeout=max(0.1, deadline - time.monotonic()) if not timed_out else 5)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill(proc)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
    # Anything the tool started and left behind is an orphan of ours: end it. (The group id is
    # the tool's pid; while members remain the kernel does not reuse it.)
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    # ... and so is anything it started in a session of its own (setsid): it carries the mark.
    mark = _MARKS.pop(proc.pid, None)
    if mark is not None:
        reaper.kill_marked(mark, exact=True)
    for pipe in kept:
        with contextlib.suppress(OSError):
            pipe.close()
    with _LIVE_LOCK:
        _LIVE.discard(proc)
    reaper.forget_group(proc.pid)
    return bytes(kept[out_pipe]), bytes(kept[err_pipe]), timed_out, dropped


def _result(
    proc: subprocess.Popen[bytes],
    out: bytes,
    err: bytes,
    timed_out: bool,
    dropped: int,
    started: float,
) -> ProcessResult:
    seconds = time.monotonic() - started
    if timed_out:
        return ProcessResult(None, "", "", timed_out=True, seconds=seconds, dropped_bytes=dropped)
    stderr = err.decode("utf-8", errors="replace")
    if dropped:
        stderr += f"\n[ptxls: {dropped} more bytes of output not kept (limit {MAX_OUTPUT_BYTES})]"
    return ProcessResult(
        proc.returncode,
        out.decode("utf-8", errors="replace"),
        stderr,
        seconds=seconds,
        dropped_bytes=dropped,
    )


_SPAWNER = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="ptxls-spawn")


def _abandon(starting: concurrent.futures.Future[subprocess.Popen[bytes]]) -> None:
    """A tool whose run was cancelled while it was being started: killed, drained, reaped."""
    if starting.cancelled() or starting.exception() is not None:
        return
    stop = threading.Event()
    stop.set()
    _drain(starting.result(), 5.0, 0, stop)


def run_capped(
    args: list[str],
    *,
    timeout: float,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    cap: int = MAX_OUTPUT_BYTES,
) -> ProcessResult:
    """The blocking form, for code already in a worker thread (tool discovery, version probes).
    Raises OSError only when the program cannot be started."""
    started = time.monotonic()
    proc = _start(args, cwd, env)
    out, err, timed_out, dropped = _drain(proc, timeout, cap, threading.Event())
    return _result(proc, out, err, timed_out, dropped, started)


async def run_killable(
    args: list[str],
    *,
    timeout: float,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    cap: int = MAX_OUTPUT_BYTES,
) -> ProcessResult:
    """Run to completion, or kill the whole process group on timeout or cancellation.

    Raises OSError only when the program cannot be started. The start itself runs in a thread
    of its own (``_SPAWNER``): Popen waits until the child has exec'd, and on a loaded machine
    that held the event loop 100+ ms (a watchdog's stack dump during the soak). Not in the
    default executor, whose threads drain running tools: hung tools would hold back the start
    of every other."""
    started = time.monotonic()
    starting = _SPAWNER.submit(_start, args, cwd, env)
    try:
        proc = await asyncio.wrap_future(starting)
    except asyncio.CancelledError:
        starting.add_done_callback(_abandon)  # started after all: ended (and reaped) at once
        raise
    stop = threading.Event()
    try:
        out, err, timed_out, dropped = await asyncio.to_thread(_drain, proc, timeout, cap, stop)
    except asyncio.CancelledError:
        # The draining thread notices within 0.1 s, kills the group and reaps it.
        stop.set()
        _kill(proc)
        raise
    return _result(proc, out, err, timed_out, dropped, started)


def scratch_name(name: str | None, default: str, reserved: tuple[str, ...] = ()) -> str:
    """The name a user's buffer gets inside a private scratch folder (tools' messages name it).
    The client's URI decides it, so it can be anything: empty ('file:///'), NUL ('%00': every
    file call raises ValueError), control characters, longer than a file name may be (ENAMETOOLONG:
    the tool never ran), or the name of the tool's own output. Those get ``default``."""
    base = (name or "").replace("\\", "/").rsplit("/", 1)[-1]
    if (
        not base
        or base in (".", "..", *reserved)
        or any(ord(c) < 32 or c == "\x7f" for c in base)
        or len(base.encode("utf-8", "surrogatepass")) > 200
    ):
        return default
    return base
