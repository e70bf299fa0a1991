"""``ptxls test`` as a person runs it: the real CLI in a subprocess, with the GPU hidden so the
no-GPU answer (exit 3, a reason, no traceback) is the same on CI and on a GPU machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def ptxls(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    return subprocess.run(
        [sys.executable, "-m", "ptxls.cli.main", *args],
        capture_output=True, text=True, timeout=120, cwd=cwd, env=env,
    )  # fmt: skip


def test_no_gpu_exits_3_with_the_reason_and_no_traceback():
    r = ptxls("test", "examples/vec_add.ptx", "--sizes", "0", "1", "1<<10", "--device", "gpu")
    assert r.returncode == 3, r.stderr
    # plain text in a terminal (--format markdown gives the hover's Markdown)
    assert "GPU test vec_add: NO GPU" in r.stdout and "no CUDA device (" in r.stdout
    assert "**" not in r.stdout
    assert "Traceback" not in r.stdout + r.stderr


def test_json_output_carries_the_status_and_reason():
    r = ptxls("test", "examples/vec_add.ptx", "--json", "--device", "gpu")
    assert r.returncode == 3
    [report] = json.loads(r.stdout)
    assert report["kernel"] == "vec_add" and report["status"] == "no-gpu"
    assert report["summary"].startswith("no CUDA device (")


def test_spec_problems_exit_1_and_point_at_the_annotation(tmp_path):
    bad = tmp_path / "k.cu"
    bad.write_text(
        "// @gputest c: out f99[n]\n__global__ void k(const float* a, float* c, int n) {}\n"
    )
    r = ptxls("test", str(bad))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "NO TEST SPEC" in r.stdout
    assert f"{bad}:1:13: @gputest: unknown type 'f99'" in r.stdout


def test_usage_errors_exit_2_with_a_message():
    r = ptxls("test", "examples/does-not-exist.ptx")
    assert r.returncode == 2 and "no such file" in r.stderr
    r = ptxls("test", "examples/vec_add.ptx", "--sizes", "ten")
    assert r.returncode == 2 and "--sizes: unknown name 'ten'" in r.stderr
    r = ptxls("test", "examples/vec_add.ptx", "--ref", "nope.cu")
    assert r.returncode == 2 and "no such reference file: nope.cu" in r.stderr
