"""A kernel name from a cloned file can be megabytes long: `ptxls test` cuts it in what it prints
to a terminal (the JSON output keeps it whole for programs that read it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ptxls_test_cuts_a_5mb_kernel_name_in_its_text_output(tmp_path):
    name = "k" * (5 * 1024 * 1024)
    ptx = tmp_path / "long.ptx"
    ptx.write_text((ROOT / "examples" / "vec_add.ptx").read_text().replace("vec_add", name))
    run = subprocess.run(
        [sys.executable, "-m", "ptxls.cli", "test", str(ptx)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode in (1, 3), run.stderr[-500:]  # no spec (or no GPU): not a pass
    assert len(run.stdout) + len(run.stderr) < 20_000
    assert "(5242880 chars)" in run.stdout  # said how long it was, not printed whole
