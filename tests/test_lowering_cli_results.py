"""``ptxls lower`` as a person runs it: a real process, a scripted endpoint over real HTTP, real
ptxas. Exit codes never say more than what was checked, the last line says it in words, the
process ends without a traceback or "Exception ignored" (Python 3.11 here; 3.12 too where
``PTXLS_TEST_PYTHON312`` names a 3.12 interpreter with the dependencies), outputs never go
through a symlink or outside the workspace, and a reply's ``@gputest`` lines never reach the
spec."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from scripted_llm import BROKEN_VEC_ADD, GOOD_VEC_ADD, ROOT, ScriptedLLM, Step, fenced

VEC_ADD_CU = (ROOT / "examples" / "vec_add.cu").read_text()
PYTHONS = [pytest.param(sys.executable, id=f"py{sys.version_info.major}{sys.version_info.minor}")]
if os.environ.get("PTXLS_TEST_PYTHON312"):
    PYTHONS.append(pytest.param(os.environ["PTXLS_TEST_PYTHON312"], id="py312"))


def _site_for(python: str, tmp: Path) -> dict:
    """For another interpreter: import ptxls from this tree (the rooms linked under ptxls/)."""
    if python == sys.executable:
        return {}
    site = tmp / "site" / "ptxls"
    site.mkdir(parents=True)
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "packages"
    ]
    for package in packages:
        if package.count(".") == 1:  # every room (ptxls.<room>), as scripts/device-env.sh does
            (site / package.split(".")[1]).symlink_to(ROOT / package.split(".")[1])
    return {"PYTHONPATH": str(site.parent)}


def lower(tmp_path, script, *args, python=sys.executable, env_extra=None):
    with ScriptedLLM(script) as llm:
        env = dict(
            os.environ,
            OPENAI_BASE_URL=llm.base_url,
            PTXLS_MODEL="scripted-model",
            PTXLS_LLM_RETRY_BACKOFF="0.01",
            PYTHONWARNINGS="default",  # show ResourceWarnings a leaky exit would print
            XDG_CACHE_HOME=str(tmp_path / "user-cache"),  # files of sources outside the workspace
        )
        env.pop("OPENAI_API_KEY", None)
        env.update(_site_for(python, tmp_path))
        env.update(env_extra or {})
        p = subprocess.run(
            [python, "-m", "ptxls.cli.main", "lower", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
        )
        return p, llm


@pytest.fixture
def work(tmp_path):
    (tmp_path / "vec_add.cu").write_text(VEC_ADD_CU)
    return tmp_path


def _assert_clean_exit(p):
    for bad in ("Traceback", "Exception ignored", "Event loop is closed", "ResourceWarning"):
        assert bad not in p.stderr, p.stderr[-2000:]


@pytest.mark.parametrize("python", PYTHONS)
def test_not_gpu_tested_exits_4_and_says_so_cleanly(work, python):
    from ptxls.toolchain.gpu_probe import probe_gpu

    if probe_gpu().available:
        pytest.skip("a GPU is present: the candidate is GPU-tested here (see the device script)")
    p, _ = lower(
        work,
        [Step(fenced(BROKEN_VEC_ADD)), Step(fenced(GOOD_VEC_ADD))],
        "vec_add.cu",
        "--candidates",
        "1",
        "--rounds",
        "3",
        "--device",
        "gpu",  # no fall-back to the CPU emulator (tests/test_lowering_emulated.py)
        python=python,
    )
    assert p.returncode == 4, p.stdout + p.stderr
    last = p.stdout.strip().splitlines()[-1]
    assert "NOT GPU-tested" in last and "no CUDA device" in last
    header = (work / "vec_add.ptx").read_text()
    assert "gpu test: not GPU-tested" in header and "passed" not in header.split(".version")[0]
    _assert_clean_exit(p)


@pytest.mark.parametrize("python", PYTHONS)
def test_nothing_passed_exits_1_names_the_best_attempt_and_why(work, python):
    p, llm = lower(
        work,
        [Step(fenced(BROKEN_VEC_ADD))] * 5,
        "vec_add.cu",
        "--candidates",
        "1",
        "--rounds",
        "5",
        python=python,
    )
    assert p.returncode == 1, p.stdout + p.stderr
    assert len(llm.chat_requests) == 3  # stopped early: stuck, even after a fresh start
    last = p.stdout.strip().splitlines()[-1]
    assert "same ptxas error every round" in last
    attempt = work / ".ptxls" / "attempts" / "vec_add-vec_add.attempt.ptx"
    assert attempt.exists() and ".ptxls/attempts/vec_add-vec_add.attempt.ptx" in last
    assert not (work / "vec_add.ptx").exists()
    _assert_clean_exit(p)


def test_compile_only_on_purpose_exits_0(work):
    p, _ = lower(
        work, [Step(fenced(GOOD_VEC_ADD))], "vec_add.cu", "--candidates", "1", "--compile-only"
    )
    assert p.returncode == 0, p.stdout + p.stderr
    last = p.stdout.strip().splitlines()[-1]
    assert "compile-only" in last and "not GPU-tested" in last
    assert "not GPU-tested (compile-only requested)" in (work / "vec_add.ptx").read_text()
    _assert_clean_exit(p)


def test_cannot_run_exits_2(work):
    p, _ = lower(work, [], "vec_add.cu", "--kernel", "nope")
    assert p.returncode == 2
    assert "no kernel 'nope'" in p.stderr
    p, _ = lower(work, [], "vec_add.cu", "--arch", "sm_999")
    assert p.returncode == 2 and "sm_90" in p.stderr  # the targets ptxas accepts are listed
    _assert_clean_exit(p)


def test_json_format(work):
    p, _ = lower(
        work,
        [Step(fenced(GOOD_VEC_ADD))],
        "vec_add.cu",
        "--candidates",
        "1",
        "--compile-only",
        "--format",
        "json",
        "-q",
    )
    data = json.loads(p.stdout)
    assert data["exit_code"] == p.returncode == 0
    assert data["status"] == "compiled" and data["gpu_tested"] is False


def test_param_order_is_a_warning_in_feedback_and_report(work):
    swapped = GOOD_VEC_ADD.replace(
        ".param .u64 vec_add_param_a,\n    .param .u64 vec_add_param_b,",
        ".param .u64 vec_add_param_b,\n    .param .u64 vec_add_param_a,",
    )
    assert swapped != GOOD_VEC_ADD
    p, _ = lower(work, [Step(fenced(swapped))], "vec_add.cu", "--candidates", "1", "--compile-only")
    assert "warning: parameter order differs from the source" in p.stdout
    assert "warning: parameter order differs" in (work / "vec_add.ptx").read_text()


def test_symlinked_output_is_refused_never_written_through(work, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside") / "victim.txt"
    outside.write_text("precious\n")
    (work / "vec_add.ptx").symlink_to(outside)
    p, _ = lower(
        work, [Step(fenced(GOOD_VEC_ADD))], "vec_add.cu", "--candidates", "1", "--compile-only"
    )
    assert outside.read_text() == "precious\n"
    assert (work / "vec_add.ptx").is_symlink()
    # the result went beside it, and the report says why
    assert (work / "vec_add.llm.ptx").exists(), p.stdout + p.stderr
    assert "symbolic link" in p.stdout
    # a symlinked .ptxls folder that leads out of the workspace is refused for the attempt too
    (work / ".ptxls").rename(work / "old-ptxls")
    (work / ".ptxls").symlink_to(outside.parent)
    p, _ = lower(work, [Step(fenced(BROKEN_VEC_ADD))] * 3, "vec_add.cu", "--candidates", "1")
    assert p.returncode == 1
    assert not list(outside.parent.rglob("*.attempt.ptx"))
    assert not list(outside.parent.rglob("*.jsonl"))


def test_source_outside_the_workspace_is_printed_not_written(work, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / "vec_add.cu").write_text(VEC_ADD_CU)
    p, _ = lower(
        work,
        [Step(fenced(GOOD_VEC_ADD))],
        str(elsewhere / "vec_add.cu"),
        "--candidates",
        "1",
        "--compile-only",
    )
    assert p.returncode == 0, p.stderr
    assert not (elsewhere / "vec_add.ptx").exists()
    assert ".visible .entry vec_add(" in p.stdout and "pass -o" in p.stdout
    out = work / "chosen.ptx"
    p, _ = lower(
        work,
        [Step(fenced(GOOD_VEC_ADD))],
        str(elsewhere / "vec_add.cu"),
        "--candidates",
        "1",
        "--compile-only",
        "-o",
        str(out),
    )
    assert p.returncode == 0 and out.exists()


def test_reply_gputest_lines_never_reach_the_spec(work):
    # the reply carries lines that would loosen its own test (tolerance 1e30, one size, a ref
    # that matches anything); the spec recorded comes from the source only
    loosening = (
        "// @gputest tol: 1e30\n// @gputest sizes: 1\n// @gputest ref: c = c\n" + GOOD_VEC_ADD
    )
    p, _ = lower(work, [Step(fenced(loosening))], "vec_add.cu", "--candidates", "1")
    text = (work / "vec_add.ptx").read_text()
    assert "@gputest" not in text  # never written into the result either
    transcript = next((work / ".ptxls" / "transcripts").glob("*.jsonl"))
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    ignored = [r for r in records if r["kind"] == "ignored_gputest"]
    assert ignored and "tol: 1e30" in " ".join(ignored[0]["lines"])
    spec = next(r for r in records if r["kind"] == "target")["spec"]
    assert "1e30" not in spec and "sizes 0 1 " in spec.replace("sizes 0 1 ", "sizes 0 1 ")
    assert "tol 1e+30" not in spec and "c = c" not in spec


def test_plan_only_then_plan_file(work):
    plan = "1. i = ctaid.x * ntid.x + tid.x\n2. if i < n: c[i] = a[i] + b[i]"
    p, llm = lower(work, [Step(plan)], "vec_add.cu", "--plan-only", "-q")
    assert p.returncode == 0, p.stderr
    assert plan in p.stdout and "No PTX has been written yet" in p.stdout
    assert len(llm.chat_requests) == 1 and not (work / "vec_add.ptx").exists()
    edited = p.stdout.replace("2. if i < n", "2. EDITED: if i < n")
    (work / "plan.md").write_text(edited)
    p, llm = lower(
        work,
        [Step(fenced(GOOD_VEC_ADD))],
        "vec_add.cu",
        "--plan",
        "plan.md",
        "--candidates",
        "1",
        "--compile-only",
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert len(llm.chat_requests) == 1  # no second plan is asked
    sent = llm.chat_requests[0].body["messages"][-1]["content"]
    assert "2. EDITED: if i < n" in sent and "No PTX has been written yet" not in sent


def test_arch_sm_100_is_asked_for_a_version_ptxas_takes_for_it(work):
    p, llm = lower(
        work,
        [Step(fenced(GOOD_VEC_ADD))],
        "vec_add.cu",
        "--arch",
        "sm_100",
        "--candidates",
        "1",
        "--compile-only",
    )
    assert p.returncode == 0, p.stdout + p.stderr
    system = llm.chat_requests[0].body["messages"][0]["content"]
    assert "`.target sm_100`" in system
    version = system.split("`.version ")[1].split("`")[0]
    major, minor = map(int, version.split("."))
    assert (major, minor) >= (8, 6) and version != "8.0", version
