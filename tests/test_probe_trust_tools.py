"""Probe-trust, tools and settings: a buffer whose URI names no usable file (``%00``, a name
longer than the file system allows, ``file:///``) still gets its tools run, and settings of the
right type but an absurd value (a ptxas timeout of -1, 1e308, NaN) fall back to the default
with a message instead of switching diagnostics off or never timing out."""

from __future__ import annotations

import asyncio
import math
import stat
import time
from pathlib import Path

import pytest
from raw_lsp import ROOT, RawServer

from ptxls.server.settings import settings_from_dict
from ptxls.toolchain.discovery import Tool
from ptxls.toolchain.nvcc import nvcc_to_ptx
from ptxls.toolchain.process import scratch_name

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux")

TEXT = (ROOT / "examples" / "vec_add.ptx").read_text()
MARK = "zzz_probe_marker"


def fake_ptxas(tmp_path: Path) -> Path:
    """Answers --version like CUDA 13.0 and reports one error naming MARK for any file."""
    path = tmp_path / "ptxas"
    path.write_text(
        "#!/bin/bash\n"
        'if [ "$1" = --version ]; then\n'
        'echo "Cuda compilation tools, release 13.0, V13.0.88"; exit 0\nfi\n'
        'case "$*" in *probe.ptx*) echo "ptxas fatal : Unsupported .version 99.9; '
        "current version is '9.0'\" >&2; exit 1;; esac\n"
        f"echo \"ptxas input.ptx, line 5; error   : Unknown symbol '{MARK}'\" >&2\nexit 1\n"
    )
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def wait_for_marker(server: RawServer, uri: str, timeout: float = 20.0) -> list:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = server.latest_diagnostics(uri) or []
        if any(MARK in d["message"] for d in got):
            return got
        time.sleep(0.05)
    return server.latest_diagnostics(uri) or []


@pytest.mark.parametrize("value", [-1, 0.5, 1e308])
def test_absurd_ptxas_timeout_falls_back_to_the_default(tmp_path, value):
    # -1 timed every ptxas run out at once (no tool diagnostics at all, for good); 1e308 and
    # NaN never fire. A cloned repository's settings file can set it.
    ptxas = fake_ptxas(tmp_path)
    with RawServer(cwd=str(tmp_path)) as server:
        server.initialize(str(tmp_path), {"ptxls": {
            "ptxasPath": str(ptxas), "debounceMs": 0, "ptxasTimeoutSeconds": value}})  # fmt: skip
        uri = (tmp_path / "k.ptx").as_uri()
        server.open(uri, TEXT)
        got = wait_for_marker(server, uri)
        assert any(MARK in d["message"] for d in got), got
        assert any("ptxasTimeoutSeconds" in m and "out of range" in m for m in server.log)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1.0, 1e308, 0.0])
def test_settings_ranges(value):
    s, problems = settings_from_dict(
        {"ptxasTimeoutSeconds": value, "maxProblems": -5, "saveOnlyAboveBytes": -1}
    )
    assert math.isfinite(s.ptxas_timeout_seconds) and s.ptxas_timeout_seconds >= 1
    assert s.max_problems > 0 and s.save_only_above_bytes >= 0
    assert len(problems) == 3


@pytest.mark.parametrize(
    "uri",
    [
        "file:///tmp/ptxls-probe/" + "a" * 5000 + ".ptx",  # ENAMETOOLONG: ptxas never ran
        "file:///tmp/ptxls-probe/a%00b.ptx",
        "file:///",
    ],
    ids=["5000-char-name", "nul", "no-name"],
)
def test_ptxas_runs_whatever_the_uri_names(tmp_path, uri):
    ptxas = fake_ptxas(tmp_path)
    with RawServer(cwd=str(tmp_path)) as server:
        server.initialize(str(tmp_path), {"ptxls": {"ptxasPath": str(ptxas), "debounceMs": 0}})
        server.open(uri, TEXT)
        got = wait_for_marker(server, uri)
        assert any(MARK in d["message"] for d in got), got


def fake_nvcc(tmp_path: Path) -> Tool:
    path = tmp_path / "nvcc"
    path.write_text(
        "#!/bin/bash\n"
        'out=""; prev=""\n'
        'for a in "$@"; do [ "$prev" = -o ] && out="$a"; prev="$a"; done\n'
        'src="${@: -1}"\n'
        'test -f "$src" || { echo "no source $src" >&2; exit 2; }\n'
        'echo "// from $(basename "$src")" > "$out"\n'
    )
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return Tool("nvcc", str(path), "setting", "13.0")


@pytest.mark.parametrize(
    "file_path",
    ["/tmp/x/a\0b.cu", "/tmp/x/" + "c" * 5000 + ".cu", "/tmp/x/out.ptx", "/tmp/x/a\nb.cu", ""],
    ids=["nul", "5000-chars", "the-output-name", "newline", "empty"],
)
def test_nvcc_runs_whatever_the_path_is_called(tmp_path, file_path):
    # '%00' in a URI was a ValueError from Show PTX ('embedded null byte', an internal error),
    # a long name an OSError (ENAMETOOLONG) reported as 'could not start nvcc'.
    run = asyncio.run(nvcc_to_ptx("__global__ void k() {}", fake_nvcc(tmp_path),
                                  file_path=file_path, timeout=30))  # fmt: skip
    assert run.ptx is not None, run.result.stderr
    assert run.source_name == "input.cu" or run.source_name == Path(file_path).name


def test_scratch_name_keeps_plain_names():
    assert scratch_name("vec add é.cu", "input.cu") == "vec add é.cu"
    assert scratch_name("c:\\work\\k.ptx", "input.ptx") == "k.ptx"
    assert scratch_name("out.cubin", "input.ptx", reserved=("out.cubin",)) == "input.ptx"
