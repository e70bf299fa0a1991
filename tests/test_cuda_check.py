"""CUDA diagnostics: nvcc's messages (and NVRTC's when there is no nvcc) on the right token."""

from __future__ import annotations

from pathlib import Path

import pytest

from ptxls.diagnostics.cuda_check import check_cuda, parse_cuda_output
from ptxls.diagnostics.model import Severity

SRC = (
    (Path(__file__).parent.parent / "examples" / "vec_add.cu")
    .read_text()
    .replace("a[i] + b[i]", "a[i] + b[i] + bias")
)


def test_parses_edg_messages_with_caret_and_gcc_style():
    out = (
        '/tmp/x/k.cu(6): error: identifier "bias" is undefined\n'
        "          c[i] = a[i] + b[i] + bias;\n"
        "                               ^\n\n"
        '/tmp/x/k.cu(4): warning #177-D: variable "unused" was declared but never referenced\n'
        "k.cu:1:10: fatal error: nope.h: No such file or directory\n"
    )
    msgs = parse_cuda_output(out)
    assert [(m.line, m.severity) for m in msgs] == [
        (6, Severity.ERROR),
        (4, Severity.WARNING),
        (1, Severity.ERROR),
    ]
    assert msgs[0].col == 21 and msgs[1].code == "177-D" and msgs[2].col == 9


async def test_nvcc_reports_on_the_token(tmp_path):
    f = tmp_path / "k.cu"
    result = await check_cuda(SRC, file_path=str(f))
    [p] = [p for p in result.problems if p.severity is Severity.ERROR]
    line = SRC.splitlines()[p.line]
    assert line[p.col : p.end_col] == "bias" and p.source == "nvcc"


async def test_without_nvcc_nvrtc_answers_the_same(tmp_path):
    try:
        from cuda.bindings import nvrtc

        nvrtc.nvrtcVersion()
    except Exception as e:
        pytest.skip(f"NVRTC not loadable: {e}")
    result = await check_cuda(
        SRC, file_path=str(tmp_path / "k.cu"), nvcc_path=str(tmp_path / "no-nvcc")
    )
    assert result.tool == "NVRTC" and any("nvcc not found" in n for n in result.notes)
    [p] = [p for p in result.problems if p.severity is Severity.ERROR]
    assert SRC.splitlines()[p.line][p.col : p.end_col] == "bias" and p.source == "nvrtc"


async def test_missing_header_is_reported_not_raised(tmp_path):
    result = await check_cuda('#include "nope.h"\n' + SRC, file_path=str(tmp_path / "k.cu"))
    assert any("nope.h" in p.message and p.severity is Severity.ERROR for p in result.problems)
