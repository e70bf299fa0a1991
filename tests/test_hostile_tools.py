"""Hostile input: a ptxas that misbehaves must not freeze the server, eat its memory or leave
processes behind. A fake ptxas (a shell script) hangs on --version, floods 300 MB of error
output, or forks children that would outlive it; while each goes on, a hover on the open
document must answer promptly, and afterwards none of its processes may remain.

Driven through the real server process over stdio (tests/raw_lsp.py)."""

from __future__ import annotations

import os
import stat
import statistics
import time
import uuid
from pathlib import Path

import pytest
from raw_lsp import ROOT, RawServer

TEXT = (ROOT / "examples" / "vec_add.ptx").read_text()
HOVER_LINE = next(i for i, line in enumerate(TEXT.splitlines()) if "ld.global" in line)
HOVER_COL = TEXT.splitlines()[HOVER_LINE].index("ld.global") + 1
# The budget from the issue; CI machines are noisy, so the median must meet it and every
# single hover must stay within a generous multiple of it.
HOVER_BUDGET_S = 0.2
HOVER_WORST_S = 1.5

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")


def fake_ptxas(tmp_path: Path, *, version: str = "", work: str = "") -> Path:
    """A ptxas that runs ``version`` on --version (default: answer like CUDA 13.0) and ``work``
    for everything else (default: succeed silently)."""
    path = tmp_path / "ptxas"
    answer = 'echo "Cuda compilation tools, release 13.0, V13.0.88"'
    path.write_text(
        "#!/bin/bash\n"
        'if [ "$1" = --version ]; then\n'
        f"{version or answer}\n"
        "exit 0\nfi\n"
        'case "$*" in *probe.ptx*) echo "ptxas fatal : Unsupported .version 99.9; '
        "current version is '9.0'\" >&2; exit 1;; esac\n"
        f"{work or 'exit 0'}\n"
    )
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def processes_with(marker: str) -> list[int]:
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes()
            state = (d / "status").read_text()
        except OSError:
            continue
        if marker.encode() in cmd and "zombie" not in state:
            found.append(int(d.name))
    return found


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def hovers_while(server: RawServer, uri: str, busy, seconds: float) -> list[float]:
    """Hover repeatedly for ``seconds`` (or until ``busy()`` is false); the latencies."""
    times = []
    end = time.monotonic() + seconds
    while time.monotonic() < end and busy():
        t0 = time.monotonic()
        reply = server.hover(uri, HOVER_LINE, HOVER_COL, timeout=10)
        times.append(time.monotonic() - t0)
        assert "ld" in str(reply.get("result")), reply
        time.sleep(0.05)
    return times


def assert_prompt(times: list[float]) -> None:
    assert times, "no hover was measured while the tool misbehaved"
    assert statistics.median(times) < HOVER_BUDGET_S, times
    assert max(times) < HOVER_WORST_S, times


def start(tmp_path: Path, ptxas: Path, **settings) -> tuple[RawServer, str]:
    server = RawServer(cwd=str(tmp_path))
    server.initialize(str(tmp_path), {"ptxls": {"ptxasPath": str(ptxas), "debounceMs": 0,
                                                **settings}})  # fmt: skip
    uri = (tmp_path / "k.ptx").as_uri()
    server.open(uri, TEXT)
    return server, uri


def test_ptxas_hanging_on_version_neither_freezes_nor_outlives(tmp_path):
    marker = f"ptxls-hang-{uuid.uuid4().hex[:8]}"
    ptxas = fake_ptxas(tmp_path, version=f"exec -a {marker} sleep 300")
    server, uri = start(tmp_path, ptxas, ptxasTimeoutSeconds=3)
    with server:
        deadline = time.monotonic() + 10
        while not processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert processes_with(marker), "the fake ptxas --version never started"
        times = hovers_while(server, uri, lambda: bool(processes_with(marker)), 8)
        assert_prompt(times)
        # killed at the probe timeout (3 s), with its process group
        deadline = time.monotonic() + 6
        while processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not processes_with(marker)
        assert "ld" in str(server.hover(uri, HOVER_LINE, HOVER_COL).get("result"))


def test_ptxas_flooding_300mb_keeps_memory_bounded(tmp_path):
    line = "ptxas k.ptx, line 5; error   : Unknown symbol 'x_undefined_name'\n"
    # 300 MB of error lines on stderr (~5 million lines), then a failing exit.
    work = f'yes "{line.strip()}" | head -c 300000000 >&2\nexit 255'
    ptxas = fake_ptxas(tmp_path, work=work)
    server, uri = start(tmp_path, ptxas, maxProblems=100)
    with server:
        pid = server.proc.pid
        base = rss_mb(pid)
        peak = base
        t_end = time.monotonic() + 60
        times = []
        got = None
        while time.monotonic() < t_end:
            t0 = time.monotonic()
            server.hover(uri, HOVER_LINE, HOVER_COL, timeout=10)
            times.append(time.monotonic() - t0)
            peak = max(peak, rss_mb(pid))
            got = server.latest_diagnostics(uri)
            if got and any("Unknown symbol" in d["message"] for d in got):
                break
            time.sleep(0.05)
        assert got and any("Unknown symbol" in d["message"] for d in got), "no ptxas diagnostics"
        assert len(got) <= 100 + 5  # capped at maxProblems (+ the "more not shown" notes)
        assert any("not shown" in d["message"] for d in got)
        assert_prompt(times)
        # 300 MB read whole was 1.3 GB of RSS; capped reading keeps it to tens of MB
        assert peak - base < 150, (base, peak)


def test_ptxas_children_that_would_outlive_it_are_killed(tmp_path):
    marker = f"ptxls-orphan-{uuid.uuid4().hex[:8]}"
    # Two children in the background hold ptxas's stdout/stderr open, then ptxas exits.
    work = f"(exec -a {marker} sleep 300) &\n(exec -a {marker} sleep 300) &\nexit 0"
    ptxas = fake_ptxas(tmp_path, work=work)
    server, uri = start(tmp_path, ptxas)
    with server:
        deadline = time.monotonic() + 20
        seen = False
        times = []
        while time.monotonic() < deadline:
            seen = seen or bool(processes_with(marker))
            t0 = time.monotonic()
            server.hover(uri, HOVER_LINE, HOVER_COL)
            times.append(time.monotonic() - t0)
            if seen and not processes_with(marker) and server.latest_diagnostics(uri) is not None:
                break
            time.sleep(0.05)
        assert seen, "the fake ptxas never started its children"
        assert not processes_with(marker), "children of ptxas outlived it"
        assert_prompt(times)


def test_missing_ptxls_ptxas_is_reported_not_skipped(tmp_path):
    missing = tmp_path / "no-such-ptxas"
    server = RawServer(cwd=str(tmp_path), env={"PTXLS_PTXAS": str(missing)})
    with server:
        server.initialize(str(tmp_path), {"ptxls": {"debounceMs": 0}})
        uri = (tmp_path / "k.ptx").as_uri()
        server.open(uri, TEXT)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if any("PTXLS_PTXAS" in m for m in server.messages()):
                break
            server.hover(uri, HOVER_LINE, HOVER_COL)
            time.sleep(0.1)
        assert any(str(missing) in m and "PTXLS_PTXAS" in m for m in server.messages())


def test_process_runner_caps_output_and_kills_the_group(tmp_path):
    """The runner alone: 50 MB of output keeps 4 MB and counts the rest; a timeout kills the
    children too."""
    import asyncio

    from ptxls.toolchain import process

    res = asyncio.run(process.run_killable(
        ["bash", "-c", "head -c 50000000 /dev/zero >&2; echo done"], timeout=30))  # fmt: skip
    assert res.returncode == 0 and res.stdout.strip() == "done"
    assert res.dropped_bytes == 50_000_000 - process.MAX_OUTPUT_BYTES
    assert "more bytes of output not kept" in res.stderr
    marker = f"ptxls-tmo-{uuid.uuid4().hex[:8]}"
    t0 = time.monotonic()
    res = asyncio.run(process.run_killable(
        ["bash", "-c", f"(exec -a {marker} sleep 300) & exec -a {marker} sleep 300"],
        timeout=1))  # fmt: skip
    assert res.timed_out and time.monotonic() - t0 < 5
    time.sleep(0.2)
    assert not processes_with(marker)
    assert os.getpgid(0)  # we were not killed along with it
