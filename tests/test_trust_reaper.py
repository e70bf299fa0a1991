"""A tool that leaves its process group (``setsid``) does not outlive its run or the server.

Before: a tool ran in a session of its own and its *group* was killed at the run's end, at a
timeout, on cancel and (by the watcher) when the server was killed; a wrapper script that calls
``setsid sleep 1000 &`` started a new session that none of those reached. Now every tool carries
a mark in its environment that its children inherit (``toolchain/reaper.py``): the run's end, the
server's exit and the watcher each kill what carries it; and the server is a child subreaper, so
an orphan that shed even the mark (``env -i``) re-parents to the server and ends at its exit.
Real process trees, real server processes; the escaping tools are shell scripts.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from raw_lsp import RawServer

from ptxls.toolchain import process, reaper

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc, setsid")

CU = "__global__ void k(float *x) { x[0] = 1.0f; }\n"
VERSION = "Cuda compilation tools, release 13.0, V13.0.88"


def escaping_tool(tmp: Path, name: str, *, then: str, clear_env: bool = False) -> tuple[Path, Path]:
    """A tool that answers --version, and otherwise starts ``sleep 1000`` in a new session
    (recording its pid), then runs ``then`` (``exit 0`` or ``exec sleep 600``)."""
    log = tmp / f"{name}.log"
    script = tmp / name
    env_i = "env -i " if clear_env else ""
    script.write_text(
        "#!/bin/sh\n"
        f'case "$1" in --version) echo "{VERSION}"; exit 0;; esac\n'
        f"{env_i}setsid sleep 1000 </dev/null >/dev/null 2>&1 &\n"
        f'echo "$! escaped" >> {log}\n'
        f"{then}\n"
    )
    script.chmod(0o755)
    return script, log


def escaped(log: Path) -> list[int]:
    if not log.exists():
        return []
    return [int(line.split()[0]) for line in log.read_text().splitlines() if "escaped" in line]


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def wait_for(cond, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


@pytest.fixture
def project(tmp_path):
    (tmp_path / ".git").mkdir()
    cu = tmp_path / "k.cu"
    cu.write_text(CU)
    survivors: list[int] = []
    yield tmp_path, survivors
    for pid in survivors:  # a failed test leaves no sleep 1000 on the machine
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def test_a_runs_setsid_child_ends_with_the_run(project):
    tmp, survivors = project
    tool, log = escaping_tool(tmp, "tool", then="exit 0")
    result = process.run_capped([str(tool)], timeout=10)
    assert result.returncode == 0
    [pid] = escaped(log)
    survivors.append(pid)
    assert wait_for(lambda: not alive(pid), 3), "the setsid'd child outlived its run"


def test_a_timed_out_runs_setsid_child_ends_too(project):
    tmp, survivors = project
    tool, log = escaping_tool(tmp, "tool", then="exec sleep 600")
    result = process.run_capped([str(tool)], timeout=1)
    assert result.timed_out
    [pid] = escaped(log)
    survivors.append(pid)
    assert wait_for(lambda: not alive(pid), 3)


def test_the_mark_names_the_run_and_its_owner(project):
    tmp, survivors = project
    tool = tmp / "env_tool"
    tool.write_text(f'#!/bin/sh\necho "${reaper.OWNER_VAR}"\n')
    tool.chmod(0o755)
    first = process.run_capped([str(tool)], timeout=10).stdout.strip()
    second = process.run_capped([str(tool)], timeout=10).stdout.strip()
    assert first.startswith(reaper.owner_id() + ".") and second.startswith(reaper.owner_id() + ".")
    assert first != second  # a run's sweep cannot reach another run's processes


def _show_ptx(server: RawServer, uri: str, kernel: str) -> int:
    return server.request(
        "workspace/executeCommand", {"command": "ptxls.showPtx", "arguments": [uri, kernel]}
    )


@pytest.mark.parametrize("end", ["SIGKILL", "exit"])
def test_a_hung_tools_setsid_child_ends_with_the_server(project, end):
    tmp, survivors = project
    nvcc, log = escaping_tool(tmp, "nvcc", then="exec sleep 600")
    cu = tmp / "k.cu"
    server = RawServer(cwd=str(tmp))
    try:
        server.initialize(str(tmp), {"nvccPath": str(nvcc)})
        server.open(cu.as_uri(), CU, language="cuda")
        for i in range(2):
            _show_ptx(server, cu.as_uri(), f"k{i}")
        assert wait_for(lambda: len(escaped(log)) >= 2, 30), "nvcc never started"
        pids = escaped(log)
        survivors.extend(pids)
        assert all(alive(p) for p in pids)
        if end == "SIGKILL":
            os.kill(server.proc.pid, signal.SIGKILL)
            server.proc.wait(timeout=10)
        else:
            server.wait_reply(server.request("shutdown"), timeout=10)
            server.notify("exit")
            assert server.proc.wait(timeout=10) == 0
        assert wait_for(lambda: not any(alive(p) for p in pids), 5), [p for p in pids if alive(p)]
    finally:
        if server.proc.poll() is None:
            server.proc.kill()


def test_an_unmarked_orphan_reparents_to_the_server_and_ends_at_its_exit(project):
    tmp, survivors = project
    # (the pause: the group kill at the run's end must not catch the child before its setsid)
    nvcc, log = escaping_tool(tmp, "nvcc", then="sleep 0.3; exit 0", clear_env=True)
    cu = tmp / "k.cu"
    with RawServer(cwd=str(tmp)) as server:
        server.initialize(str(tmp), {"nvccPath": str(nvcc)})
        server.open(cu.as_uri(), CU, language="cuda")
        server.wait_reply(_show_ptx(server, cu.as_uri(), "k"), timeout=30)
        pids = escaped(log)  # one per nvcc run of the command
        survivors.extend(pids)
        assert pids
        # env -i sheds the mark: the run's sweep cannot see it, but the subreaper keeps it
        assert wait_for(lambda: all(alive(p) and parent(p) == server.proc.pid for p in pids), 5), [
            (p, alive(p) and parent(p)) for p in pids
        ]
        server.wait_reply(server.request("shutdown"), timeout=10)
        server.notify("exit")
        assert server.proc.wait(timeout=10) == 0
    assert wait_for(lambda: not any(alive(p) for p in pids), 5)


@pytest.mark.parametrize("then", ["exec sleep 600", "sleep 0.3; exit 0"])
def test_an_unmarked_setsid_orphan_ends_when_the_server_is_killed(project, then):
    """``env -i setsid sleep 1000`` sheds both the group and the mark; with the server SIGKILLed
    nothing of the server runs at its exit. The watcher noted the server's descendants while the
    tool ran (``reaper._WATCHER``) and, at the server's death, ends them and all below them:
    with the tool still hung (``exec sleep 600``) and after the tool exited, the orphan then a
    child of the server (the subreaper) that re-parented to init when the server died."""
    tmp, survivors = project
    nvcc, log = escaping_tool(tmp, "nvcc", then=then, clear_env=True)
    cu = tmp / "k.cu"
    server = RawServer(cwd=str(tmp))
    try:
        server.initialize(str(tmp), {"nvccPath": str(nvcc)})
        server.open(cu.as_uri(), CU, language="cuda")
        _show_ptx(server, cu.as_uri(), "k")
        assert wait_for(lambda: bool(escaped(log)), 30), "nvcc never started"
        pids = escaped(log)
        survivors.extend(pids)
        # the orphan is no child of the watcher, nor carries the mark: only the watcher's notes
        # of the server's tree can find it (a scan every reaper.SCAN_EVERY_S while tools run)
        time.sleep(0.6)
        assert all(alive(p) for p in pids)
        os.kill(server.proc.pid, signal.SIGKILL)
        server.proc.wait(timeout=10)
        assert wait_for(lambda: not any(alive(p) for p in pids), 5), [
            (p, parent(p)) for p in pids if alive(p)
        ]
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
