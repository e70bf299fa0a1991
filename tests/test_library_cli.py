"""``ptxls test`` and ``ptxls bench`` on the library as a person runs them: the real CLI in a
subprocess, the GPU hidden (CUDA_VISIBLE_DEVICES=""), so what is checked is what holds on CI and
on a GPU machine alike: the spec is found (spec.json beside the PTX, or --spec), a bad spec is
refused before any GPU work, and no GPU is exit 3 with the reason."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIB = ROOT / "fewshot" / "kernels"


def ptxls(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    return subprocess.run(
        [sys.executable, "-m", "ptxls.cli.main", *args],
        capture_output=True, text=True, timeout=120, cwd=cwd, env=env,
    )  # fmt: skip


def test_test_reads_the_spec_json_beside_a_library_kernel():
    r = ptxls("test", "fewshot/kernels/softmax_rows/kernel.ptx", "--json", "--device", "gpu")
    [report] = json.loads(r.stdout)
    # the spec was found and is fine: the only thing missing is the GPU
    assert report["status"] == "no-gpu", report
    assert r.returncode == 3 and "Traceback" not in r.stderr


def test_test_with_a_spec_for_another_kernel_is_refused_before_the_gpu():
    r = ptxls("test", "fewshot/kernels/vec_add/kernel.ptx", "--spec",
              "fewshot/kernels/row_sum/spec.json", "--json")  # fmt: skip
    [report] = json.loads(r.stdout)
    assert report["status"] == "spec-error" and r.returncode == 1
    assert "is the spec of kernel 'row_sum', not 'vec_add'" in report["problems"][0]["message"]


def test_spec_file_applies_to_a_ptx_anywhere(tmp_path):
    ptx = tmp_path / "mine.ptx"
    ptx.write_text((LIB / "vec_add" / "kernel.ptx").read_text())
    spec = tmp_path / "s.json"
    spec.write_text((LIB / "vec_add" / "spec.json").read_text().replace('"reference.cu"', "null"))
    r = ptxls("test", str(ptx), "--spec", str(spec), "--json", "--device", "gpu")
    [report] = json.loads(r.stdout)
    assert report["status"] == "no-gpu" and r.returncode == 3
    r = ptxls("test", str(ptx), "--spec", str(tmp_path / "none.json"))
    assert r.returncode == 2 and "no such spec file" in r.stderr


def test_a_broken_spec_json_is_a_precise_problem(tmp_path):
    folder = tmp_path / "k"
    folder.mkdir()
    (folder / "kernel.ptx").write_text((LIB / "vec_add" / "kernel.ptx").read_text())
    text = (LIB / "vec_add" / "spec.json").read_text().replace('"role": "out"', '"role": "output"')
    (folder / "spec.json").write_text(text)
    r = ptxls("test", str(folder / "kernel.ptx"), "--json")
    [report] = json.loads(r.stdout)
    assert report["status"] == "spec-error", report
    assert "role must be one of in, out, inout, size, scalar, scratch" in json.dumps(report)


def test_bench_without_a_gpu_exits_3_with_the_reason():
    r = ptxls("bench", "vec_add", "softmax_rows")
    assert r.returncode == 3, r.stderr
    assert "no GPU to benchmark on: no CUDA device" in r.stderr
    assert "Traceback" not in r.stdout + r.stderr


def test_bench_names_unknown_kernels_and_lists_the_library():
    r = ptxls("bench", "no_such_kernel")
    assert r.returncode == 2
    assert "no library kernel or .ptx file named 'no_such_kernel'" in r.stderr
    assert "softmax_rows" in r.stderr
