"""The compute-heavy library kernels (scan_inclusive, sgemm_128x128, hgemm_mma, hgemm_wgmma)
beyond what every library kernel gets (tests/gpu/test_library_gpu.py, test_fewshot_library.py):

- without a GPU: ptxas keeps them free of spills at the register budgets their descriptions
  promise, and the wgmma kernel is refused for plain sm_90 (it really is sm_90a-only);
- with cuobjdump: the machine code holds the instructions the design is about (HGMMA for
  wgmma, HMMA for mma.sync, FFMA and no local memory for the SGEMM);
- on the GPU (torch + cuda-bindings, through bench/gemm_bench.py, the same code the benchmark
  runs): ours and nvcc's builds match float64 at odd shapes with guard bands intact, and the
  scan's look-back leaves the state it promises (one ticket per tile, every tile's inclusive
  prefix published) over thousands of tiles, launch after launch.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from ptxls.toolchain.discovery import ToolNotFound, find_tool

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "fewshot" / "kernels"
# name -> (target, most registers per thread the description's occupancy needs)
MINE = {
    "scan_inclusive": ("sm_90", 48),
    "sgemm_128x128": ("sm_90", 128),
    "hgemm_mma": ("sm_90", 255),
    "hgemm_wgmma": ("sm_90a", 255),
}


def _ptxas() -> str:
    try:
        return str(find_tool("ptxas").path)
    except ToolNotFound as e:
        pytest.skip(f"no ptxas: {e}")


def _assemble(name: str, arch: str, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [_ptxas(), f"-arch={arch}", "-v", str(KERNELS / name / "kernel.ptx"), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("name", sorted(MINE))
def test_no_spills_within_the_register_budget(name, tmp_path):
    arch, budget = MINE[name]
    done = _assemble(name, arch, tmp_path / "k.cubin")
    assert done.returncode == 0, done.stderr
    regs = int(re.search(r"Used (\d+) registers", done.stderr).group(1))
    assert regs <= budget, done.stderr
    assert re.search(r"\b0 bytes spill stores, 0 bytes spill loads", done.stderr), done.stderr
    assert re.search(r"\b0 bytes stack frame", done.stderr), done.stderr


def test_the_wgmma_kernel_needs_sm_90a_not_just_its_target_line(tmp_path):
    # the same PTX retargeted to plain sm_90: ptxas refuses the wgmma instructions themselves
    text = (KERNELS / "hgemm_wgmma" / "kernel.ptx").read_text()
    assert ".target sm_90a" in text
    plain = tmp_path / "plain.ptx"
    plain.write_text(text.replace(".target sm_90a", ".target sm_90"))
    done = subprocess.run(
        [_ptxas(), "-arch=sm_90", str(plain), "-o", str(tmp_path / "k.cubin")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "Instruction 'wgmma.mma_async" in done.stderr, done.stderr


@pytest.mark.parametrize(
    "name, must, must_not",
    [
        # HGMMA: wgmma on the tensor cores (an HMMA-only or FFMA-only SASS is a slower path)
        ("hgemm_wgmma", ["HGMMA.64x256x16", "LDSM", "LDGSTS"], ["LDL", "STL"]),
        ("hgemm_mma", ["HMMA.16816.F32", "LDSM", "LDGSTS"], ["LDL", "STL"]),
        ("sgemm_128x128", ["FFMA", "LDS.128", "STG.E.128"], ["LDL", "STL"]),
        ("scan_inclusive", ["SHFL.UP", "VOTE.ANY", "LDG.E.128"], ["LDL", "STL"]),
    ],
)
def test_machine_code_has_the_designed_instructions(name, must, must_not, tmp_path):
    cuobjdump = shutil.which("cuobjdump")
    if cuobjdump is None:
        pytest.skip("no cuobjdump on PATH (the CUDA toolkit's; the H200 image has it)")
    arch = MINE[name][0]
    done = _assemble(name, arch, tmp_path / "k.cubin")
    assert done.returncode == 0, done.stderr
    sass = subprocess.run(
        [cuobjdump, "--dump-sass", str(tmp_path / "k.cubin")], capture_output=True, text=True
    ).stdout
    for op in must:
        assert op in sass, f"{op} not in the SASS of {name}"
    for op in must_not:
        assert not re.search(rf"\b{op}\b", sass), f"{op} in the SASS of {name}"


# -- on the GPU ---------------------------------------------------------------------------------


def _bench_module():
    spec = importlib.util.spec_from_file_location("gemm_bench", ROOT / "bench" / "gemm_bench.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["gemm_bench"] = mod
    spec.loader.exec_module(mod)
    return mod


def _gpu():
    try:
        import torch
    except ImportError:
        pytest.skip("torch is not installed (the GPU checks allocate and compare with it)")
    try:
        from cuda.bindings import driver  # noqa: F401
    except ImportError:
        pytest.skip("cuda-bindings is not installed")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    if shutil.which("nvcc") is None or shutil.which("ptxas") is None:
        pytest.skip("nvcc/ptxas not on PATH (the reference build needs them)")
    torch.empty(1, device="cuda")
    bench = _bench_module()
    return torch, bench, bench.Driver()


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(MINE))
def test_ours_and_nvccs_match_float64_at_odd_shapes(name):
    torch, bench, drv = _gpu()
    arch, tests, _ = bench.kernel_table(torch)[name]
    result = bench.run_kernel(torch, drv, name, arch, tests, list, runs=0)
    assert result["tests"], "no test shapes ran"
    for row in result["tests"]:
        for who in ("ours", "nvcc"):
            assert row[who]["ok"], (row["shape"], who, row[who])


@pytest.mark.gpu
def test_scan_look_back_leaves_one_ticket_per_tile_and_every_prefix_published():
    torch, bench, drv = _gpu()
    workdir = Path(tempfile.mkdtemp(prefix="scan-test-"))
    ours, _, _ = bench.build("scan_inclusive", "sm_90", workdir)
    fn = drv.function(ours, "scan_inclusive", 0)
    n = 5_000_011  # 1221 tiles: look-backs over many 128-tile windows, and a ragged last tile
    tiles = bench.cdiv(n, 4096)
    for seed in range(5):
        p = bench.scan_problem(torch, n, 100 + seed)
        p.args[2].zero_()
        drv.launch(fn, p, torch.cuda.current_stream().cuda_stream)
        torch.cuda.synchronize()
        state = p.args[2].cpu()
        assert int(state[0]) == tiles  # the ticket counter: one ticket per block
        flags = (state[1:] >> 32).tolist()
        assert flags == [2] * tiles  # every tile published its inclusive prefix
        err = bench.rel_err(p.outputs[0][1], p.expected["y"])
        assert err <= p.tol, (seed, err)
        assert bench.check_guards(p) == ""
