"""The ptxls command as a person runs it: output format and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import run_cli

EXAMPLES = Path(__file__).parent.parent / "examples"

# ptxls(...) runs the installed CLI as a process (the check and demo tests, --version, the GPU
# reason); the usage, doctor-format, timeout and key tests are about what a command prints and
# its exit code, and call it in-process (run_cli, tests/cli_helpers.py).


def ptxls(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ptxls.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def test_check_clean_file_exits_0():
    r = ptxls("check", str(EXAMPLES / "vec_add.ptx"))
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""


def test_check_broken_file_prints_compiler_style_and_exits_1():
    path = str(EXAMPLES / "broken.ptx")
    r = ptxls("check", path)
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert all(
        line.startswith(f"{path}:")
        and any(f": {w}: " in line for w in ("error", "warning", "note"))
        for line in lines
    )
    errors = [line for line in lines if ": error: " in line]
    # one error per cause: ptxas's "Arguments mismatch" on the same line is folded into the
    # "Unknown symbol" that causes it, and the lint's words say which .reg declares what
    assert [e.split(": error: ")[0] for e in errors] == [
        f"{path}:{n}" for n in ("28:21", "29:26", "34:27")
    ]
    assert errors[0].startswith(
        f"{path}:28:21: error: Unknown symbol '%r6' — register '%r6' is not declared ('.reg .b32 %r<6>' on line 16"
    )
    assert errors[0].endswith("then, because of it: Arguments mismatch for instruction 'mad.lo'")
    # the fix-it is printed once, at the .reg line, though three errors share it
    assert [line for line in lines if ": note: " in line] == [
        f"{path}:16:20: note: fix: Declare %r<7> on line 16 (covers %r6)"
    ]


def test_check_reports_warnings_as_warnings(tmp_path):
    src = (
        (Path(__file__).parent / "data" / "ptxas_output" / "warning_and_fatal.ptx")
        .read_text()
        .replace(".extern .func foo();\n", "")
        .replace("  call foo;\n", "")
    )
    f = tmp_path / "w.ptx"
    f.write_text(src)
    r = ptxls("check", str(f))
    assert r.returncode == 0
    assert (
        f"{f}:4:1: warning: For entry k adjusting per thread register count of 8 to lower bound of 24"
        in r.stdout
    )


def test_check_cuda_file(tmp_path):
    f = tmp_path / "k.cu"
    f.write_text((EXAMPLES / "vec_add.cu").read_text().replace("a[i] + b[i]", "a[i] + b[i] + nope"))
    r = ptxls("check", str(f))
    assert r.returncode == 1
    assert 'error: identifier "nope" is undefined' in r.stdout
    assert r.stdout.startswith(f"{f}:6:")


def test_check_unreadable_file_exits_2_with_reason(tmp_path):
    r = ptxls("check", str(tmp_path / "missing.ptx"))
    assert r.returncode == 2
    assert r.stderr == f"ptxls check: no such file: {tmp_path / 'missing.ptx'}\n"


def test_check_without_ptxas_exits_2_and_says_how_to_fix(tmp_path):
    r = ptxls("check", "--ptxas", str(tmp_path / "nope"), str(EXAMPLES / "vec_add.ptx"))
    assert r.returncode == 2
    assert "pip install nvidia-cuda-nvcc" in r.stderr and "PTXLS_PTXAS" in r.stderr


def test_check_binary_file_is_an_error_not_a_crash(tmp_path):
    f = tmp_path / "bin.ptx"
    f.write_bytes(bytes(range(256)) * 4)
    r = ptxls("check", str(f))
    assert r.returncode == 1
    assert "not PTX text" in r.stdout
    assert "Traceback" not in r.stderr


def test_check_arch_flag_is_passed_to_ptxas(tmp_path):
    f = tmp_path / "v.ptx"
    f.write_text((EXAMPLES / "vec_add.ptx").read_text().replace(".target sm_90", ".target sm_90a"))
    assert ptxls("check", str(f)).returncode == 0  # the file's .target picks -arch=sm_90a
    # ptxas refuses sm_90a PTX for an older GPU, which shows --arch reached it; the person is
    # told what to do instead of ptxas's words, and it is "cannot run" (2), not "errors" (1)
    r = ptxls("check", "--arch", "sm_80", str(f))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Leave out --arch" in r.stderr and "--arch sm_90a or newer" in r.stderr
    assert "SM version specified" not in r.stdout + r.stderr


@pytest.mark.parametrize("flag", [[], ["--json"]])
def test_doctor_never_prints_a_key(flag):
    r = run_cli(
        "doctor", *flag, env={"OPENAI_API_KEY": "sk-secret-should-not-appear", "PTXLS_MODEL": "m"}
    )
    assert r.returncode == 0, r.stderr
    assert "sk-secret" not in r.stdout + r.stderr
    assert "ptxas" in r.stdout and ("GPU" in r.stdout or '"gpu"' in r.stdout)


def test_demo_runs_on_the_examples():
    r = ptxls("demo", "--no-gpu")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "broken.ptx" in r.stdout and "deliberate mistake" in r.stdout
    assert "vec_add.ptx" in r.stdout


def test_usage_prints_registers_and_occupancy():
    r = run_cli("usage", str(EXAMPLES / "vec_add.ptx"), "--block", "128")
    assert r.returncode == 0, r.stderr
    assert "registers: 12 per thread" in r.stdout and "occupancy at 128 threads/block" in r.stdout


def test_usage_of_broken_ptx_prints_the_errors_like_check():
    path = str(EXAMPLES / "broken.ptx")
    r = run_cli("usage", path)
    assert r.returncode == 1
    assert any(
        line.startswith(f"{path}:28:21: error: Unknown symbol '%r6'")
        for line in r.stdout.splitlines()
    )
    assert "ptxas fatal" not in r.stdout + r.stderr


def test_version():
    from importlib.metadata import version

    r = ptxls("--version")
    assert r.returncode == 0 and r.stderr == ""
    assert r.stdout == f"ptxls {version('ptxls')}\n"


def test_usage_is_plain_text_in_a_terminal_and_markdown_or_json_on_request():
    path = str(EXAMPLES / "vec_add.ptx")
    text = run_cli("usage", path)
    assert text.returncode == 0 and text.stderr == ""
    assert "kernel vec_add" in text.stdout and "**" not in text.stdout and "`" not in text.stdout
    markdown = run_cli("usage", path, "--format", "markdown")
    assert "**kernel `vec_add`**" in markdown.stdout
    data = json.loads(run_cli("usage", path, "--format", "json", "--block", "128").stdout)
    [kernel] = data["functions"]
    assert kernel["name"] == "vec_add" and kernel["occupancy"]["block_size"] == 128
    # the same numbers in every format
    assert f"registers: {kernel['registers']} per thread" in text.stdout


def test_usage_arch_older_than_target_says_what_to_do():
    r = run_cli("usage", "--arch", "sm_80", str(EXAMPLES / "vec_add.ptx"))  # .target sm_90
    assert r.returncode == 2 and r.stdout == ""
    assert "has .target sm_90" in r.stderr and "Leave out --arch" in r.stderr
    assert "ptxas" not in r.stderr.split("ptxas will not")[1]  # no raw ptxas text after it


def test_check_timeout_is_cannot_run(tmp_path):
    r = run_cli("check", "--timeout", "0.001", str(EXAMPLES / "vec_add.ptx"))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "did not finish within 0.001 s" in r.stderr and "--timeout" in r.stderr
    assert run_cli("check", "--timeout", "0", str(EXAMPLES / "vec_add.ptx")).returncode == 2
    assert run_cli("check", "--timeout", "120", str(EXAMPLES / "vec_add.ptx")).returncode == 0


def test_missing_version_is_said_once(tmp_path):
    f = tmp_path / "notes.ptx"
    f.write_text("hello world\n")
    r = run_cli("check", str(f))
    assert r.returncode == 1
    about_version = [line for line in r.stdout.splitlines() if ".version" in line]
    assert len(about_version) == 1, r.stdout


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_doctor_formats(fmt):
    r = run_cli("doctor", "--format", fmt)
    assert r.returncode == 0 and r.stderr == ""
    if fmt == "json":
        assert "ptxas" in json.loads(r.stdout)
    elif fmt == "markdown":
        assert r.stdout.startswith("**ptxls doctor**") and "| ptxas |" in r.stdout
    else:
        assert r.stdout.startswith("ptxls doctor\n") and "|" not in r.stdout


def test_no_gpu_reason_is_worded_one_way():
    """doctor (the GPU probe) and ptxls test (the GPU worker) give the same reason, and the
    library's exception name never shows."""
    doctor = json.loads(ptxls("doctor", "--json").stdout)["gpu"]
    if doctor["available"]:
        pytest.skip("a GPU is present here")
    test = ptxls("test", str(EXAMPLES / "vec_add.ptx"), "--format", "json", "--device", "gpu")
    assert test.returncode == 3
    [report] = json.loads(test.stdout)
    assert report["summary"] == f"no CUDA device ({doctor['reason']})"
    assert "Error" not in doctor["reason"], doctor["reason"]


def test_demo_leaves_the_repository_as_it_was():
    root = EXAMPLES.parent
    if not (root / ".git").exists():
        pytest.skip("not a git checkout")

    def status() -> str:
        return subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all", "--", "examples"],
            cwd=root,
            capture_output=True,
            text=True,
        ).stdout

    before = status()
    r = subprocess.run(
        [sys.executable, "-m", "ptxls.cli", "demo"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert status() == before, "ptxls demo wrote into examples/"
    assert r.stdout.count("all steps behaved as expected") == 1
