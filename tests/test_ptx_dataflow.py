"""The dataflow completeness check (frontend/ptx_dataflow.py) on every corpus of real PTX the
project has — no finding allowed — and on planted incomplete kernels — each must be found.

Corpora: the library kernels (fewshot/kernels/*/kernel.ptx), nvcc -O3's and -G's PTX of every
reference.cu and examples/*.cu (the wheel's nvcc, run here), Triton's PTX of every kernel of
examples/*triton*.py (compiled here by toolchain/triton_compile.py), the hand-written examples
and tests/data/cheaters. Planted kernels: tests/data/dataflow/planted/*.ptx, each cut from
tests/data/dataflow/complete_saxpy_relu.ptx, its first lines naming what was done and the
finding it must give (``// finds: KIND``).
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from ptxls.frontend.ptx_dataflow import check_dataflow

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data" / "dataflow"
LIBRARY = sorted(ROOT.glob("fewshot/kernels/*/kernel.ptx"))
HAND_WRITTEN = [
    *sorted(ROOT.glob("examples/*.ptx")),
    *sorted((Path(__file__).parent / "data" / "cheaters").glob("*.ptx")),
    DATA / "complete_saxpy_relu.ptx",
]
CUDA = [*sorted(ROOT.glob("fewshot/kernels/*/reference.cu")), *sorted(ROOT.glob("examples/*.cu"))]
PLANTED = sorted((DATA / "planted").glob("*.ptx"))


def _shown(path: Path, text: str) -> list[str]:
    return [f"{path.name}: {f.kind} {f.shown()}" for f in check_dataflow(text)]


def test_the_corpora_are_there():
    assert len(LIBRARY) >= 14 and len(CUDA) >= 15 and len(PLANTED) >= 12


@pytest.mark.parametrize("path", LIBRARY + HAND_WRITTEN, ids=lambda p: p.parent.name + "/" + p.name)
def test_no_finding_on_library_and_hand_written_ptx(path: Path):
    assert _shown(path, path.read_text()) == []


@pytest.mark.parametrize("opt", ["-O3", "-G"], ids=["O3", "debug"])
def test_no_finding_on_nvcc_ptx_of_every_cuda_source(opt, tmp_path):
    from ptxls.toolchain.discovery import find_nvcc

    try:
        nvcc = find_nvcc()
    except Exception as e:  # the tool's own message says what is missing
        pytest.skip(f"nvcc not found: {e}")
    found, compiled = [], 0
    for cu in CUDA:
        out = tmp_path / f"{cu.parent.name}-{cu.stem}.ptx"
        # sm_90a: hgemm_wgmma's reference uses wgmma
        run = subprocess.run(
            [nvcc.path, "-ptx", opt, "-arch=sm_90a", "-o", str(out), str(cu)],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert run.returncode == 0, f"{cu}: {run.stderr[-500:]}"
        compiled += 1
        found += _shown(out, out.read_text())
    assert compiled == len(CUDA)
    assert found == []


def test_no_finding_on_triton_ptx_of_the_examples():
    pytest.importorskip("triton")
    from ptxls.frontend.triton import read_triton
    from ptxls.lowering.triton_reference import gputest_types
    from ptxls.toolchain.triton_compile import recipe_for, triton_to_ptx

    async def compile_all() -> list[tuple[str, str]]:
        out = []
        for py in sorted(ROOT.glob("examples/*triton*.py")):
            text = py.read_text()
            for k in read_triton(text).kernels:
                build, why = recipe_for(text, k.name, str(py), gputest_types(text, k.name))
                assert build is not None, why
                res = await triton_to_ptx(build.to_json(), arch="sm_90")
                assert res.ok, res.message
                out.append((f"{py.name}:{k.name}", res.ptx))
        return out

    compiled = asyncio.run(compile_all())
    assert len(compiled) >= 2
    found = [f"{name}: {f.kind} {f.shown()}" for name, ptx in compiled for f in check_dataflow(ptx)]
    assert found == []


@pytest.mark.parametrize("path", PLANTED, ids=lambda p: p.stem)
def test_each_planted_incomplete_kernel_is_found(path: Path):
    text = path.read_text()
    want = next(line.split(":", 1)[1].strip() for line in text.splitlines() if "// finds:" in line)
    kinds = {f.kind for f in check_dataflow(text)}
    assert want in kinds, f"{path.name}: wanted {want}, got {sorted(kinds)}"


def test_the_gutted_kernel_names_the_missing_registers_with_their_lines():
    text = (DATA / "planted" / "unchanged_index_and_loads.ptx").read_text()
    lines = text.splitlines()
    found = [f for f in check_dataflow(text) if f.kind == "read-before-write"]
    assert found
    for f in found:
        assert f.name in lines[f.line]
        assert lines[f.line][f.col : f.end_col] == f.name
    assert {"%r5", "%f2", "%f3"} <= {f.name for f in found}


def _kernel(body: str, regs: str = ".reg .b32 %r<9>; .reg .pred %p<4>; .reg .b64 %rd<9>;") -> str:
    return (
        ".version 8.0\n.target sm_90\n.address_size 64\n"
        ".visible .entry k(.param .u64 k_out, .param .u32 k_n)\n{\n"
        f"{regs}\n"
        "ld.param.u64 %rd1, [k_out];\nld.param.u32 %r1, [k_n];\n"
        f"{body}\n"
        "st.global.u32 [%rd1], %r2;\nret;\n}\n"
    )


@pytest.mark.parametrize(
    "body",
    [
        # a predicated write counts (the read may be under the same predicate)
        "setp.lt.u32 %p1, %r1, 4;\n@%p1 mov.u32 %r2, 1;\n@!%p1 mov.u32 %r2, 2;",
        # a vector destination writes each member; '_' is a sink
        "ld.global.v2.u32 {%r2, _}, [%rd1];",
        # the '%p|%r' pair of shfl writes both
        "shfl.sync.idx.b32 %r2|%p2, %r1, 0, 31, -1;",
        # a loop-carried value written before the loop, updated in it
        "mov.u32 %r2, 0;\nL1:\nadd.u32 %r2, %r2, 1;\nsetp.lt.u32 %p1, %r2, %r1;\n@%p1 bra L1;",
        # special registers need no write; .loc lines carry no ';'
        ".loc 1 3 4\nmov.u32 %r2, %tid.x;",
        # an instruction this check does not know writes what it names
        "tcgen05.ld.sync.aligned.16x64b.x1.b32 {%r2}, [%r1];",
        # a written register inside an inline-asm block, read after it
        "{\n.reg .b32 t;\nmov.u32 %r2, 7;\n}",
        # a parameter's address taken with mov, then loaded through
        "mov.u64 %rd2, k_n;\nld.param.u32 %r2, [%rd2];",
    ],
)
def test_no_finding_on_legal_forms(body: str):
    assert [f.shown() for f in check_dataflow(_kernel(body))] == []


def test_a_read_after_a_branch_around_its_only_write_is_still_written_on_some_path():
    # one path writes %r2, the other does not: the check only says what holds on every path
    body = "setp.lt.u32 %p1, %r1, 4;\n@%p1 bra L2;\nmov.u32 %r2, 1;\nL2:"
    assert check_dataflow(_kernel(body)) == []


def test_a_read_that_no_write_reaches_is_found_also_in_a_loop():
    body = "L1:\nadd.u32 %r3, %r4, 1;\nmov.u32 %r2, %r3;\nsetp.lt.u32 %p1, %r2, %r1;\n@%p1 bra L1;"
    found = check_dataflow(_kernel(body))
    assert [f.name for f in found] == ["%r4"]
    assert found[0].line == _kernel(body).splitlines().index("add.u32 %r3, %r4, 1;")


def test_code_after_ret_is_not_judged():
    body = "mov.u32 %r2, 1;\nst.global.u32 [%rd1], %r2;\nret;\nadd.u32 %r3, %r5, 1;"
    assert check_dataflow(_kernel(body)) == []


def test_a_call_hands_the_pointer_on():
    text = (
        _kernel("mov.u32 %r2, 0;")
        .replace(
            "st.global.u32 [%rd1], %r2;",
            "{\n.param .b64 p0;\nst.param.b64 [p0], %rd1;\ncall.uni f, (p0);\n}",
        )
        .replace(".visible .entry", ".func f(.param .b64 a)\n{\nret;\n}\n.visible .entry")
    )
    kinds = {f.kind for f in check_dataflow(text)}
    assert "stores-through-no-pointer" not in kinds and "stores-nothing" not in kinds


def test_bad_input_gives_no_finding_and_no_exception():
    for text in ["", "}{", ".entry", ".entry k( {", "\x00" * 10, ".entry k() { @ ; [ , ] }"]:
        assert check_dataflow(text) == []


def test_an_output_the_caller_names_and_nothing_stores_through_is_found():
    text = (DATA / "complete_saxpy_relu.ptx").read_text()
    assert check_dataflow(text, outputs=(2,)) == []  # out is stored through
    two = (
        text.replace(
            "    .param .u32 saxpy_relu_param_n\n",
            "    .param .u32 saxpy_relu_param_n,\n    .param .u64 saxpy_relu_param_out2\n",
        )
        .replace(".reg .b64   %rd<12>;", ".reg .b64   %rd<13>;")
        .replace(
            "    ld.param.u32        %r1, [saxpy_relu_param_n];\n",
            "    ld.param.u32        %r1, [saxpy_relu_param_n];\n"
            "    ld.param.u64        %rd12, [saxpy_relu_param_out2];\n",
        )
    )
    assert two != text
    # without knowing the outputs nothing is wrong: one pointer is stored through
    assert check_dataflow(two) == []
    found = check_dataflow(two, outputs=(2, 5))
    assert [(f.kind, f.name) for f in found] == [("output-never-stored", "saxpy_relu_param_out2")]
    assert two.splitlines()[found[0].line].strip().startswith(".param .u64 saxpy_relu_param_out2")
