"""``ptxls doctor`` reports issue 12's tools: nvdisasm and cuobjdump (Show SASS), compute-sanitizer
(``ptxls test --sanitize``) and Triton (Triton as a source) — each with its path and version as
the toolchain room finds it, or "not found" with how to get it. They are optional: a missing one
never changes the exit code (only a missing ptxas does)."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from ptxls.cli import doctor
from ptxls.toolchain.disasm import find_cuobjdump, find_nvdisasm

ROOT = Path(__file__).resolve().parent.parent


def ptxls(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ptxls.cli.main", *args], capture_output=True, text=True,
        timeout=120, cwd=ROOT, env={**os.environ, **env},
    )  # fmt: skip


def fake_tool(tmp_path: Path, name: str, script: str) -> str:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)
    return str(path)


def rows(stdout: str) -> dict[str, str]:
    """'  compute-sanitizer 2025.3 at ...' → {'compute-sanitizer': '2025.3 at ...'}."""
    out = {}
    for line in stdout.splitlines()[1:]:
        key, _, value = line.strip().partition(" ")
        out.setdefault(key, value.strip())
    return out


def test_found_tools_show_path_and_version_as_discovery_finds_them(tmp_path):
    sanitizer = fake_tool(tmp_path, "compute-sanitizer", "echo 'NVIDIA (R) Compute Sanitizer'\n"
                          "echo 'Version 2025.3.1.0 (build 36398661)'\n")  # fmt: skip
    python = fake_tool(tmp_path, "python-with-triton", "echo 3.6.0\n")
    r = ptxls("doctor", PTXLS_COMPUTE_SANITIZER=sanitizer, PTXLS_TRITON_PYTHON=python)
    assert r.returncode == 0, r.stderr
    got = rows(r.stdout)
    assert got["compute-sanitizer"] == f"2025.3.1.0 at {sanitizer} (PTXLS_COMPUTE_SANITIZER)"
    assert got["triton"] == "3.6.0"
    for name, find in (("nvdisasm", find_nvdisasm), ("cuobjdump", find_cuobjdump)):
        tool = find()  # the same answer as Show SASS gets (the wheels are dependencies)
        assert got[name] == f"{tool.version} at {tool.path} ({tool.origin})"
    info = json.loads(ptxls("doctor", "--json", PTXLS_COMPUTE_SANITIZER=sanitizer).stdout)
    assert info["compute_sanitizer"] == {
        "path": sanitizer, "version": "2025.3.1.0", "origin": "PTXLS_COMPUTE_SANITIZER",
    }  # fmt: skip
    assert set(info["nvdisasm"]) == {"path", "version", "origin"}


def test_missing_tools_are_reported_with_how_to_get_them_and_exit_0(tmp_path):
    no_triton = fake_tool(tmp_path, "python-without-triton", "exit 1\n")
    r = ptxls("doctor", PTXLS_COMPUTE_SANITIZER="/no/cs", PTXLS_NVDISASM="/no/nvdisasm",
              PTXLS_CUOBJDUMP="/no/cuobjdump", PTXLS_TRITON_PYTHON=no_triton)  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr  # optional tools: reported, not an error
    got = rows(r.stdout)
    assert got["compute-sanitizer"].startswith("not found: PTXLS_COMPUTE_SANITIZER=/no/cs")
    assert got["nvdisasm"].startswith("not found: PTXLS_NVDISASM=/no/nvdisasm")
    assert "pip install nvidia-cuda-nvdisasm" in got["nvdisasm"]
    assert got["cuobjdump"].startswith("not found: PTXLS_CUOBJDUMP=/no/cuobjdump")
    assert got["triton"] == f"not installed — pip install 'ptxls[triton]' (in {no_triton})"
    md = ptxls("doctor", "--format", "markdown", PTXLS_COMPUTE_SANITIZER="/no/cs").stdout
    assert "| compute-sanitizer | not found: PTXLS_COMPUTE_SANITIZER=/no/cs" in md


def test_triton_in_this_interpreter_is_read_from_its_metadata(monkeypatch):
    """No import of triton (seconds): the installed distribution's version, or how to get it."""
    import importlib.metadata as md

    monkeypatch.setattr(doctor, "triton_python", lambda: sys.executable)
    monkeypatch.setattr(md, "version", lambda name: {"triton": "3.9.0"}[name])
    assert doctor._triton() == {"version": "3.9.0", "python": sys.executable}

    def missing(name):
        raise md.PackageNotFoundError(name)

    monkeypatch.setattr(md, "version", missing)
    assert doctor._triton()["error"] == "not installed — pip install 'ptxls[triton]'"


def test_values_start_in_one_column_past_the_longest_name():
    out = io.StringIO()
    doctor.run_doctor(fmt="text", out=out)
    starts = {
        m.end()
        for line in out.getvalue().splitlines()
        if (
            m := re.match(
                r"  (ptxas|nvcc|NVRTC|nvdisasm|cuobjdump|compute-sanitizer|triton) +", line
            )
        )
    }
    assert len(starts) == 1, out.getvalue()
