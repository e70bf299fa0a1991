"""The results people read: ptxls eval end to end from the command line (the compilers' rows of
three tasks, on whatever this machine tests with), then --compare of two results files as a
table and as a self-contained HTML report."""

from __future__ import annotations

import json
import re
import subprocess
import sys


def ptxls(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "ptxls.cli.main", *args], capture_output=True,
                          text=True, timeout=timeout)  # fmt: skip


def test_a_baseline_run_then_a_comparison(tmp_path):
    run = ptxls("eval", "--baseline-only", "--tasks", "relu_f32,row_argmax_f32,triton_relu",
                "--run-dir", str(tmp_path / "run"), "--out", str(tmp_path / "a.json"),
                "--html", str(tmp_path / "a.html"), "--test-workers", "1")  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    doc = json.loads((tmp_path / "a.json").read_text())
    assert doc["summary"]["nvcc"]["passed_samples"] == 2
    assert doc["summary"]["triton"]["passed_samples"] == 1
    assert re.search(r"^nvcc\s+2\s+2\s+100\.0%", run.stdout, re.M), run.stdout
    # the progress bar is one line per tenth off a terminal, never one per chunk
    assert run.stderr.count("\n") < 12
    # a second run in the same directory has nothing left to do
    again = ptxls("eval", "--baseline-only", "--tasks", "relu_f32,row_argmax_f32,triton_relu",
                  "--run-dir", str(tmp_path / "run"), "--out", str(tmp_path / "b.json"))  # fmt: skip
    assert again.returncode == 0
    b = json.loads((tmp_path / "b.json").read_text())
    assert b["info"]["skipped"] == 3 and b["info"]["jobs"] == 0
    cmp = ptxls("eval", "--compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"),
                "--html", str(tmp_path / "cmp.html"))  # fmt: skip
    assert cmp.returncode == 0, cmp.stderr
    assert re.search(r"^a\s+", cmp.stdout, re.M) and re.search(r"^b\s+", cmp.stdout, re.M)
    html = (tmp_path / "cmp.html").read_text()
    assert html.count("<svg") >= 1 and "pass@k per family" in html
    assert "http://" not in html and "https://" not in html and "<script" not in html
    assert "row_argmax_f32" in html
