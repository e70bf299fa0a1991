"""Hostile input: scratch is private and cleaned. The GPU test's build folder used to be a fixed
name in the shared temp folder (``ptxls-gputest``, made with exist_ok, no ownership check), and
builds, cubins and nvcc's preprocessed ``.ii`` files (the user's source) stayed there readable
by anyone. Now: a per-process mkdtemp (0700), sources removed after each build, a cancelled
build's folder removed, nvcc's intermediates inside the build folder."""

from __future__ import annotations

import asyncio
import os
import stat
import tempfile
from pathlib import Path

import pytest
from raw_lsp import ROOT

from ptxls.gputest import build
from ptxls.toolchain.discovery import Tool, ToolNotFound, find_ptxas
from ptxls.toolchain.nvcc import nvcc_to_ptx


def fake_tool(tmp_path: Path, name: str, work: str) -> Path:
    path = tmp_path / "bin" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(
        "#!/bin/bash\n"
        'if [ "$1" = --version ]; then echo "Cuda compilation tools, release 13.0, V13.0.88";'
        " exit 0; fi\n"
        'case "$*" in *probe.ptx*) exit 1;; esac\n'
        f"{work}\n"
    )
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_scratch_root_is_private_and_fresh():
    root = build.workdir()
    assert root.parent == Path(tempfile.gettempdir())
    assert root.name != "ptxls-gputest" and root.name.startswith("ptxls-gputest-")
    st = root.stat()
    assert stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == os.getuid()


def test_a_finished_build_keeps_no_source():
    try:
        find_ptxas()
    except ToolNotFound:
        pytest.skip("no ptxas (pip install nvidia-cuda-nvcc)")
    ptx = (ROOT / "examples" / "vec_add.ptx").read_text() + "\n// scratch test\n"
    built = asyncio.run(build.assemble_ptx(ptx, "sm_90", tag="scratchtest"))
    assert built.cubin_path, built.error
    folder = Path(built.cubin_path).parent
    assert [p.suffix for p in folder.iterdir()] == [".cubin"]
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_a_cancelled_build_leaves_nothing(tmp_path):
    ptxas = fake_tool(tmp_path, "ptxas", "sleep 30")

    async def go():
        job = asyncio.ensure_future(
            build.assemble_ptx("// cancelled\n", "sm_90", ptxas=str(ptxas), tag="cancelme")
        )
        await asyncio.sleep(1.0)
        job.cancel()
        with pytest.raises(asyncio.CancelledError):
            await job

    asyncio.run(go())
    assert not [p for p in build.workdir().iterdir() if p.name.startswith("cancelme-")]


def test_nvcc_intermediates_stay_in_the_private_folder(tmp_path):
    """nvcc writes .ii files (the preprocessed source) to TMPDIR and leaves them when killed."""
    leak_to = tmp_path / "seen-tmpdir"
    nvcc = fake_tool(
        tmp_path, "nvcc", f'echo "$TMPDIR" > {leak_to}; echo source > "$TMPDIR/tmpxft_x.ii"; exit 1'
    )
    tool = Tool("nvcc", str(nvcc), "test", "13.0")
    asyncio.run(nvcc_to_ptx("__global__ void k() {}\n", tool))
    tmpdir = Path(leak_to.read_text().strip())
    assert tmpdir.name.startswith("ptxls-nvcc-") and not tmpdir.exists()
