"""Through the harness, not only the engine: a kernel that reads its output before writing it
fails on the emulator with the finding on its line, though the harness poisoned that output
(the poison is the harness's, not a value the kernel may use), and an honest kernel passes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLANTED = ROOT / "tests" / "data" / "sanitizer" / "planted" / "uninit_read.ptx"


def _test(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ptxls.cli.main", "test", str(path), "--device", "cpu"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip


def test_a_read_of_an_output_before_any_write_fails_with_its_line():
    p = _test(PLANTED)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "uninitialized-global: line 38" in p.stdout, p.stdout


def test_an_honest_kernel_that_writes_its_output_first_still_passes():
    p = _test(ROOT / "examples" / "vec_add.ptx")
    assert p.returncode == 5, p.stdout + p.stderr  # passed on the CPU emulator only
    assert "uninitialized" not in p.stdout
