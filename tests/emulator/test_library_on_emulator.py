"""Every library kernel (fewshot/kernels/*/kernel.ptx) runs on the emulator at small sizes of its
spec, with seeded inputs, and matches its spec's numpy reference with no finding; the one
kernel the emulator refuses (hgemm_wgmma: wgmma) is refused by name before any launch."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from library_runner import LIBRARY, run_kernel, spec_of

from ptxls import emulator

REFUSED = {"hgemm_wgmma": "wgmma"}
KERNELS = sorted(p.name for p in LIBRARY.iterdir() if (p / "spec.json").exists())
# the spec's own sizes, the small ones (each launch under a few million thread-instructions)
MAX_N = {"matmul_tiled": 17, "sgemm_128x128": 129, "hgemm_mma": 129, "layernorm_rows": 17,
         "softmax_rows": 17, "row_sum": 33, "histogram256": 100003, "scan_inclusive": 131073,
         "reduce_sum": 100003, "stencil5": 200, "transpose": 128, "vec_add": 3007,
         "bias_gelu_f16": 100000}  # fmt: skip

CASES = [
    (k, n)
    for k in KERNELS
    if k not in REFUSED
    for n in spec_of(k)["sizes"]
    if n <= MAX_N.get(k, 1000)
]


def test_every_library_kernel_is_covered():
    assert {k for k, _ in CASES} | set(REFUSED) == set(KERNELS)


@pytest.mark.parametrize("kernel,n", CASES, ids=[f"{k}-{n}" for k, n in CASES])
def test_library_kernel_matches_reference(kernel, n):
    run = run_kernel(kernel, n, seed=n)
    assert run.ok, run.detail
    assert run.result.findings == [], run.result.findings


@pytest.mark.parametrize("kernel,word", sorted(REFUSED.items()))
def test_refused_kernel_names_the_instruction(kernel, word):
    with pytest.raises(emulator.Refused) as e:
        emulator.load((LIBRARY / kernel / "kernel.ptx").read_text())
    assert word in str(e.value) and e.value.line is not None


def test_scan_look_back_across_waves(monkeypatch):
    """Blocks spin on flags of earlier blocks; with 4 resident blocks per wave, 33 tiles need
    9 waves and every tile's look-back crosses into earlier waves."""
    # the module, not the launch() function that the package exports under the same name
    monkeypatch.setattr(sys.modules["ptxls.emulator.launch"], "MAX_WAVE_THREADS", 512)
    run = run_kernel("scan_inclusive", 131073, seed=3)
    assert run.ok, run.detail


def test_scan_forward_progress_within_one_wave():
    run = run_kernel("scan_inclusive", 1000003, seed=4)
    assert run.ok and not run.result.hang, run.detail


def test_wrong_kernel_is_caught():
    """The comparison can fail: vec_add with its add turned into a sub is wrong."""
    text = (LIBRARY / "vec_add" / "kernel.ptx").read_text().replace("add.f32", "sub.f32")
    assert text != (LIBRARY / "vec_add" / "kernel.ptx").read_text()
    assert not run_kernel("vec_add", 2049, ptx=text).ok
