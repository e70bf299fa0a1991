"""Resource usage: ``ptxas -v`` output parsed per function (ptxls.frontend.ptxas_report), and the
occupancy it implies (ptxls.diagnostics.resources).

The captured outputs below are real ptxas runs (CUDA 13.5 wheel and CUDA 13.0) on the kernels in
SPILL_CU and SMEM_CU, compiled by nvcc to PTX; the last tests run ptxas for real."""

from __future__ import annotations

import subprocess

import pytest

from ptxls.diagnostics.resources import (
    ARCH_LIMITS,
    block_size_hints,
    entry_occupancy,
    format_usage_markdown,
    limits_for,
    occupancy,
    usage_report,
)
from ptxls.frontend.ptxas_report import EntryUsage, parse_ptxas_verbose
from ptxls.toolchain.discovery import ToolNotFound, all_tools, cuda_include_dirs, find_ptxas

SMEM_CU = r"""
__global__ void smem_kernel(float* out, const float* in, int n) {
  __shared__ float tile[1024];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? in[i] : 0.f;
  __syncthreads();
  if (i < n) out[i] = tile[(threadIdx.x + 1) % blockDim.x];
}
__device__ __noinline__ float helper(float x) {
  float a[40];
  for (int k = 0; k < 40; k++) a[k] = x * k;
  return a[(int)x % 40];
}
__global__ void __launch_bounds__(128) calls(float* out) { out[threadIdx.x] = helper(out[threadIdx.x]); }
"""

# 1024 threads and 2 blocks per SM leave 32 registers a thread: 64 live floats must spill.
SPILL_CU = r"""
__global__ void __launch_bounds__(1024, 2) spill_kernel(float* out, const float* in) {
  float acc[64];
  #pragma unroll
  for (int k = 0; k < 64; k++) acc[k] = in[threadIdx.x + k * 1024];
  #pragma unroll
  for (int j = 0; j < 8; j++)
  #pragma unroll
  for (int k = 0; k < 64; k++) acc[k] = acc[k] * acc[(k + j + 1) % 64] + 1.0f;
  float s = 0;
  #pragma unroll
  for (int k = 0; k < 64; k++) s += acc[k];
  out[threadIdx.x] = s;
}
__constant__ float coeffs[64];
__global__ void const_kernel(float* out) { out[threadIdx.x] = coeffs[threadIdx.x % 64]; }
"""

SMEM_SM90_135 = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z5callsPf' for 'sm_90'
ptxas info    : Function properties for _Z5callsPf
    160 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 160 bytes cumulative stack size
ptxas info    : Compile time = 14.478 ms
ptxas info    : Function properties for _Z6helperf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function '_Z11smem_kernelPfPKfi' for 'sm_90'
ptxas info    : Function properties for _Z11smem_kernelPfPKfi
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 1 barriers, 4096 bytes smem
ptxas info    : Compile time = 6.948 ms
"""

SPILL_SM80_135 = """\
ptxas info    : 0 bytes gmem, 256 bytes cmem[3]
ptxas info    : Compiling entry function '_Z12const_kernelPf' for 'sm_80'
ptxas info    : Function properties for _Z12const_kernelPf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers, 360 bytes cmem[0]
ptxas info    : Compile time = 7.183 ms
ptxas info    : Compiling entry function '_Z12spill_kernelPfPKf' for 'sm_80'
ptxas info    : Function properties for _Z12spill_kernelPfPKf
    952 bytes stack frame, 1904 bytes spill stores, 1940 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 952 bytes cumulative stack size, 368 bytes cmem[0]
ptxas info    : Compile time = 135.631 ms
"""

SPILL_SM120_130 = """\
ptxas warning : Value of threads per SM for entry _Z12spill_kernelPfPKf is out of range. .minnctapersm will be ignored
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z12const_kernelPf' for 'sm_120'
ptxas info    : Function properties for _Z12const_kernelPf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 0 barriers
ptxas info    : Compile time = 3.142 ms
ptxas info    : Compiling entry function '_Z12spill_kernelPfPKf' for 'sm_120'
ptxas info    : Function properties for _Z12spill_kernelPfPKf
    88 bytes stack frame, 176 bytes spill stores, 180 bytes spill loads
ptxas info    : Used 64 registers, used 0 barriers, 88 bytes cumulative stack size
ptxas info    : Compile time = 73.028 ms
"""


# --- parsing captured output -----------------------------------------------------------------


def test_shared_memory_and_barriers_per_entry():
    entries = parse_ptxas_verbose(SMEM_SM90_135)
    by_name = {u.name: u for u in entries}
    smem = by_name["_Z11smem_kernelPfPKfi"]
    assert (smem.registers, smem.shared_static, smem.barriers) == (10, 4096, 1)
    assert (smem.arch, smem.is_entry, smem.compile_ms) == ("sm_90", True, 6.948)
    calls = by_name["_Z5callsPf"]
    assert (calls.registers, calls.stack_frame, calls.cumulative_stack) == (32, 160, 160)
    assert not calls.spills


def test_device_functions_come_after_entries_and_carry_their_frame():
    entries = parse_ptxas_verbose(SMEM_SM90_135)
    assert [u.is_entry for u in entries] == [True, True, False]
    helper = entries[-1]
    assert helper.name == "_Z6helperf" and helper.registers is None and helper.arch == "sm_90"


def test_spills_constant_banks_and_module_constants():
    const, spill = parse_ptxas_verbose(SPILL_SM80_135)
    assert (spill.name, spill.registers) == ("_Z12spill_kernelPfPKf", 32)
    assert (spill.spill_stores, spill.spill_loads, spill.stack_frame) == (1904, 1940, 952)
    assert spill.spills and spill.constant == {0: 368}
    assert const.constant == {0: 360} and const.module_constant == 256  # coeffs[64] floats


def test_older_ptxas_output_without_constant_bank():
    const, spill = parse_ptxas_verbose(SPILL_SM120_130)
    assert spill.arch == "sm_120" and spill.registers == 64
    assert (spill.spill_stores, spill.spill_loads) == (176, 180)
    assert const.constant == {} and const.registers == 10


@pytest.mark.parametrize(
    "junk", ["", "ptxas info    : Used registers", "Used 12 registers", "\x00\n}", "ptxas fatal"]
)
def test_parser_never_raises_on_odd_output(junk):
    parse_ptxas_verbose(junk)


def test_used_line_before_any_entry_is_ignored():
    assert parse_ptxas_verbose("ptxas info    : Used 12 registers, 64 bytes smem\n") == []


def test_old_style_smem_sum_is_added():
    out = (
        "ptxas info    : Compiling entry function 'k' for 'sm_70'\n"
        "ptxas info    : Used 12 registers, 2048+16 bytes smem, 4 bytes cmem[1]\n"
    )
    (u,) = parse_ptxas_verbose(out)
    assert u.shared_static == 2064 and u.constant == {1: 4}


# --- occupancy (the cuda_occupancy.h computation, worked by hand) -----------------------------


def test_register_limited_occupancy_on_sm_120():
    # 64 regs × 32 lanes = 2048 per warp; 16384 regs per sub-partition → 8 warps each, 32 per
    # SM; 8 warps a block → 4 blocks (48 warps is the SM maximum).
    occ = occupancy(64, 0, 0, 256, ARCH_LIMITS[120])
    assert (occ.blocks_per_sm, occ.active_warps, occ.max_warps) == (4, 32, 48)
    assert occ.limited_by == ["registers"] and round(occ.percent) == 67


def test_shared_memory_limited_occupancy_on_sm_80():
    # 48 KB + 1 KB reserved per block = 50176 B; 164 KB per SM → 3 blocks of 4 warps.
    occ = occupancy(32, 48 * 1024, 1, 128, ARCH_LIMITS[80])
    assert (occ.blocks_per_sm, occ.active_warps) == (3, 12)
    assert occ.limited_by == ["shared memory"]


def test_dynamic_shared_memory_counts():
    without = occupancy(32, 0, 0, 128, ARCH_LIMITS[90])
    with_dyn = occupancy(32, 0, 0, 128, ARCH_LIMITS[90], dynamic_smem=100 * 1024)
    assert without.blocks_per_sm == 16 and with_dyn.blocks_per_sm == 2


def test_warp_limited_occupancy_with_full_blocks():
    occ = occupancy(10, 4096, 1, 1024, ARCH_LIMITS[90])
    assert (occ.blocks_per_sm, occ.active_warps, occ.limited_by) == (2, 64, ["warps"])


@pytest.mark.parametrize(
    "regs, smem, block, arch, why",
    [
        (255, 0, 1024, 75, "register file"),
        (32, 70_000, 128, 75, "shared memory"),
        (32, 0, 2048, 90, "at most 1024 threads"),
    ],
)
def test_launches_that_cannot_fit_say_why(regs, smem, block, arch, why):
    occ = occupancy(regs, smem, 0, block, ARCH_LIMITS[arch])
    assert occ.blocks_per_sm == 0 and why in occ.note


def test_arch_names_map_to_limits():
    assert limits_for("sm_90a") is ARCH_LIMITS[90]
    assert limits_for("sm_100f") is ARCH_LIMITS[100]
    assert limits_for("sm_35") is None and limits_for("bogus") is None


def test_block_size_from_reqntid_or_maxntid():
    ptx = """.version 8.0
.target sm_90
.address_size 64
.visible .entry a() .maxntid 128, 2, 1 { ret; }
.visible .entry b() .reqntid 64 { ret; }
.visible .entry c() { ret; }
"""
    assert block_size_hints(ptx) == {"a": 256, "b": 64}


def test_markdown_names_spills_and_the_limit():
    (_, spill) = parse_ptxas_verbose(SPILL_SM120_130)
    spill.block_size_hint = 1024
    text = format_usage_markdown(spill)
    assert "**176 B stored, 180 B loaded**" in text
    # 64 regs at 1024 threads: 2048 regs a warp × 32 warps = 65536 = the whole register file.
    assert "1024 threads/block (from .reqntid/.maxntid): 1 blocks, 32/48 warps" in text
    assert "limited by warps, registers" in text


def test_markdown_without_limits_for_the_arch_says_so():
    u = EntryUsage(name="k", arch="sm_35", registers=10)
    assert "no per-SM limits known for sm_35" in format_usage_markdown([u], block_size=128)


# --- real ptxas ------------------------------------------------------------------------------------


def _nvcc():
    nvccs = all_tools("nvcc")
    try:
        find_ptxas()
    except ToolNotFound:
        nvccs = []
    if not nvccs:
        pytest.skip("needs nvcc and ptxas (pip install nvidia-cuda-nvcc)")
    return nvccs[0]


def _ptx(nvcc, source: str, arch: str, tmp_path) -> str:
    cu = tmp_path / "k.cu"
    cu.write_text(source)
    out = tmp_path / "k.ptx"
    inc = [f"-I{d}" for d in cuda_include_dirs()]
    subprocess.run(
        [nvcc.path, "-ptx", f"-arch={arch}", *inc, str(cu), "-o", str(out)],
        check=True,
        capture_output=True,
        timeout=180,
    )
    return out.read_text()


async def test_real_ptxas_reports_spills_and_block_size(tmp_path):
    nvcc = _nvcc()
    ptx = _ptx(nvcc, SPILL_CU, "sm_80", tmp_path)
    report = await usage_report(ptx, "sm_80")  # picks a ptxas that reads this .version
    assert report.error == "" and "ptxas" in report.tool
    by_name = {u.name: u for u in report.entries}
    spill = by_name["_Z12spill_kernelPfPKf"]
    assert spill.registers <= 32 and spill.spills  # __launch_bounds__(1024, 2) caps registers
    assert spill.block_size_hint == 1024
    occ = entry_occupancy(spill)
    assert occ.block_size == 1024 and occ.blocks_per_sm == 2


async def test_real_ptxas_reports_static_shared_memory(tmp_path):
    nvcc = _nvcc()
    ptx = _ptx(nvcc, SMEM_CU, "sm_90", tmp_path)
    report = await usage_report(ptx, "sm_90")
    smem = {u.name: u for u in report.entries}["_Z11smem_kernelPfPKfi"]
    assert smem.shared_static == 1024 * 4 and smem.barriers == 1
    assert "shared memory (static): 4.0 KB" in format_usage_markdown(report.entries)


async def test_ptx_that_ptxas_rejects_is_an_error_not_an_exception():
    bad = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k() { frob; ret; }\n"
    try:
        report = await usage_report(bad, "sm_90")
    except ToolNotFound:
        pytest.skip("no ptxas")
    assert report.entries == [] and "frob" in report.error
