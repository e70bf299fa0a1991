"""Hostile input: a 5 MB kernel name is not echoed into messages, progress titles or command
results (it was, whole, into the GPU-test progress title and summaries)."""

from __future__ import annotations

import json
import time

from raw_lsp import RawServer

NAME = "k" * (5 << 20)
PTX = f""".version 8.0
.target sm_80
.address_size 64

.visible .entry {NAME}(.param .u64 a)
{{
    ret;
}}
"""
LIMIT = 64 << 10  # no message, title or result the server sends about it may be this large


def test_a_5mb_kernel_name_is_cut_everywhere(tmp_path):
    uri = (tmp_path / "long.ptx").as_uri()
    with RawServer(cwd=str(tmp_path)) as server:
        server.initialize(str(tmp_path), {"ptxls": {"debounceMs": 0}})
        server.open(uri, PTX)
        deadline = time.monotonic() + 60
        while server.latest_diagnostics(uri) is None and time.monotonic() < deadline:
            time.sleep(0.1)
        start = len(server.notifications)
        rid = server.request("workspace/executeCommand", {
            "command": "ptxls.runGpuTest", "arguments": [uri, NAME]})  # fmt: skip
        result = server.wait_reply(rid, timeout=120)["result"]
        assert len(json.dumps(result)) < LIMIT, len(json.dumps(result))
        rid = server.request("workspace/executeCommand", {
            "command": "ptxls.runGpuTest", "arguments": [uri, NAME, "x" * (5 << 20)]})  # fmt: skip
        server.wait_reply(rid, timeout=120)
        sent = server.notifications[start:]
        big = [(m, n) for m, n, _ in sent if m != "textDocument/publishDiagnostics" and n > LIMIT]
        assert not big, big
        titles = [p["value"].get("title", "") for m, _, p in sent
                  if m == "$/progress" and isinstance(p.get("value"), dict)]  # fmt: skip
        assert all(len(t) < 300 for t in titles), [len(t) for t in titles]
