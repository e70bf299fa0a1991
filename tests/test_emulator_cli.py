"""``ptxls test --device`` through the real CLI process, with the GPU hidden: ``cpu`` runs the
emulator and a pass exits 5 (passed on the CPU emulator, not on a GPU); ``auto`` falls back to it
and says why; ``gpu`` does not (exit 3). Text and JSON say the result is emulated and carry no
time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def ptxls(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    return subprocess.run([sys.executable, "-m", "ptxls.cli.main", *args], capture_output=True,
                          text=True, timeout=300, cwd=ROOT, env=env)  # fmt: skip


def test_device_cpu_passes_with_exit_5_and_says_emulated_without_a_time():
    r = ptxls("test", "examples/vec_add.ptx", "--device", "cpu", "--sizes", "0", "1", "257", "3007")
    assert r.returncode == 5, r.stdout + r.stderr
    first = r.stdout.splitlines()[0]
    assert (
        first == "Emulator test vec_add (emulated (CPU), not GPU-verified): PASS — 4/4 cases pass"
    )
    assert "GPU-verified" not in r.stdout.replace("not GPU-verified", "")
    assert "time" not in r.stdout.split("\n\n")[1]  # the table: n, result, max rel err only
    assert "no time measured" in r.stdout and "GB/s" not in r.stdout
    assert "reference: nvcc -O3 vec_add.cu (its PTX, emulated)" in r.stdout


def test_json_says_the_device_was_the_emulator_and_has_no_times():
    r = ptxls("test", "examples/vec_add.ptx", "--device", "cpu", "--sizes", "1", "300", "--json")
    assert r.returncode == 5, r.stderr
    [report] = json.loads(r.stdout)
    assert report["status"] == "pass" and report["device"]["kind"] == "emulator"
    assert all(c["time_ms"] is None and c["ref_time_ms"] is None for c in report["cases"])
    assert report["copy_ceiling_gbps"] is None


def test_a_wrong_kernel_on_the_emulator_exits_1_with_the_first_wrong_element():
    r = ptxls("test", "tests/data/emulator/wrong/reads_b_twice.ptx", "--device", "cpu",
              "--sizes", "1", "257")  # fmt: skip
    assert r.returncode == 1, r.stdout + r.stderr
    assert "c: 1 of 1 wrong; first wrong: c[0]" in r.stdout


def test_auto_without_a_gpu_falls_back_to_the_emulator_and_says_why():
    r = ptxls("test", "examples/vec_add.ptx", "--sizes", "1", "257")  # --device auto
    assert r.returncode == 5, r.stdout + r.stderr
    assert "note: no CUDA device (" in r.stdout and "ran on the CPU emulator instead" in r.stdout


def test_device_gpu_without_a_gpu_exits_3():
    r = ptxls("test", "examples/vec_add.ptx", "--device", "gpu", "--sizes", "1")
    assert r.returncode == 3 and "no CUDA device (" in r.stdout


def test_an_instruction_the_emulator_lacks_is_named_and_nothing_runs():
    r = ptxls("test", "fewshot/kernels/hgemm_wgmma/kernel.ptx", "--device", "cpu", "--json")
    [report] = json.loads(r.stdout)
    assert report["status"] == "error" and not report["cases"]
    assert report["summary"].startswith("the emulator does not implement wgmma")
    assert report["refused"] == report["summary"]
    assert r.returncode == 2  # cannot run (here): not a verdict on the kernel
