"""``ptxls test FILE.cu --sanitize`` without a GPU: nvcc -lineinfo's PTX of the planted CUDA kernels
(tests/data/sanitizer/planted/planted_cuda.cu) names the .cu lines, each kernel maps to its mangled
entry, compute-sanitizer's reports of a .cu run land on the .cu lines and quote them (from the logs
in tests/data/sanitizer/cuda/, derived from the H200's real ones: see the README there), and the
whole run — spec from the annotation, nvcc, the sanitized test, the report — with only the GPU and
the sanitizer's process stood in for. The real run is tests/gpu/test_sanitizer_cuda_gpu.py."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ptxls.frontend.sanitizer_report import parse_sanitizer_output
from ptxls.gputest import api
from ptxls.gputest import sanitize_cuda as sc
from ptxls.gputest.report import TestReport
from ptxls.gputest.sanitize import (
    SanitizeOptions,
    SanitizeResult,
    ToolRun,
    findings_of,
    format_result,
)
from ptxls.toolchain.discovery import ToolNotFound, find_nvcc
from ptxls.toolchain.sanitizer import Sanitizer

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "sanitizer"
CU = DATA / "planted" / "planted_cuda.cu"
CU_TEXT = CU.read_text()


def _no_nvcc() -> str:
    try:
        find_nvcc()
    except ToolNotFound as e:
        return str(e)
    return ""


needs_nvcc = pytest.mark.skipif(bool(_no_nvcc()), reason=_no_nvcc() or "-")


def line_of(tag: str) -> int:
    """1-based line of planted_cuda.cu whose text carries ``tag``."""
    return next(i + 1 for i, t in enumerate(CU_TEXT.splitlines()) if tag in t)


OOB_LINE = line_of("tile[256 - tid] =")  # 14
STORE_LINE = line_of("planted: the store another warp reads")  # 48
LOAD_LINE = line_of("planted: the load that races")  # 50


def cuda_findings(kernel: str, tool: str):
    log = (DATA / "cuda" / f"{kernel}-{tool}.log").read_text()
    report = parse_sanitizer_output(log, tool)
    return report, findings_of(report, kernel, "planted_cuda.cu", CU_TEXT)


# ---- nvcc's PTX names the .cu lines; kernels map to their entries


@needs_nvcc
def test_nvcc_lineinfo_ptx_names_the_cu_file_and_its_lines():
    built = asyncio.run(sc.cuda_ptx(CU_TEXT, cuda_path=str(CU)))
    assert built.error == "" and built.file_name == "planted_cuda.cu"
    assert '.file\t1 "planted_cuda.cu"' in built.ptx  # the .cu's own name, not nvcc's scratch path
    entry = sc.entry_for(built.ptx, "reverse_tile_oob")
    assert entry == "_Z16reverse_tile_oobPKfPfi"
    body = built.ptx[built.ptx.index(f".entry {entry}") :]
    loc = None
    for line in body.splitlines():
        if m := re.match(r"\s*\.loc\s+1\s+(\d+)", line):
            loc = int(m.group(1))
        if "st.shared.f32" in line:
            break
    assert loc == OOB_LINE  # the store the sanitizer will report is marked with its .cu line


def test_entry_for_plain_extern_c_and_missing_kernels():
    ptx = ".visible .entry k(\n)\n{\n ret;\n}\n.visible .entry _Z3fooPf(\n)\n{\n ret;\n}\n"
    assert sc.entry_for(ptx, "k") == "k"
    assert sc.entry_for(ptx, "foo") == "_Z3fooPf"
    assert sc.entry_for(ptx, "fo") is None  # _Z2fo... only: no prefix match on another name
    assert sc.entry_for(ptx, "bar") is None


@needs_nvcc
def test_a_cuda_job_runs_nvccs_ptx_and_quotes_the_cu():
    built = asyncio.run(sc.cuda_ptx(CU_TEXT, cuda_path=str(CU)))
    job = sc._job(None, SanitizeOptions(), built, "_Z16reverse_tile_oobPKfPfi", CU_TEXT,
                  None, None, None)  # fmt: skip
    assert job.marked_text == built.ptx  # nvcc's own .loc: run as it is
    assert job.file_name == "planted_cuda.cu" and job.quoted == CU_TEXT and job.line_file == ""


def test_ptx_without_line_info_gets_ptxls_lines_and_says_whose():
    ptx = (DATA / "planted" / "shared_oob.ptx").read_text()
    built = sc.CudaPtx(ptx, "k.cu")
    job = sc._job(None, SanitizeOptions(), built, "stencil_no_halo", "", None, None, None)
    assert job.file_name == "k.cu.ptx" and ".loc" in job.marked_text
    assert job.line_file == "nvcc's PTX of k.cu" and job.quoted is None


# ---- reports of a .cu run on the .cu lines


def test_an_out_of_bounds_shared_write_lands_on_its_cu_line():
    report, [write] = cuda_findings("reverse_tile_oob", "memcheck")
    assert report.records[0].locations[0].function.startswith("reverse_tile_oob(")
    assert write.line == OOB_LINE == 14 and write.file == ""
    assert write.line_texts == ["tile[256 - tid] = i < n ? x[i] : 0.0f;"]  # the comment cut
    assert write.text.startswith("memcheck: invalid __shared__ write of 4 bytes at 0x800")
    assert f"on line {OOB_LINE}" in write.text and "(0,0,0)" in write.text


def test_a_missing_syncthreads_is_a_race_on_the_cu_store_and_load():
    _, [race] = cuda_findings("swap_warps_no_sync", "racecheck")
    assert (race.line, race.other_line) == (STORE_LINE, LOAD_LINE) == (48, 50)
    assert race.line_texts[0].startswith("tile[tid] = i < n ? x[i] : 0.0f;")
    assert race.line_texts[1].startswith("y[i] = tile[tid ^ 32];")
    assert f"race between the write on line {STORE_LINE} and the read on line {LOAD_LINE}" in (
        race.text
    )


def test_a_report_in_another_file_keeps_its_file_and_line():
    log = (DATA / "cuda" / "reverse_tile_oob-memcheck.log").read_text()
    log = log.replace("in planted_cuda.cu:14", "in helpers.cuh:7")
    report = parse_sanitizer_output(log, "memcheck")
    [write] = findings_of(report, "reverse_tile_oob", "planted_cuda.cu", CU_TEXT)
    assert write.line is None and "on helpers.cuh:7" in write.text


def test_the_editor_puts_cu_findings_on_cu_lines_and_ptx_ones_in_the_hover_only():
    from ptxls.server.features.sanitizer_feature import problems

    report, found = cuda_findings("swap_warps_no_sync", "racecheck")
    result = SanitizeResult("swap_warps_no_sync", "findings",
                            runs=[ToolRun("racecheck", None, report, found)])  # fmt: skip
    store, load = problems(result, CU_TEXT)
    lines = CU_TEXT.splitlines()
    assert (store.line, load.line) == (STORE_LINE - 1, LOAD_LINE - 1)
    assert lines[store.line][store.col : store.end_col].startswith("tile[tid] = i < n")
    assert lines[load.line][load.col : load.end_col] == "y[i] = tile[tid ^ 32];"
    found[0].file = "nvcc's PTX of planted_cuda.cu"  # lines of a text the buffer is not
    assert problems(result, CU_TEXT) == []


# ---- the whole run, with the GPU and compute-sanitizer's process stood in for


class _StandIn:
    """What the device would have done: the sanitized test's verdict, and compute-sanitizer's
    log (the derived .cu log) written where the command line asked for it."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, list[int] | None, str]] = []

    async def run_gpu_test(self, ptx, kernel, spec, *, supervisor, sizes=None, **_):
        command = supervisor.command
        tool = command[command.index("--tool") + 1]
        log_path = command[command.index("--log-file") + 1]
        plain = "reverse_tile_oob" if "reverse_tile_oob" in kernel else "swap_warps_no_sync"
        log = DATA / "cuda" / f"{plain}-{tool}.log"
        Path(log_path).write_text(
            log.read_text() if log.exists() else "========= ERROR SUMMARY: 0 errors\n"
        )
        self.seen.append((kernel, sizes, ptx))
        assert f"kne={kernel}" in command  # only the kernel under test is checked
        return TestReport(kernel, "pass", summary="")


@pytest.fixture
def stand_in(monkeypatch):
    fake = _StandIn()

    async def preflight(opts, result):
        result.sanitizer = "compute-sanitizer 2025.3.1.0 (stand-in)"
        return Sanitizer("/stand-in/compute-sanitizer", "stand-in", "2025.3.1.0")

    monkeypatch.setattr(sc, "preflight", preflight)
    monkeypatch.setattr(api, "run_gpu_test", fake.run_gpu_test)
    return fake


@needs_nvcc
def test_sanitize_cuda_end_to_end_on_cu_lines(stand_in):
    opts = SanitizeOptions(tools=("memcheck", "racecheck"))
    result = asyncio.run(sc.sanitize_cuda(CU_TEXT, "reverse_tile_oob", cuda_path=str(CU),
                                          options=opts))  # fmt: skip
    assert result.status == "findings" and result.kernel == "reverse_tile_oob"
    assert result.sizes == [1024]  # the annotation's size: 4 blocks
    [write] = result.findings
    assert write.tool == "memcheck" and write.line == OOB_LINE
    [(kernel, sizes, ptx), _] = stand_in.seen
    assert kernel == "_Z16reverse_tile_oobPKfPfi" and sizes == [1024]
    assert '.file\t1 "planted_cuda.cu"' in ptx  # what ran is nvcc's -lineinfo PTX
    assert any("lines are lines of planted_cuda.cu" in n for n in result.notes)
    text = format_result(result)
    assert f"  {OOB_LINE} | tile[256 - tid] = i < n ? x[i] : 0.0f;" in text


@needs_nvcc
def test_spec_and_build_problems_are_results(stand_in, tmp_path):
    no_spec = "__global__ void k(float* y, int n, int m) { y[0] = n + m; }\n"
    result = asyncio.run(sc.sanitize_cuda(no_spec, "k", cuda_path=str(tmp_path / "k.cu")))
    assert result.status == "error" and "the test spec has problems; nothing ran" in result.summary
    assert "scalar parameter 'm' has no value" in result.summary
    broken = CU_TEXT.replace("__syncthreads();", "__syncthreads()", 1)
    result = asyncio.run(sc.sanitize_cuda(broken, "reverse_tile_oob", cuda_path=str(CU)))
    assert result.status == "error" and result.summary.startswith("the kernel did not build: nvcc")
    assert "planted_cuda.cu" in result.summary and "ptxls-nvcc-" not in result.summary
    assert stand_in.seen == []


@needs_nvcc
def test_cli_prints_cu_lines(stand_in, capsys):
    from ptxls.cli.main import main

    code = main(["test", str(CU), "--kernel", "swap_warps_no_sync", "--sanitize", "racecheck"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert f"race between the write on line {STORE_LINE} and the read on line {LOAD_LINE}" in out
    assert f"  {LOAD_LINE} | y[i] = tile[tid ^ 32];" in out
    assert "a __syncthreads() between them orders the two" in out


# ---- the command line as a person runs it (no GPU here, or hidden)


def ptxls(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ptxls.cli.main", *args], capture_output=True, text=True,
        timeout=120, cwd=ROOT, env={**os.environ, "CUDA_VISIBLE_DEVICES": "", **env},
    )  # fmt: skip


def test_cli_sanitizes_a_cu_file_and_says_there_is_no_gpu(tmp_path):
    fake = tmp_path / "compute-sanitizer"
    fake.write_text("#!/bin/sh\necho 'Version 2099.1.0.0'\n")
    fake.chmod(0o755)
    r = ptxls("test", str(CU), "--sanitize", "--json", PTXLS_COMPUTE_SANITIZER=str(fake))
    assert r.returncode == 3, r.stdout + r.stderr
    assert '"status": "no-gpu"' in r.stdout and '"kernel": "reverse_tile_oob"' in r.stdout
    r = ptxls("test", str(CU), "--sanitize", PTXLS_COMPUTE_SANITIZER="/no/cs")
    assert r.returncode == 2 and "PTXLS_COMPUTE_SANITIZER=/no/cs does not exist" in r.stdout


def test_cli_refuses_what_it_cannot_sanitize(tmp_path):
    py = tmp_path / "k.py"
    py.write_text("import triton\n")
    r = ptxls("test", str(py), "--sanitize")
    assert r.returncode == 2 and "--sanitize runs the kernels of a .ptx or a CUDA (.cu)" in r.stderr
    empty = tmp_path / "none.cu"
    empty.write_text("int main() { return 0; }\n")
    r = ptxls("test", str(empty), "--sanitize")
    assert r.returncode == 2 and "no kernels (__global__) in" in r.stderr
