"""compute-sanitizer in ptxls without a GPU: reports placed on PTX lines (from the H200's real
logs of the planted kernels), the tool's discovery, ``ptxls test --sanitize`` as a person runs it
(arguments, the messages for no compute-sanitizer and no GPU), and the lowering loop's race check
skipped with its reason. The GPU runs are tests/gpu/test_sanitizer_gpu.py."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ptxls.frontend.sanitizer_report import parse_sanitizer_output
from ptxls.gputest.pairing import spec_for_ptx
from ptxls.gputest.report import TestReport, failure_feedback, format_table
from ptxls.gputest.sanitize import (
    SanitizeResult,
    ToolRun,
    _conclude,
    _mark,
    api_errors,
    findings_of,
    format_result,
    parse_tools,
    pick_size,
)
from ptxls.lowering.race_check import check_candidate, race_feedback, uses_shared_or_barriers
from ptxls.toolchain import sanitizer as ts
from ptxls.toolchain.discovery import ToolNotFound

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "sanitizer"
PLANTED = DATA / "planted"


def planted_run(file: str, kernel: str, tool: str) -> ToolRun:
    """What gputest/sanitize.py makes of the H200's log for a planted kernel."""
    ptx = (PLANTED / file).read_text()
    report = parse_sanitizer_output((DATA / "h200" / f"{kernel}-{tool}.log").read_text(), tool)
    run = ToolRun(tool, TestReport(kernel, "pass"), report, findings_of(report, kernel, file, ptx))
    _mark(run)
    return run


def line_of(file: str, tag: str) -> int:
    """1-based line of the planted file whose comment carries ``tag``."""
    lines = (PLANTED / file).read_text().splitlines()
    return next(i + 1 for i, line in enumerate(lines) if tag in line)


def test_a_missing_barrier_is_one_race_on_the_store_and_the_load():
    run = planted_run("missing_barrier.ptx", "swap_warps_no_barrier", "racecheck")
    [race] = run.findings
    store = line_of("missing_barrier.ptx", "tile[tid] = x[i]")
    load = line_of("missing_barrier.ptx", "tile[tid ^ 32]")
    assert (race.line, race.other_line) == (store, load) == (42, 47)
    assert race.line_texts == [
        "st.shared.f32       [%r7], %f1;",
        "ld.shared.f32       %f2, [%r10];",
    ]
    assert race.count == 4097  # the summary's total, not the 100 hazards printed
    assert race.address == "0x600-0x663" and race.severity == "error"
    assert "race between the write on line 42 and the read on line 47" in race.text
    assert "threads (128,0,0) and (160,0,0)" in race.text
    # the test's report carries it: table (hover, CLI) and the repair prompt
    assert run.numbers == "pass" and run.test.status == "fail"
    assert "the numbers were right" in run.test.summary
    assert "line 42" in format_table(run.test) and "line 47" in failure_feedback(run.test)


def test_a_race_seen_read_first_still_names_the_write_first():
    """The second H200 run met the same race as write-after-read hazards (the read printed
    first): the same finding, the store's line first."""
    ptx = (PLANTED / "missing_barrier.ptx").read_text()
    log = (DATA / "h200" / "swap_warps_no_barrier-racecheck-war.log").read_text()
    report = parse_sanitizer_output(log, "racecheck")
    assert report.records[0].hazard_type == "WAR" and report.records[0].accesses[0] == "Read"
    [race] = findings_of(report, "swap_warps_no_barrier", "missing_barrier.ptx", ptx)
    assert (race.line, race.other_line) == (42, 47)
    assert "race between the write on line 42 and the read on line 47" in race.text


def test_out_of_bounds_shared_accesses_land_on_their_lines():
    halo = planted_run("shared_oob.ptx", "stencil_no_halo", "memcheck")
    [read] = halo.findings  # the CUDA errors after it are notes, not places
    assert read.line == line_of("shared_oob.ptx", "tile[256] for thread 255") == 48
    assert "invalid __shared__ read of 4 bytes at 0x800 (out of bounds)" in read.text
    assert read.count == 4 and "(255,0,0)" in read.text
    assert api_errors(halo.report)[0] == "cuCtxSynchronize returned CUDA_ERROR_LAUNCH_FAILED"
    twice = planted_run("shared_oob.ptx", "index_scaled_twice", "memcheck")
    [write] = twice.findings
    assert write.line == line_of("shared_oob.ptx", "past the tile for tid >= 64") == 88
    assert write.line_texts == ["st.shared.f32       [%r7], %f1;"]
    assert "invalid __shared__ write of 4 bytes at 0x800-" in write.text


def test_an_uninitialised_global_read_lands_on_its_load():
    run = planted_run("uninit_read.ptx", "max_into_out", "initcheck")
    [read] = run.findings
    assert read.line == line_of("uninit_read.ptx", "before anything wrote it") == 38
    assert read.kind == "uninitialized-read" and read.count == 257  # 100 printed + 157 not
    assert read.text.startswith("initcheck: read of uninitialized __global__ memory (4 bytes")


def test_clean_runs_conclude_clean_and_a_wrong_answer_under_the_tool_is_said():
    runs = [planted_run("missing_barrier.ptx", "swap_warps", "racecheck")]
    result = SanitizeResult("swap_warps", "error", runs=runs, sizes=[1024])
    _conclude(result)
    assert result.status == "clean" and result.summary == "no problems found by racecheck"
    sync = planted_run("missing_barrier.ptx", "swap_warps_no_barrier", "synccheck")
    sync.test.status, sync.test.summary = "fail", "case n=1024: y: 512 of 1024 wrong"
    result = SanitizeResult("swap_warps_no_barrier", "error", runs=[sync], sizes=[1024])
    _conclude(result)
    assert result.status == "test-failed" and "512 of 1024 wrong" in result.summary


def test_the_text_a_person_reads_quotes_the_ptx_lines():
    run = planted_run("missing_barrier.ptx", "swap_warps_no_barrier", "racecheck")
    result = SanitizeResult("swap_warps_no_barrier", "error", runs=[run], sizes=[1024],
                            sanitizer="compute-sanitizer 2025.3.1.0 (PATH: /x)")  # fmt: skip
    _conclude(result)
    text = format_result(result)
    assert "1 problem(s) found by racecheck" in text and "n=1024 only, untimed" in text
    assert "GPU test under it: pass" in text  # its own verdict, before the race made it fail
    assert "  42 | st.shared.f32" in text and "  47 | ld.shared.f32" in text
    assert result.to_dict()["runs"][0]["findings"][0]["line"] == 42


@pytest.mark.parametrize(
    ("words", "tools"),
    [([], ("memcheck", "racecheck")), (None, ("memcheck", "racecheck")),
     (["racecheck"], ("racecheck",)), (["initcheck,memcheck"], ("initcheck", "memcheck")),
     (["all"], ("memcheck", "racecheck", "synccheck", "initcheck")),
     (["RaceCheck", "racecheck"], ("racecheck",))],
)  # fmt: skip
def test_tool_names(words, tools):
    assert parse_tools(words) == tools


def test_an_unknown_tool_is_named():
    with pytest.raises(ValueError, match="unknown compute-sanitizer tool 'leakcheck'"):
        parse_tools(["memcheck", "leakcheck"])


def test_one_size_the_smallest_that_launches_two_blocks():
    def spec(file, kernel):
        return spec_for_ptx((PLANTED / file).read_text(), kernel).spec

    assert pick_size(spec("missing_barrier.ptx", "swap_warps")) == 1024  # 256 is one block
    assert pick_size(spec("uninit_read.ptx", "max_into_out")) == 257


def test_the_command_checks_only_the_kernel_and_keeps_the_programs_stdout(tmp_path):
    s = ts.Sanitizer("/opt/cs", "PATH", "2025.3")
    args = ts.command(s, "racecheck", str(tmp_path / "log"), ["python3", "-m", "w"], "k")
    assert args[:3] == ["/opt/cs", "--tool", "racecheck"]
    assert args[args.index("--log-file") + 1] == str(tmp_path / "log")
    assert args[args.index("--kernel-name") + 1] == "kne=k"
    assert args[args.index("--racecheck-report") + 1] == "all"
    assert args[-3:] == ["python3", "-m", "w"]
    with pytest.raises(ValueError):
        ts.command(s, "leakcheck", "x", ["p"])


def test_a_configured_sanitizer_that_is_missing_is_an_error_not_skipped(tmp_path, monkeypatch):
    with pytest.raises(ToolNotFound, match="the compute-sanitizer given '/no/cs'"):
        ts.find_sanitizer("/no/cs")
    monkeypatch.setenv(ts.ENV_VAR, str(tmp_path / "missing"))
    with pytest.raises(ToolNotFound, match="PTXLS_COMPUTE_SANITIZER=.* does not exist"):
        ts.find_sanitizer()
    fake = tmp_path / "compute-sanitizer"
    fake.write_text("#!/bin/sh\necho 'Version 2099.1.0.0 (build 1)'\n")
    fake.chmod(0o755)
    monkeypatch.setenv(ts.ENV_VAR, str(fake))
    found = ts.find_sanitizer()
    assert (found.path, found.origin, found.version) == (str(fake), ts.ENV_VAR, "2099.1.0.0")


def test_the_wheel_binary_is_found_where_it_is_installed(monkeypatch):
    monkeypatch.delenv(ts.ENV_VAR, raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("CUDA_HOME", "/nonexistent")
    monkeypatch.setattr(ts, "_toolkit_dirs", lambda: [])
    wheel = ts._wheel_paths()
    if not any(p.exists() for p in wheel):
        pytest.skip(
            "the nvidia-cuda-sanitizer-api wheel is not installed (pip install 'ptxls[sanitizer]')"
        )
    assert ts.candidates()[0][1] == "nvidia-cuda-sanitizer-api wheel"


def ptxls(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ptxls.cli.main", *args], capture_output=True, text=True,
        timeout=120, cwd=ROOT, env={**os.environ, "CUDA_VISIBLE_DEVICES": "", **env},
    )  # fmt: skip


def test_cli_usage_errors_exit_2():
    r = ptxls("test", "tests/data/sanitizer/planted/missing_barrier.ptx", "--sanitize", "fast")
    assert r.returncode == 2 and "--sanitize: unknown compute-sanitizer tool 'fast'" in r.stderr
    # a .cu runs now (tests/test_sanitizer_cuda.py); a Triton .py is sanitized through its PTX
    r = ptxls("test", "examples/vec_add_triton.py", "--sanitize")
    assert r.returncode == 2 and "--sanitize runs the kernels of a .ptx or a CUDA (.cu)" in r.stderr


def test_cli_without_compute_sanitizer_says_how_to_get_it():
    r = ptxls("test", "examples/vec_add.ptx", "--sanitize", PTXLS_COMPUTE_SANITIZER="/no/cs")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "PTXLS_COMPUTE_SANITIZER=/no/cs does not exist" in r.stdout
    assert "Traceback" not in r.stdout + r.stderr


def test_cli_without_a_gpu_exits_3_with_the_reason(tmp_path):
    fake = tmp_path / "compute-sanitizer"
    fake.write_text("#!/bin/sh\necho 'Version 2099.1.0.0'\n")
    fake.chmod(0o755)
    r = ptxls("test", "tests/data/sanitizer/planted/missing_barrier.ptx", "--sanitize",
              "--json", PTXLS_COMPUTE_SANITIZER=str(fake))  # fmt: skip
    assert r.returncode == 3, r.stdout + r.stderr
    assert '"status": "no-gpu"' in r.stdout and "no CUDA device (" in r.stdout
    assert r.stdout.count('"kernel"') == 1  # said once, not once per kernel


def test_race_check_runs_only_on_shared_memory_or_barriers():
    assert uses_shared_or_barriers((PLANTED / "missing_barrier.ptx").read_text())
    assert not uses_shared_or_barriers((PLANTED / "uninit_read.ptx").read_text())
    assert not uses_shared_or_barriers("// bar.sync 0; .shared in a comment\nadd.s32 %r1, %r2, 3;")
    assert uses_shared_or_barriers("    barrier.sync 0;")


def test_race_check_is_skipped_with_its_reason():
    racy = (PLANTED / "missing_barrier.ptx").read_text()
    plain = (PLANTED / "uninit_read.ptx").read_text()
    skip = asyncio.run(check_candidate(None, plain, "max_into_out", gpu_tested=True))
    assert skip.ok and not skip.ran and "no .shared memory and no barrier" in skip.summary
    skip = asyncio.run(check_candidate(None, racy, "swap_warps_no_barrier", gpu_tested=False))
    assert skip.ok and not skip.ran and "not GPU-tested" in skip.summary


def test_race_feedback_gives_the_model_both_lines_and_the_address():
    run = planted_run("missing_barrier.ptx", "swap_warps_no_barrier", "racecheck")
    text = race_feedback("swap_warps_no_barrier", run.findings)
    assert "line 42: st.shared.f32       [%r7], %f1;" in text
    assert "line 47: ld.shared.f32       %f2, [%r10];" in text
    assert "__shared__ 0x600-0x663" in text and "bar.sync 0" in text


def test_the_loop_skips_racecheck_without_a_gpu_and_says_why():
    """``ptxls lower`` against the scripted endpoint with the GPU hidden: the candidate (shared
    memory, no barrier) passes ptxas and the summary says the race check did not run."""
    r = subprocess.run(
        [sys.executable, "bench/race_check_loop.py"], capture_output=True, text=True,
        timeout=240, cwd=ROOT, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""},
    )  # fmt: skip
    assert r.returncode == 2, r.stdout + r.stderr
    assert "racecheck skipped (the candidate was not GPU-tested" in r.stdout
    assert "no GPU: racecheck skipped with its reason: True" in r.stdout


async def _child_alive(pid: int, wait_s: float) -> bool:
    """Whether ``pid`` still runs after up to ``wait_s`` (a killed one is reaped by init)."""
    for _ in range(int(wait_s / 0.05)):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        await asyncio.sleep(0.05)
    return True


async def test_the_sanitized_worker_dies_with_everything_it_started(tmp_path, monkeypatch):
    """compute-sanitizer runs the worker as its child: killing only the first process would
    leave the worker (maybe spinning in a kernel). A shell that starts a sleeper and then becomes
    the worker stands in for it; the GPU is hidden so the worker answers at once. (Without the
    process group the sleeper outlives kill(), and holding the pipes stalls it by 10 s.)"""
    from ptxls.gputest import sanitize

    monkeypatch.setattr(sanitize, "KILL_GRACE_S", 0.2)
    pidfile = tmp_path / "child.pid"
    command = ["sh", "-c", f"sleep 300 & echo $! > {pidfile}; "
               f"exec {sys.executable} -m ptxls.gputest.worker"]  # fmt: skip
    sup = sanitize.SanitizedSupervisor(command, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    reply = await sup.request({"op": "hello"}, timeout_s=60)
    assert reply.data.get("no_device"), reply
    sleeper = int(pidfile.read_text())
    await sup.kill()
    try:
        assert not await _child_alive(sleeper, 5.0)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(sleeper, signal.SIGKILL)
