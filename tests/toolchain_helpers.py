"""Compiling the test corpus with every nvcc found (the wheel's and the machine's)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ptxls.toolchain.discovery import all_tools, cuda_include_dirs


def nvccs() -> list:
    """Each nvcc on this machine, or one skipped param saying how to get one."""
    tools = all_tools("nvcc")
    return tools or [
        pytest.param(None, marks=pytest.mark.skip(reason="no nvcc (pip install nvidia-cuda-nvcc)"))
    ]


def nvcc_id(tool) -> str:
    return f"nvcc-{tool.version}-{tool.origin.split()[0]}" if tool else "none"


def nvcc_ptx(nvcc, cu: Path, tmp_path: Path, *, arch: str = "sm_90", opt: str = "-O3") -> str:
    out = tmp_path / f"{cu.stem}.{arch}{opt}.ptx"
    includes = [f"-I{d}" for d in cuda_include_dirs()]
    subprocess.run(
        [nvcc.path, "-ptx", f"-arch={arch}", opt, *includes, str(cu), "-o", str(out)],
        check=True,
        capture_output=True,
        timeout=180,
    )
    return out.read_text()
