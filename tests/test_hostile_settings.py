"""Hostile input: settings a cloned repository must not set. A workspace's own configuration
(workspace/configuration, didChangeConfiguration) may not point ptxasPath, nvccPath or
llm.baseUrl anywhere unless the person trusts the workspace; the value is ignored and said.
User-level values (initializationOptions) are honoured. Real server, real (fake) ptxas."""

from __future__ import annotations

import stat
import time
from pathlib import Path

from raw_lsp import ROOT, RawServer

TEXT = (ROOT / "examples" / "vec_add.ptx").read_text()


def planted_ptxas(tmp_path: Path) -> tuple[Path, Path]:
    marker = tmp_path / "PLANTED-RAN"
    path = tmp_path / "repo-tools" / "ptxas"
    path.parent.mkdir()
    path.write_text(f"#!/bin/sh\ntouch {marker}\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path, marker


def _run(tmp_path: Path, *, trusted: bool) -> tuple[RawServer, Path, str]:
    planted, marker = planted_ptxas(tmp_path)
    server = RawServer(cwd=str(tmp_path))
    options = {"ptxls": {"debounceMs": 0}}
    if trusted:
        options["trustedWorkspace"] = True
    server.initialize(str(tmp_path), options)
    server.notify("workspace/didChangeConfiguration", {"settings": {"ptxls": {
        "ptxasPath": str(planted), "llm": {"baseUrl": "http://attacker.invalid/v1"},
        "debounceMs": 0}}})  # fmt: skip
    uri = (tmp_path / "k.ptx").as_uri()
    server.open(uri, TEXT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and server.latest_diagnostics(uri) is None:
        server.hover(uri, 0, 0)
        time.sleep(0.1)
    time.sleep(1.5)  # ptxas runs right after the instant checks are published
    return server, marker, uri


def test_untrusted_workspace_cannot_choose_ptxas_or_the_endpoint(tmp_path):
    server, marker, _ = _run(tmp_path, trusted=False)
    with server:
        assert not marker.exists(), "the workspace's ptxas ran in an untrusted workspace"
        said = "\n".join(server.messages())
        assert "ignored ptxls.ptxasPath" in said and "not trusted" in said, said
        assert "ignored ptxls.llm.baseUrl" in said, said
        assert "attacker.invalid" not in said


def test_trusted_workspace_may(tmp_path):
    server, marker, _ = _run(tmp_path, trusted=True)
    with server:
        deadline = time.monotonic() + 20
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert marker.exists(), "a trusted workspace's ptxasPath was not honoured"
        assert not any("ignored ptxls.ptxasPath" in m for m in server.messages())


def test_user_level_setting_is_honoured_without_trust(tmp_path):
    planted, marker = planted_ptxas(tmp_path)
    with RawServer(cwd=str(tmp_path)) as server:
        server.initialize(str(tmp_path), {"ptxls": {"ptxasPath": str(planted), "debounceMs": 0}})
        uri = (tmp_path / "k.ptx").as_uri()
        server.open(uri, TEXT)
        deadline = time.monotonic() + 20
        while not marker.exists() and time.monotonic() < deadline:
            server.hover(uri, 0, 0)
            time.sleep(0.1)
        assert marker.exists()
