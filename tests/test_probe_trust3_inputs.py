"""Probe-trust 3, inputs: large documents, open bursts, broken frames' tracebacks, paired files.

Before (issue 25): a 100 MB single-line didOpen stalled every hover 10.5 s, 3,000 didOpens at
once 27 s; pygls wrote a full traceback to stderr for every undecodable message; a ``.cu`` or
``.gputest`` beside a ``.ptx`` was followed through a symlink out of the project, and one
pointing at ``/proc/self/pagemap`` made ``ptxls test`` print a traceback with exit 1.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from raw_lsp import ROOT, RawServer, frame

from ptxls.server.features import lowering_feature
from ptxls.server.large_documents import MAX_DOCUMENT_BYTES

SMALL = ROOT / "examples" / "broken.ptx"
SMALL_TEXT = SMALL.read_text()
LINE = next(i for i, line in enumerate(SMALL_TEXT.splitlines()) if "mad.lo.s32" in line)
COL = SMALL_TEXT.splitlines()[LINE].index("mad") + 1
HEADER = ".version 8.0\n.target sm_90\n.address_size 64\n"
PTXLS = str(Path(sys.executable).with_name("ptxls"))


def timed_hover(
    server: RawServer, uri: str, line: int = LINE, col: int = COL
) -> tuple[float, dict]:
    t = time.monotonic()
    reply = server.hover(uri, line, col, timeout=60)
    return time.monotonic() - t, reply


@pytest.fixture
def server(tmp_path):
    with RawServer(cwd=str(tmp_path)) as s:
        s.initialize(str(tmp_path))
        s.open(SMALL.as_uri(), SMALL_TEXT)
        assert "mad" in str(s.hover(SMALL.as_uri(), LINE, COL, timeout=30).get("result"))
        yield s


def test_a_document_above_the_limit_gets_a_notice_and_no_analysis(server, tmp_path):
    big = (tmp_path / "big.ptx").as_uri()
    server.open(big, HEADER + "// " + "x" * (20 << 20) + "\n")
    took, reply = timed_hover(server, big, 0, 1)
    assert reply["result"] is None and took < 5
    deadline = time.monotonic() + 20
    while not server.latest_diagnostics(big) and time.monotonic() < deadline:
        time.sleep(0.05)
    [notice] = server.latest_diagnostics(big)
    assert "MB" in notice["message"] and ".version 8.0, .target sm_90" in notice["message"]
    worst = max(timed_hover(server, SMALL.as_uri())[0] for _ in range(10))
    assert worst < 1.0, worst  # measured 0.15 s here; was 10.5 s for 100 MB (issue 25)
    # back under the limit: analysed again
    server.notify("textDocument/didChange", {"textDocument": {"uri": big, "version": 2},
                  "contentChanges": [{"text": HEADER}]})  # fmt: skip
    deadline = time.monotonic() + 20
    while server.latest_diagnostics(big) == [notice] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any("MB" in d["message"] for d in server.latest_diagnostics(big))
    assert MAX_DOCUMENT_BYTES < 20 << 20


def test_a_burst_of_opens_does_not_starve_requests(server, tmp_path):
    text = HEADER + ".visible .entry k()\n{\n ret;\n}\n"
    data = b"".join(
        frame(
            {
                "jsonrpc": "2.0",
                "method": "textDocument/didOpen",
                "params": {
                    "textDocument": {
                        "uri": (tmp_path / f"o{i}.ptx").as_uri(),
                        "languageId": "ptx",
                        "version": 1,
                        "text": text,
                    }
                },
            }
        )  # fmt: skip
        for i in range(3000)
    )
    server.send(data)
    took, reply = timed_hover(server, SMALL.as_uri())
    assert "mad" in str(reply.get("result"))
    assert took < 10, took  # was over 60 s (27 s in the issue); ~1.2 s here
    worst = max(timed_hover(server, SMALL.as_uri())[0] for _ in range(10))
    assert worst < 1.0, worst


def test_undecodable_messages_cost_one_log_line_each(server):
    before = len(server.stderr)
    for i in range(20):
        server.send(frame({"jsonrpc": "2.0", "method": "textDocument/didChange",
                           "params": {"textDocument": i}}))  # fmt: skip
        server.send(frame({"jsonrpc": "2.0", "id": 7000 + i, "method": "workspace/executeCommand",
                           "params": {"command": i}}))  # fmt: skip
    for i in range(20):
        server.wait_reply(7000 + i)
    time.sleep(0.5)
    lines = b"".join(server.stderr[before:]).decode(errors="replace").splitlines()
    assert not [x for x in lines if "Traceback" in x or x.startswith((" ", "|", "+"))], lines[:20]
    assert len(lines) <= 20 * 4, len(lines)  # a few one-line records per message, no more


def test_the_sdk_is_imported_off_the_event_loop(monkeypatch):
    seen = []
    monkeypatch.setattr(lowering_feature, "_sdk_import", None)
    monkeypatch.setattr(lowering_feature.importlib, "import_module",
                        lambda name: seen.append((name, threading.current_thread().name)))  # fmt: skip

    async def main():
        await asyncio.gather(lowering_feature.sdk_imported(), lowering_feature.sdk_imported())

    asyncio.run(main())
    assert len(seen) == 1 and seen[0][0] == "openai"
    assert seen[0][1] != threading.main_thread().name


@pytest.mark.skipif(sys.platform != "linux", reason="/proc and FIFOs")
@pytest.mark.parametrize("kind", ["pagemap", "outside", "fifo", "sidecar-outside"])
def test_paired_files_are_resolved_like_source_headers(tmp_path, kind):
    project, outside = tmp_path / "p", tmp_path / "elsewhere"
    project.mkdir()
    outside.mkdir()
    (project / ".git").mkdir()
    (project / "vec_add.ptx").write_text((ROOT / "examples" / "vec_add.ptx").read_text())
    secret = outside / "vec_add.cu"
    secret.write_text((ROOT / "examples" / "vec_add.cu").read_text())
    if kind == "pagemap":
        (project / "vec_add.cu").symlink_to("/proc/self/pagemap")
    elif kind == "outside":
        (project / "vec_add.cu").symlink_to(secret)
    elif kind == "fifo":
        os.mkfifo(project / "vec_add.cu")
    else:
        (outside / "x.gputest").write_text("vec_add: a: in f32[n]; n: size; ref: a = a\n")
        (project / "vec_add.gputest").symlink_to(outside / "x.gputest")
    p = subprocess.run([PTXLS, "test", "vec_add.ptx"], cwd=project, capture_output=True,
                       text=True, timeout=120)  # fmt: skip
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stdout + p.stderr
    assert "vec_add" in p.stderr and "not read" in p.stderr
