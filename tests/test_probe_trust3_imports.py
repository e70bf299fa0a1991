"""Probe-trust 3, imports: a cloned repository's own Python never runs.

The folder every command starts in holds a hostile ``ptxls/`` package, ``numpy/`` (or
``numpy.py``), ``cuda/``, ``sitecustomize.py`` and ``usercustomize.py``; each writes a marker file
when imported. Before: the GPU worker started as ``python -m ptxls.gputest.worker`` in that folder
imported its ``ptxls/``, on ``ptxls test``, ``ptxls demo``, ``ptxls lower --backend llm`` and "Run
GPU test" in a server started there. Now every Python child is isolated
(``toolchain/isolated.py``) and runs in a private folder; no marker may appear. No GPU is
needed: without one the worker still starts and answers "no device".
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from raw_lsp import ROOT, RawServer

from ptxls.gputest.supervisor import default_command
from ptxls.toolchain.isolated import python_command, vetted_path

from scripted_llm import GOOD_VEC_ADD, ScriptedLLM, Step, fenced

PTXLS = str(Path(sys.executable).with_name("ptxls"))  # the console script: no cwd on sys.path
HOSTILE_MODULES = ("ptxls", "numpy", "cuda")


def plant(folder: Path, markers: Path, *, numpy_as_file: bool = False, ptxls: bool = True) -> None:
    def body(name: str) -> str:
        return f"open({str(markers / name)!r}, 'w').write('imported from the workspace')\n"

    for name in HOSTILE_MODULES:
        if name == "ptxls" and not ptxls:
            continue
        if name == "numpy" and numpy_as_file:
            (folder / "numpy.py").write_text(body("numpy.py"))
            continue
        (folder / name).mkdir()
        (folder / name / "__init__.py").write_text(body(name))
    for name in ("sitecustomize", "usercustomize"):
        (folder / f"{name}.py").write_text(body(name))
    for example in ("vec_add.ptx", "vec_add.cu", "vec_add_triton.py"):
        (folder / example).write_text((ROOT / "examples" / example).read_text())


@pytest.fixture(params=["numpy-package", "numpy-module"])
def hostile(request, tmp_path):
    folder, markers = tmp_path / "repo", tmp_path / "markers"
    folder.mkdir()
    markers.mkdir()
    plant(folder, markers, numpy_as_file=request.param == "numpy-module")
    return folder, markers


def clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(extra)
    return env


def run(folder: Path, *args, env=None, timeout=240) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PTXLS, *args], cwd=folder, env=env or clean_env(), capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip


def assert_no_marker(markers: Path, p=None) -> None:
    found = sorted(x.name for x in markers.iterdir())
    assert not found, f"imported from the workspace: {found}" + (
        f"\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}" if p is not None else ""
    )


def test_every_python_child_is_started_isolated():
    for command in (default_command(), default_command("cpu"), python_command("ptxls.x")):
        assert command[1:3] == ["-I", "-u"], command
    # '' and relative PYTHONPATH entries mean "the working directory": never passed on
    assert vetted_path({"PYTHONPATH": os.pathsep.join(["", ".", "rel/dir", "/nonexistent"])}) == []
    assert vetted_path({"PYTHONPATH": str(ROOT)}) == [str(ROOT)]


def test_ptxls_test_starts_the_worker_without_importing_the_folder(hostile):
    folder, markers = hostile
    p = run(folder, "test", "vec_add.ptx")
    # 3: no GPU here (the GPU worker started and said so), 5: passed on the CPU emulator's worker
    assert p.returncode in (0, 1, 3, 5), p.stderr
    assert_no_marker(markers, p)


def test_ptxls_demo(hostile):
    folder, markers = hostile
    p = run(folder, "demo")
    assert p.returncode in (0, 3, 5), p.stderr
    assert_no_marker(markers, p)


def test_ptxls_doctor_probe_and_triton_version(hostile):
    folder, markers = hostile
    p = run(folder, "doctor", env=clean_env(PTXLS_TRITON_PYTHON=sys.executable))
    assert "ptxas" in p.stdout, p.stdout + p.stderr
    assert_no_marker(markers, p)


def test_ptxls_lower_llm_with_its_gpu_check(tmp_path):
    folder, markers = tmp_path / "repo", tmp_path / "markers"
    folder.mkdir()
    markers.mkdir()
    plant(folder, markers)
    with ScriptedLLM([Step(fenced(GOOD_VEC_ADD))] * 3) as llm:
        env = clean_env(
            OPENAI_BASE_URL=llm.base_url, PTXLS_MODEL="scripted-model",
            XDG_CACHE_HOME=str(tmp_path / "cache"),
        )  # fmt: skip
        env.pop("OPENAI_API_KEY", None)
        p = run(folder, "lower", "vec_add.cu", "--backend", "llm", "--candidates", "1", env=env)
    assert llm.requests, p.stderr  # the model was asked: the loop ran to its GPU check
    assert p.returncode in (0, 1, 4, 5), p.stderr  # 5: tested on the CPU emulator's worker
    assert_no_marker(markers, p)


def test_ptxls_lower_triton(tmp_path):
    pytest.importorskip("triton")
    folder, markers = tmp_path / "repo", tmp_path / "markers"
    folder.mkdir()
    markers.mkdir()
    plant(folder, markers)
    p = run(folder, "lower", "vec_add_triton.py", "--backend", "triton")
    assert p.returncode == 0, p.stdout + p.stderr
    assert (folder / "add_kernel.ptx").is_file()
    assert_no_marker(markers, p)


def _server_run_gpu_test(server: RawServer, folder: Path) -> dict:
    server.initialize(str(folder))
    uri = (folder / "vec_add.ptx").as_uri()
    server.open(uri, (folder / "vec_add.ptx").read_text())
    rid = server.request(
        "workspace/executeCommand", {"command": "ptxls.runGpuTest", "arguments": [uri, "vec_add"]}
    )
    return server.wait_reply(rid, 180)


@pytest.mark.parametrize(
    "how",
    [
        # the console script (README's Neovim setup): nothing of the folder on sys.path
        "script",
        # `python -m ptxls.server serve` started in the folder: Python itself imports a ptxls/
        # found there before any line of ptxls runs (SECURITY.md), so that folder holds the
        # rest; the server drops the folder from sys.path before its first import
        "python -m",
        # the VS Code extension's default: `python -m ptxls.server serve` in its own storage
        # folder (vscode-client/src/server.ts), the workspace being the hostile folder, which
        # holds a ptxls/ too (its preflight and probe: vscode-client/test/hostileFolder.test.ts)
        "extension",
    ],
)
def test_server_started_in_the_folder_and_its_gpu_test(tmp_path, how):
    folder, markers = tmp_path / "repo", tmp_path / "markers"
    folder.mkdir()
    markers.mkdir()
    plant(folder, markers, ptxls=how != "python -m")
    command = [PTXLS, "serve"] if how == "script" else None
    cwd = folder
    if how == "extension":
        cwd = tmp_path / "globalStorage"
        cwd.mkdir(mode=0o700)
    with RawServer(env=None, cwd=str(cwd), command=command) as server:
        reply = _server_run_gpu_test(server, folder)
    assert "result" in reply, reply
    assert_no_marker(markers)


FAKE_SANITIZER = """#!/bin/sh
# stands in for compute-sanitizer: drops its options and runs the program it was given
case "$1" in --version) echo "Version 2025.3.1.0"; exit 0;; esac
while [ $# -gt 0 ]; do
  case "$1" in
    --tool|--log-file|--print-limit|--show-backtrace|--target-processes|--kernel-name|--racecheck-report)
      shift 2;;
    *) break;;
  esac
done
exec "$@"
"""


def test_the_sanitizers_child_runs_isolated(hostile, tmp_path, monkeypatch):
    """compute-sanitizer starts the GPU worker as its own child (gputest/sanitize.py); a
    stand-in sanitizer here runs the worker it is given, so the child starts without a GPU (and
    answers "no device"), with the hostile folder as the working directory of this process."""
    import asyncio

    from ptxls.gputest.sanitize import SanitizedSupervisor
    from ptxls.toolchain.sanitizer import Sanitizer
    from ptxls.toolchain.sanitizer import command as sanitizer_command

    folder, markers = hostile
    fake = tmp_path / "compute-sanitizer"
    fake.write_text(FAKE_SANITIZER)
    fake.chmod(0o755)
    monkeypatch.chdir(folder)
    env = clean_env(CUDA_VISIBLE_DEVICES="")
    cmd = sanitizer_command(Sanitizer(str(fake), "test", "2025.3.1.0"), "memcheck",
                            str(tmp_path / "log"), default_command(environ=env), "vec_add")  # fmt: skip

    async def hello():
        sup = SanitizedSupervisor(cmd, env=env)
        try:
            return await sup.request({"op": "hello"}, 120)
        finally:
            await sup.close()

    reply = asyncio.run(hello())
    assert reply.data.get("no_device") or reply.data.get("ok"), reply
    assert_no_marker(markers)
