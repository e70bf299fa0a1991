"""Instruction knowledge: the table is well-formed, hovers state the facts, and every requirement
that has an example is what real ptxas enforces (accepts at the minimum, rejects just below).

What the availability lint reports, case by case (and that ptxas rejects each case), is the
annotated corpus in tests/data/ptx_cases/isa/ (test_ptx_cases.py)."""

from __future__ import annotations

import json
import re
import subprocess
from importlib import resources
from pathlib import Path

import pytest

from ptxls.diagnostics import isa
from ptxls.diagnostics.isa_lints import lint_availability
from ptxls.toolchain.discovery import all_tools

from toolchain_helpers import nvcc_id, nvcc_ptx, nvccs

DATA = json.loads(
    resources.files("ptxls.diagnostics").joinpath("data/ptx_isa.json").read_text("utf-8")
)
VERSION = re.compile(r"^\d+\.\d$")
TARGET = re.compile(r"^sm_\d+[af]?$")

# Every .version and .target ptxas has known, in order (PTX ISA "Release Notes").
PTX_VERSIONS = [
    "1.0", "1.1", "1.2", "1.3", "1.4", "1.5", "2.0", "2.1", "2.2", "2.3", "3.0", "3.1", "3.2",
    "4.0", "4.1", "4.2", "4.3", "5.0", "6.0", "6.1", "6.2", "6.3", "6.4", "6.5", "7.0", "7.1",
    "7.2", "7.3", "7.4", "7.5", "7.6", "7.7", "7.8", "8.0", "8.1", "8.2", "8.3", "8.4", "8.5",
    "8.6", "8.7", "8.8", "9.0", "9.1", "9.2", "9.3", "9.4", "9.5",
]  # fmt: skip
SM_TARGETS = [10, 11, 12, 13, 20, 21, 30, 32, 35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100]  # fmt: skip


# --- the table ----------------------------------------------------------------------------


def test_every_opcode_entry_is_well_formed():
    assert len(DATA["opcodes"]) >= 100
    for name, o in DATA["opcodes"].items():
        assert re.fullmatch(r"[a-z][a-z0-9_.]*", name), name
        assert len(o["summary"]) > 30 and o["syntax"], name
        assert VERSION.match(o["isa"]), name
        assert o["target"] is None or TARGET.match(o["target"]), name
        for m, meaning in o.get("modifiers", {}).items():
            assert m.startswith(".") and meaning, (name, m)
        for v in o.get("variants", []):
            assert v["when"] and all(w.startswith(".") for w in v["when"]), name
            assert VERSION.match(v["isa"]) and (v["target"] is None or TARGET.match(v["target"]))
        for t in o.get("arch_specific", []):
            assert TARGET.match(t) and t[-1] in "af", (name, t)
        if o.get("example"):
            assert o["example"].split()[0].startswith(name), name


def test_modifiers_registers_directives_are_well_formed():
    assert all(k.startswith(".") and v for k, v in DATA["modifiers"].items())
    for table in ("special_registers", "directives"):
        for k, v in DATA[table].items():
            assert k[0] in "%." and v["summary"], k
            assert VERSION.match(v["isa"]) and (v["target"] is None or TARGET.match(v["target"]))


def test_the_brief_s_opcodes_are_all_there():
    wanted = (
        "ld st ldu mov cvt cvta add sub mul mad fma div rem abs neg min max rcp sqrt rsqrt sin "
        "cos ex2 lg2 tanh setp selp set and or xor not shl shr bfe bfi popc clz brev prmt bra "
        "brx.idx call ret exit bar barrier bar.warp.sync membar fence atom red shfl.sync "
        "vote.sync match redux.sync activemask cp.async cp.async.commit_group "
        "cp.async.wait_group cp.async.bulk cp.async.bulk.tensor mbarrier ldmatrix stmatrix mma "
        "wmma wgmma.mma_async wgmma.fence wgmma.commit_group wgmma.wait_group elect.sync "
        "griddepcontrol setmaxnreg tex suld trap brkpt nanosleep discard prefetch isspacep "
        "testp copysign dp4a dp2a mul24 mad24 sad cnot lop3 shf szext bmsk applypriority "
        "createpolicy stackrestore stacksave alloca"
    )
    assert [w for w in wanted.split() if w not in isa.opcode_names()] == []
    for sreg in ("%tid", "%ntid", "%ctaid", "%nctaid", "%laneid", "%warpid", "%smid"):
        assert sreg in isa.special_register_names()
    for d in (".version", ".target", ".maxntid", ".reqntid", ".minnctapersm", ".maxnreg"):
        assert d in isa.directive_names()
    for m in (".global", ".shared::cluster", ".cg", ".v4", ".bf16x2", ".e4m3", ".rni", ".ftz"):
        assert m in isa.modifier_names()


# --- hovers and requirements -----------------------------------------------------------------


def test_hover_on_a_vector_load_explains_each_modifier():
    text = isa.hover_markdown("ld.global.v4.f32")
    assert text.startswith("**ld**")
    assert "- `.global`: global memory" in text
    assert "- `.v4`: vector of 4 elements" in text
    assert "- `.f32`: IEEE single precision" in text
    assert text.endswith("PTX ISA ≥ 1.0, all targets")


def test_hover_names_the_variant_that_raises_the_requirement():
    text = isa.hover_markdown("ld.acquire.gpu.global.u32")
    assert "PTX ISA ≥ 6.0, sm_70+ (for `ld.acquire`)" in text


def test_hover_on_arch_specific_instruction_says_only_which_targets():
    text = isa.hover_markdown("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16")
    assert "PTX ISA ≥ 8.0, only sm_90a" in text
    assert "- `.m64n128k16`: matrix shape M=64, N=128, K=16" in text


def test_hover_special_registers_directives_and_lone_modifiers():
    assert "threadIdx" in isa.hover_markdown("%tid.x")
    assert "component `.x`" in isa.hover_markdown("%tid.x")
    assert "PTX ISA ≥ 7.8, sm_90+" in isa.hover_markdown("%cluster_ctarank")
    assert "environment" in isa.hover_markdown("%envreg7")
    assert "__launch_bounds__" in isa.hover_markdown(".maxntid")
    assert "L2 only" in isa.hover_markdown(".cg")


@pytest.mark.parametrize("token", ["", "%r1", "$L__BB0_2", "foo.bar", ".nonsense", "%"])
def test_hover_on_unknown_tokens_is_none(token):
    assert isa.hover_markdown(token) is None


@pytest.mark.parametrize(
    "token, expected",
    [
        ("redux.sync.add.u32", ((7, 0), "sm_80")),
        ("cp.async.ca.shared.global", ((7, 0), "sm_80")),
        ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", ((7, 0), "sm_80")),
        ("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32", ((6, 4), "sm_70")),
        ("stmatrix.sync.aligned.m8n8.x4.shared.b16", ((7, 8), "sm_90")),
        ("atom.global.add.f64", ((5, 0), "sm_60")),
        ("add.s32", ((1, 0), None)),
        ("setmaxnreg.inc.sync.aligned.u32", ((8, 0), "sm_90a")),
    ],
)
def test_requirements(token, expected):
    assert isa.requirements(token) == expected


def test_requirements_of_unknown_token_is_none():
    assert isa.requirements("frobnicate.u32") is None


# --- every example against real ptxas ----------------------------------------------------------

HARNESS = """.version {version}
.target {target}
.address_size 64
.visible .entry k(.param .u64 p)
{{
.reg .b32 %r<10>; .reg .b64 %rd<10>; .reg .f32 %f<10>; .reg .pred %p<4>; .reg .b16 %h<10>; .reg .f64 %fd<10>;
.shared .align 16 .b8 smem[1024];
{line}
LBL:
ret;
}}
"""
LINE = 8  # 1-based line of {line} in HARNESS


def examples():
    """(token, example line) for every opcode and variant that carries an example."""
    out = []
    for name, o in DATA["opcodes"].items():
        if o.get("example"):
            out.append(pytest.param(o["example"], id=name))
        for v in o.get("variants", []):
            if v.get("example"):
                out.append(pytest.param(v["example"], id=name + "".join(v["when"])))
    return out


def _ptxases():
    tools = [t for t in all_tools("ptxas") if t.max_ptx_isa]
    return tools or [pytest.param(None, marks=pytest.mark.skip(reason="no ptxas found"))]


def errors_on_line(ptxas, version: str, target: str, line: str, tmp_path: Path) -> list[str]:
    """ptxas's messages about the example line itself (header complaints are not counted)."""
    src = tmp_path / "probe.ptx"
    src.write_text(HARNESS.format(version=version, target=target, line=line))
    arch = target if isa.sm_number(target) and isa.sm_number(target) >= 75 else "sm_75"
    proc = subprocess.run(
        [ptxas.path, f"-arch={arch}", str(src), "-o", "/dev/null"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return [m for m in proc.stderr.splitlines() if f"line {LINE};" in m and "error" in m]


def _below(version: tuple[int, int]) -> str | None:
    text = f"{version[0]}.{version[1]}"
    i = PTX_VERSIONS.index(text)
    return PTX_VERSIONS[i - 1] if i else None


def _target_below(target: str) -> str | None:
    n = isa.sm_number(target)
    lower = [t for t in SM_TARGETS if t < n]
    return f"sm_{lower[-1]}" if lower else None


def _fmt(v):
    return f"{v[0]}.{v[1]}"


@pytest.mark.parametrize("ptxas", _ptxases(), ids=lambda t: f"ptxas-{t.version}" if t else "none")
@pytest.mark.parametrize("line", examples())
def test_example_needs_exactly_what_the_table_says(ptxas, line, tmp_path):
    token = line.split()[0]
    req = isa.requirement(token)
    lint_isa = req.lint_isa
    if lint_isa > ptxas.max_ptx_isa:
        pytest.skip(f"{ptxas.describe()} predates PTX ISA {_fmt(lint_isa)}")
    target = req.arch_specific[0] if req.arch_specific else (req.target or "sm_20")
    # Accepted at the minimum version and target the table gives (what the lint relies on).
    assert errors_on_line(ptxas, _fmt(lint_isa), target, line, tmp_path) == []
    # Rejected one version below, with a message about the version.
    below = _below(lint_isa)
    if below:
        errs = errors_on_line(ptxas, below, target, line, tmp_path)
        assert any("requires PTX ISA .version" in e for e in errs), errs
    # Rejected one target below (arch-specific: on the plain target of the same number).
    newest = _fmt(ptxas.max_ptx_isa)
    if req.arch_specific:
        plain = f"sm_{isa.sm_number(req.arch_specific[0])}"
        assert errors_on_line(ptxas, newest, plain, line, tmp_path) != []
    elif req.target and _target_below(req.target):
        errs = errors_on_line(ptxas, newest, _target_below(req.target), line, tmp_path)
        assert any("requires .target" in e or "not supported" in e for e in errs), errs


# --- the availability lint -----------------------------------------------------------------------

KERNELS = Path(__file__).parent / "data" / "cuda_kernels"

# Kernels that use the newer instructions the lint knows about, compiled by nvcc for the oldest
# target that has them: the lint must stay silent on what nvcc itself writes.
MODERN_CU = {
    "sm_80": r"""
#include <cuda_pipeline.h>
#include <mma.h>
using namespace nvcuda;
__global__ void modern(const float* in, float* out, unsigned* hist, double* acc, const half* a,
                       const half* b, float* c) {
    __shared__ float tile[256];
    __pipeline_memcpy_async(&tile[threadIdx.x], &in[blockIdx.x * 256 + threadIdx.x], 4);
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();
    unsigned v = __float_as_uint(tile[threadIdx.x]);
    unsigned s = __reduce_add_sync(0xffffffffu, v);
    float x = __shfl_xor_sync(0xffffffffu, tile[threadIdx.x], 1);
    unsigned m = __match_any_sync(0xffffffffu, v);
    atomicAdd(acc, (double)x);
    atomicAdd(&hist[v & 255], s + m);
    __nanosleep(100);
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
    out[blockIdx.x * 256 + threadIdx.x] = x + __int_as_float(__activemask());
}
""",
    "sm_90a": r"""
__global__ void __launch_bounds__(256) hopper(float* out) {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    asm volatile("wgmma.fence.sync.aligned;");
    asm volatile("wgmma.commit_group.sync.aligned;");
    asm volatile("wgmma.wait_group.sync.aligned 0;");
    asm volatile("griddepcontrol.wait;");
    unsigned rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    out[threadIdx.x] = rank;
}
""",
}


NVCC_IDS = {"ids": nvcc_id}


@pytest.mark.parametrize("nvcc", nvccs(), **NVCC_IDS)
@pytest.mark.parametrize("cu", sorted(KERNELS.glob("*.cu")), ids=lambda p: p.stem)
def test_availability_lint_is_silent_on_nvcc_output(nvcc, cu, tmp_path):
    ptx = nvcc_ptx(nvcc, cu, tmp_path, arch="sm_75")
    assert ".entry" in ptx
    assert lint_availability(ptx) == []


@pytest.mark.parametrize("nvcc", nvccs(), **NVCC_IDS)
@pytest.mark.parametrize("arch", sorted(MODERN_CU))
def test_availability_lint_is_silent_on_nvcc_output_with_new_instructions(nvcc, arch, tmp_path):
    cu = tmp_path / f"modern_{arch}.cu"
    cu.write_text(MODERN_CU[arch])
    ptx = nvcc_ptx(nvcc, cu, tmp_path, arch=arch)
    # The kernels really contain the instructions the lint checks.
    for opcode in (
        ("cp.async", "redux.sync", "match.any.sync", "wmma.mma", "nanosleep")
        if arch == "sm_80"
        else ("setmaxnreg", "wgmma.fence", "griddepcontrol")
    ):
        assert opcode in ptx, opcode
    assert lint_availability(ptx) == []


@pytest.mark.parametrize(
    "junk", ["", "{", "}}}", ".version 7.0\n.target sm_75\n{ redux.sync", "\x00"]
)
def test_availability_lint_never_raises(junk):
    lint_availability(junk)
