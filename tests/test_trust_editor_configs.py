"""Each editor config ptxls ships starts the server without importing the opened folder's code.

The folder Neovim is started in (and so the server's working directory) holds a hostile
``ptxls/`` package, ``numpy/``, ``cuda/``, ``sitecustomize.py`` and ``usercustomize.py``, each
writing a marker when imported. The README's Neovim configs are run word for word with their
``cmd`` pointing at this checkout's console script (``ptxls serve``, which puts its own folder on
``sys.path``, not the working directory); they must still get diagnostics and no marker may
appear. (The VS Code extension: ``test_probe_trust3_imports.py``'s "extension" case and
``vscode-client/test/hostileFolder.test.ts``.)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_neovim import (
    CONFIGS,
    EXAMPLES,
    HERE,
    README_SERVER_PATH,
    _candidates,
    _hover_position,
    _nvim_in,
    _readme_config,
)
from test_probe_trust3_imports import assert_no_marker, plant

PTXLS = Path(sys.executable).with_name("ptxls")


@pytest.mark.nvim
@pytest.mark.parametrize(("marker", "lowest", "below"), CONFIGS)
def test_readme_neovim_config_in_a_hostile_folder(tmp_path, marker, lowest, below):
    found = _nvim_in(lowest, below)
    if found is None:
        pytest.skip(f"no Neovim {lowest}-{below} among {_candidates() or 'none'}")
    nvim, _ = found
    config = _readme_config(marker)
    assert README_SERVER_PATH in config  # the README names the console script
    folder, markers = tmp_path / "repo", tmp_path / "markers"
    folder.mkdir()
    markers.mkdir()
    plant(folder, markers)
    target = folder / "broken.ptx"
    shutil.copy(EXAMPLES / "broken.ptx", target)
    init = tmp_path / "init.lua"
    init.write_text(
        config.replace(README_SERVER_PATH, f'"{PTXLS}", "serve"')
        + f"\ndofile({str(HERE / 'nvim' / 'harness.lua')!r})\n"
    )
    out = tmp_path / "seen.txt"
    line, col = _hover_position(target.read_text())
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update({"PTXLS_NVIM_OUT": str(out), "PTXLS_HOVER_LINE": str(line),
                "PTXLS_HOVER_COL": str(col), "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
                "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_STATE_HOME": str(tmp_path / "st"),
                "XDG_CACHE_HOME": str(tmp_path / "cache")})  # fmt: skip
    proc = subprocess.run(
        ["timeout", "60", nvim, "--headless", "--clean", "-u", str(init), str(target)],
        cwd=folder, env=env, capture_output=True, text=True, timeout=90,
    )  # fmt: skip
    assert out.exists(), proc.stderr[-2000:]
    assert any(x.startswith("diag:") for x in out.read_text().splitlines())
    assert_no_marker(markers)
