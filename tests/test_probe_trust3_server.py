"""Probe-trust 3, the server: nothing blocks the loop, everything can be cancelled, nothing
outlives the server. Real server process over raw stdio; the hung tools are shell scripts set
as nvccPath/ptxasPath (the user-level configuration: initializationOptions) that record their
pids and sleep.

Before (issue 25): Show PTX read a file that is not open with Path.read_text on the event
loop (a FIFO froze the server for good, /dev/zero until MemoryError); cancelling 50 Show PTX
left 50 nvcc alive 70 s later; a ptxas hanging on its version probe got a new probe per edit,
``exit`` took 29 s and a killed server left 6 process groups behind.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest
from raw_lsp import RawServer

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs, signals, shell tools")

CU = "__global__ void k(float *x) { x[0] = 1.0f; }\n"


def hung_tool(tmp: Path, name: str, version: str | None) -> tuple[Path, Path]:
    """A tool that answers --version (when ``version``) and otherwise records its argv and pid
    and sleeps ten minutes."""
    log = tmp / f"{name}.log"
    script = tmp / name
    answer = f'echo "{version}"; exit 0' if version else "exec sleep 600"
    script.write_text(
        "#!/bin/sh\n"
        f'case "$1" in --version) echo "$$ --version" >> {log}; {answer};; esac\n'
        f'echo "$$ $*" >> {log}\n'
        "exec sleep 600\n"
    )
    script.chmod(0o755)
    return script, log


def pids(log: Path, needle: str = "") -> list[int]:
    if not log.exists():
        return []
    return [int(line.split()[0]) for line in log.read_text().splitlines() if needle in line]


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def wait_for(cond, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def show_ptx(server: RawServer, uri: str, kernel: str) -> int:
    return server.request(
        "workspace/executeCommand", {"command": "ptxls.showPtx", "arguments": [uri, kernel]}
    )


def hover_ms(server: RawServer, uri: str) -> float:
    t = time.monotonic()
    server.hover(uri, 0, 1, timeout=10)
    return (time.monotonic() - t) * 1000


@pytest.fixture
def project(tmp_path):
    (tmp_path / ".git").mkdir()
    return tmp_path


def test_a_fifo_or_device_named_by_a_command_is_refused_and_the_loop_stays_free(project):
    fifo = project / "hang.cu"
    os.mkfifo(fifo)
    (project / "link.cu").symlink_to("/dev/zero")
    ptx = project / "a.ptx"
    ptx.write_text(".version 8.0\n.target sm_90\n.address_size 64\n")
    with RawServer(cwd=str(project)) as server:
        server.initialize(str(project))
        server.open(ptx.as_uri(), ptx.read_text())
        for target in (fifo.as_uri(), "file:///dev/zero", (project / "link.cu").as_uri(),
                       "file:///proc/self/pagemap"):  # fmt: skip
            t = time.monotonic()
            reply = server.wait_reply(show_ptx(server, target, "k"), timeout=10)
            assert time.monotonic() - t < 3, target
            summary = reply["result"]["summary"]
            assert reply["result"]["ok"] is False and "not" in summary, summary
            rid = server.request(
                "workspace/executeCommand",
                {"command": "ptxls.lowerToPtx", "arguments": [target, "k", "nvcc"]},
            )
            assert server.wait_reply(rid, timeout=10)["result"]["ok"] is False
        assert hover_ms(server, ptx.as_uri()) < 1000


def test_cancelled_commands_stop_their_processes(project):
    nvcc, log = hung_tool(project, "nvcc", "Cuda compilation tools, release 13.0, V13.0.88")
    cu = project / "k.cu"
    cu.write_text(CU)
    with RawServer(cwd=str(project)) as server:
        server.initialize(str(project), {"nvccPath": str(nvcc)})
        server.open(cu.as_uri(), CU, language="cuda")
        ids = [show_ptx(server, cu.as_uri(), f"k{i}") for i in range(50)]
        assert wait_for(lambda: len(pids(log, "-lineinfo")) >= 10, 30), "nvcc never started"
        for rid in ids:
            server.notify("$/cancelRequest", {"id": rid})
        for rid in ids:
            assert server.wait_reply(rid, timeout=20)["error"]["code"] == -32800
        started = pids(log, "-lineinfo")
        assert wait_for(lambda: not any(alive(p) for p in pids(log, "-lineinfo")), 5), [
            p for p in pids(log, "-lineinfo") if alive(p)
        ]
        # a newer request for the same thing replaces the older one (which still answers)
        first = show_ptx(server, cu.as_uri(), "k")
        assert wait_for(lambda: len(pids(log, "-lineinfo")) > len(started), 10)
        second = show_ptx(server, cu.as_uri(), "k")
        assert server.wait_reply(first, timeout=10)["result"]["status"] == "cancelled"
        assert wait_for(lambda: sum(alive(p) for p in pids(log, "-lineinfo")) == 1, 5)
        server.notify("$/cancelRequest", {"id": second})
        server.wait_reply(second, timeout=10)
        assert wait_for(lambda: not any(alive(p) for p in pids(log, "-lineinfo")), 5)


def test_a_hung_version_probe_runs_once_and_exit_is_prompt(project):
    ptxas, log = hung_tool(project, "ptxas", None)  # hangs on the ISA probe and on builds
    ptx = project / "a.ptx"
    text = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n ret;\n}\n"
    ptx.write_text(text)
    with RawServer(cwd=str(project)) as server:
        server.initialize(str(project), {"ptxasPath": str(ptxas), "ptxasTimeoutSeconds": 2})
        server.open(ptx.as_uri(), text)
        for v in range(2, 6):
            server.notify("textDocument/didChange", {
                "textDocument": {"uri": ptx.as_uri(), "version": v},
                "contentChanges": [{"text": text + f"// edit {v}\n"}]})  # fmt: skip
            time.sleep(0.4)
        assert wait_for(lambda: len(pids(log, "probe.ptx")) >= 1, 10)
        time.sleep(1.0)
        assert len(pids(log, "--version")) == 1, log.read_text()
        assert len(pids(log, "probe.ptx")) == 1, log.read_text()  # was one per edit
        assert hover_ms(server, ptx.as_uri()) < 1000
        server.wait_reply(server.request("shutdown"), timeout=5)
        t = time.monotonic()
        server.notify("exit")
        code = server.proc.wait(timeout=10)
        took = time.monotonic() - t
    assert code == 0 and took < 1.0, took  # was 29 s
    assert wait_for(lambda: not any(alive(p) for p in pids(log)), 3)


def test_a_killed_server_leaves_no_process_behind(project):
    nvcc, log = hung_tool(project, "nvcc", "Cuda compilation tools, release 13.0, V13.0.88")
    cu = project / "k.cu"
    cu.write_text(CU)
    server = RawServer(cwd=str(project))
    try:
        server.initialize(str(project), {"nvccPath": str(nvcc)})
        server.open(cu.as_uri(), CU, language="cuda")
        for i in range(3):
            show_ptx(server, cu.as_uri(), f"k{i}")
        assert wait_for(lambda: len(pids(log, "-lineinfo")) >= 3, 30)
        os.kill(server.proc.pid, signal.SIGKILL)
        server.proc.wait(timeout=10)
        assert wait_for(lambda: not any(alive(p) for p in pids(log)), 5), [
            p for p in pids(log) if alive(p)
        ]
    finally:
        if server.proc.poll() is None:
            server.proc.kill()


def test_wrongly_typed_and_huge_command_arguments_get_a_clear_small_answer(project):
    cu = project / "k.cu"
    cu.write_text(CU)
    with RawServer(cwd=str(project)) as server:
        server.initialize(str(project))
        server.open(cu.as_uri(), CU, language="cuda")
        for kernel in ({"a": 1}, [1, 2], 5):
            rid = server.request("workspace/executeCommand", {
                "command": "ptxls.lowerToPtx", "arguments": [cu.as_uri(), kernel, "nvcc"]})  # fmt: skip
            summary = server.wait_reply(rid, timeout=10)["result"]["summary"]
            assert "kernel name must be a str" in summary and "unhashable" not in summary
        huge = "k" * 5_000_000
        for command in ("ptxls.lowerToPtx", "ptxls.showPtx", "ptxls.runGpuTest"):
            rid = server.request("workspace/executeCommand", {
                "command": command, "arguments": [cu.as_uri(), huge, "nvcc"]})  # fmt: skip
            reply = server.wait_reply(rid, timeout=30)
            assert len(str(reply)) < 2000, (command, len(str(reply)))
