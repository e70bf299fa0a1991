"""nvcc -O3's PTX of every library reference.cu (and examples/vec_add.cu) runs on the emulator
and matches the spec's numpy reference, like the hand-written kernels. Skips without nvcc."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from library_runner import LIBRARY, ROOT, run_kernel, spec_of

from ptxls.toolchain.discovery import all_tools, cuda_include_dirs

NVCC = all_tools("nvcc")
# hgemm_wgmma's reference needs sm_90a and is wgmma: refused like its PTX
SOURCES = [
    (k, LIBRARY / k / "reference.cu")
    for k in sorted(p.name for p in LIBRARY.iterdir())
    if k != "hgemm_wgmma" and (LIBRARY / k / "reference.cu").exists()
] + [("vec_add", ROOT / "examples" / "vec_add.cu")]
SIZES = {"scan_inclusive": [4097, 131073], "hgemm_mma": [7, 129], "sgemm_128x128": [7, 129],
         "matmul_tiled": [17], "layernorm_rows": [3], "softmax_rows": [3]}  # fmt: skip


def _ptx(cu: Path, tmp: Path) -> str:
    out = tmp / f"{cu.parent.name}-{cu.stem}.ptx"
    base = [NVCC[0].path, "-ptx", "-arch=sm_90", "-O3", str(cu), "-o", str(out)]
    r = subprocess.run(base, capture_output=True, text=True, timeout=300)
    if r.returncode:  # the wheel's nvcc needs the wheels' headers
        includes = [f"-I{d}" for d in cuda_include_dirs()]
        subprocess.run(base[:4] + includes + base[4:], check=True, capture_output=True, timeout=300)
    return out.read_text()


@pytest.mark.skipif(not NVCC, reason="no nvcc (pip install nvidia-cuda-nvcc)")
@pytest.mark.parametrize("kernel,cu", SOURCES, ids=[f"{k}-{c.parent.name}" for k, c in SOURCES])
def test_nvcc_ptx_runs_like_the_kernel(kernel, cu, tmp_path):
    ptx = _ptx(cu, tmp_path)
    sizes = SIZES.get(kernel) or [n for n in spec_of(kernel)["sizes"] if n <= 4097][:3]
    for n in sizes:
        run = run_kernel(kernel, n, seed=n, ptx=ptx)
        assert run.ok, f"n={n}: {run.detail}"
        assert run.result.findings == [], run.result.findings
