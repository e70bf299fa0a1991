"""One way to run a compiler as a killable asyncio subprocess."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from dataclasses import dataclass


@dataclass
class ProcessResult:
    returncode: int | None  # None when killed by our timeout
    stdout: str
    stderr: str
    timed_out: bool = False
    seconds: float = 0.0

    @property
    def crashed(self) -> bool:
        return self.returncode is not None and self.returncode < 0


def _kill(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


async def run_killable(
    args: list[str], *, timeout: float, cwd: str | None = None, env: dict | None = None
) -> ProcessResult:
    """Run to completion, or kill the whole process group on timeout or cancellation.

    Raises OSError only when the program cannot be started."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    proc = await asyncio.create_subprocess_exec(
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=cwd,
        env=env,
        start_new_session=True,  # own process group: nvcc's children die with it
    )
    try:
        stdout, stderr = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        _kill(proc)
        await proc.wait()
        return ProcessResult(None, "", "", timed_out=True, seconds=loop.time() - started)
    except asyncio.CancelledError:
        _kill(proc)
        with contextlib.suppress(Exception):
            await asyncio.shield(proc.wait())
        raise
    return ProcessResult(
        proc.returncode,
        stdout.decode("utf-8", errors="replace"),
        stderr.decode("utf-8", errors="replace"),
        seconds=loop.time() - started,
    )
