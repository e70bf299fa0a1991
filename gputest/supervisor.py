"""The parent's side of the worker: start it, send requests, read replies, kill it.

Asyncio all the way (the language server's loop must never block): the worker is a
``create_subprocess_exec`` child; each step of a request has a wall-clock timeout that restarts
whenever the worker reports progress, so a hung kernel is killed within ``timeout_s`` of its
launch. After a timeout, a crash or a sticky CUDA error the process is discarded and the next
request starts a fresh one; otherwise the warm worker is reused.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from ptxls.toolchain import reaper
from ptxls.toolchain.isolated import private_cwd, python_command

# Every worker process started here and not yet reaped: the server's exit kills them at once.
_live: dict[int, tuple[asyncio.subprocess.Process, bool]] = {}

START_TIMEOUT_S = 60.0  # interpreter + cuInit + context: ~0.8 s on the H200, more on a busy box


@dataclass
class WorkerReply:
    """What came back: the worker's JSON reply, or why there is none."""

    data: dict
    timed_out: bool = False
    crashed: bool = False
    last_progress: str = ""
    restarted: bool = False  # the worker was discarded after this request
    stderr_tail: str = ""
    cases: list[dict] = field(default_factory=list)  # finished cases streamed before the reply


def default_command(device: str = "gpu", environ: dict[str, str] | None = None) -> list[str]:
    """The worker runs under this interpreter, or under PTXLS_GPU_PYTHON: the Python of another
    environment, for when cuda-python (or the driver's matching bindings) lives there. Isolated
    (``toolchain/isolated.py``): a repository's ``ptxls/``, ``numpy.py`` or ``cuda/`` in the folder
    ptxls was started in is never imported in place of the installed ones."""
    env = os.environ if environ is None else environ
    python = env.get("PTXLS_GPU_PYTHON") or sys.executable
    extra = ("--device", "cpu") if device == "cpu" else ()
    # (a copy: python_command takes a plain dict, and os.environ is a mapping of its own kind)
    return python_command("ptxls.gputest.worker", *extra, python=python, environ=dict(env))


def kill_workers_now() -> None:
    """SIGKILL every worker (and a sanitizer's whole group) without waiting: ``exit`` must not
    wait for a kernel to finish."""
    for pid, (proc, group) in list(_live.items()):
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
                os.killpg(pid, signal.SIGKILL) if group else proc.kill()
        _live.pop(pid, None)


class Supervisor:
    # True when the command starts children of its own (compute-sanitizer runs the worker as
    # its child): it then leads its own process group and kill() ends the whole group.
    own_process_group = False

    def __init__(self, command: list[str] | None = None, env: dict[str, str] | None = None):
        self.command = command or default_command(environ=env)
        self.env = env
        self.proc: asyncio.subprocess.Process | None = None
        self.lock = asyncio.Lock()
        self.starts = 0  # how many processes were started (tests and the report read it)
        self.device: dict | None = None
        self.no_device: str | None = None
        self._stderr_task: asyncio.Task | None = None
        self._stderr_tail: list[str] = []

    @property
    def warm(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    async def _start(self) -> None:
        env = dict(os.environ if self.env is None else self.env)
        env.setdefault("PYTHONUNBUFFERED", "1")
        self.proc = await asyncio.create_subprocess_exec(
            *self.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            limit=1 << 24,  # replies carry whole results on one line
            start_new_session=self.own_process_group,
            cwd=private_cwd(),  # never the user's folder (toolchain/isolated.py)
        )
        _live[self.proc.pid] = (self.proc, self.own_process_group)
        # A killed server's watcher ends the worker too (toolchain/reaper.py).
        if self.own_process_group:
            reaper.watch_group(self.proc.pid)
        else:
            reaper.watch_pid(self.proc.pid)
        self.starts += 1
        self._stderr_tail = []
        self._stderr_task = asyncio.create_task(self._drain_stderr(self.proc))

    async def _drain_stderr(self, proc) -> None:
        # Keep the last lines for crash reports; an undrained pipe would block the worker.
        while True:
            line = await proc.stderr.readline()
            if not line:
                return
            self._stderr_tail = (self._stderr_tail + [line.decode(errors="replace").rstrip()])[-20:]

    async def kill(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()  # SIGKILL: a spinning kernel only stops with its process (docs/gpu-facts.md)
        if self.own_process_group:
            with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
                os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(proc.wait(), 10)
        (reaper.forget_group if self.own_process_group else reaper.forget_pid)(proc.pid)
        _live.pop(proc.pid, None)
        if self._stderr_task:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._stderr_task, 2)

    async def close(self) -> None:
        if self.warm and self.proc is not None and self.proc.stdin is not None:  # (warm: it is)
            with contextlib.suppress(Exception):
                self.proc.stdin.write(b'{"op": "exit"}\n')
                await self.proc.stdin.drain()
                await asyncio.wait_for(self.proc.wait(), 2)
        await self.kill()

    async def request(
        self,
        msg: dict,
        timeout_s: float,
        on_progress: Callable[[str], None] | None = None,
    ) -> WorkerReply:
        """Send one request and wait for its reply; one request at a time per worker."""
        async with self.lock:
            if not self.warm:
                await self._start()
                hello = await self._exchange({"op": "hello"}, START_TIMEOUT_S, None)
                if hello.timed_out or hello.crashed:
                    await self.kill()
                    hello.restarted = True
                    return hello
                self.device = hello.data.get("device")
                self.no_device = hello.data.get("no_device")
                if msg.get("op") == "hello":
                    return hello
            try:
                reply = await self._exchange(msg, timeout_s, on_progress)
            except asyncio.CancelledError:
                # The person cancelled: the worker is mid-request and its late reply would be
                # read as the next request's, so it goes (a fresh one starts on demand).
                await asyncio.shield(self.kill())
                raise
            if reply.timed_out or reply.crashed or reply.data.get("sticky"):
                await self.kill()
                reply.restarted = True
            return reply

    async def _exchange(self, msg, timeout_s, on_progress) -> WorkerReply:
        proc = self.proc
        assert proc is not None
        assert proc.stdin is not None and proc.stdout is not None  # spawned with both piped
        last = ""
        cases: list[dict] = []
        try:
            proc.stdin.write((json.dumps(msg) + "\n").encode())
            await proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            return WorkerReply({}, crashed=True, stderr_tail=await self._tail(proc))
        while True:
            try:
                line = await asyncio.wait_for(proc.stdout.readline(), timeout_s)
            except TimeoutError:
                return WorkerReply({}, timed_out=True, last_progress=last, cases=cases)
            except (ValueError, asyncio.LimitOverrunError):
                return WorkerReply({"error": "worker reply too large"}, crashed=True)
            if not line:
                return WorkerReply(
                    {}, crashed=True, last_progress=last, stderr_tail=await self._tail(proc)
                )
            try:
                data = json.loads(line)
            except json.JSONDecodeError:
                continue  # not ours; the worker keeps its protocol on a private fd anyway
            if "progress" in data:
                last = data["progress"]
                if "case" in data:
                    cases.append(data["case"])
                if on_progress:
                    on_progress(last)
                continue
            return WorkerReply(data, last_progress=last, cases=cases)

    async def _tail(self, proc) -> str:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(proc.wait(), 5)
        if self._stderr_task:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(self._stderr_task), 2)
        code = proc.returncode
        tail = "\n".join(self._stderr_tail[-8:])
        return f"exit code {code}" + (f"\n{tail}" if tail else "")


_shared: dict[str, tuple[asyncio.AbstractEventLoop | None, Supervisor]] = {}


def shared_supervisor(device: str = "gpu") -> Supervisor:
    """The warm worker of the running event loop (the server and CLI use this one). Its pipes
    belong to the loop that started it, so a new loop (a second ``asyncio.run`` in one process)
    gets a supervisor of its own. ``device="cpu"``: the emulator's worker (a process of its own,
    killable like the GPU's)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    held = _shared.get(device)
    if held is None or held[0] is not loop:
        held = _shared[device] = (loop, Supervisor(default_command(device)))
    return held[1]


async def close_shared() -> None:
    """Close every shared worker (GPU and emulator) this process started: a one-shot
    ``asyncio.run`` caller must, before its loop ends."""
    for _, sup in list(_shared.values()):
        with contextlib.suppress(Exception):  # best effort: the worker dies with us anyway
            await sup.close()
