"""GPU tests of the other paths: CUDA kernels against numpy references (inout, scalars, f16),
and PTX through the driver JIT when there is no ptxas (and what the JIT refuses)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ptxls.gputest.api import format_table, run_gpu_test, run_gpu_test_file
from ptxls.gputest.supervisor import Supervisor

from .test_gpu_harness import HAVE_GPU, WHY, _transcript

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAVE_GPU, reason=WHY)]


def _run(coro_fn):
    async def go():
        sup = Supervisor()
        try:
            return await coro_fn(sup)
        finally:
            await sup.close()

    return asyncio.run(go())


@pytest.mark.parametrize("name", ["saxpy", "scale_half"])
def test_cuda_kernel_against_its_numpy_annotation(name):
    path = ROOT / "examples" / "gpu" / f"{name}.cu"
    [report] = _run(lambda sup: run_gpu_test_file(str(path), supervisor=sup))
    _transcript(f"examples/gpu/{name}.cu", format_table(report))
    assert report.status == "pass", format_table(report)
    assert report.reference.startswith("numpy in float64: ")
    assert len(report.cases) == 6 and report.timed_case.gbps > 0


def test_wrong_numpy_reference_fails_with_the_values():
    path = ROOT / "examples" / "gpu" / "saxpy.cu"
    text = path.read_text().replace("ref: y = alpha * x + y", "ref: y = alpha * x - y")
    from ptxls.gputest.api import run_gpu_test_cuda

    report = _run(lambda sup: run_gpu_test_cuda(text, "saxpy", supervisor=sup, sizes=[1, 1000]))
    assert report.status == "fail" and report.failing_case.n == 1
    assert "y: 1 of 1 wrong; first wrong: y[0] expected" in format_table(report)


def test_ptx_through_the_driver_jit_when_no_ptxas():
    ptx = (ROOT / "examples" / "vec_add.ptx").read_text()
    cu = (ROOT / "examples" / "vec_add.cu").read_text()
    report = _run(lambda sup: run_gpu_test(ptx, "vec_add", reference_cuda=cu, ptxas="/no/such/ptxas",
                                           supervisor=sup, sizes=[0, 1, 257, 3007]))  # fmt: skip
    _transcript("examples/vec_add.ptx via the driver JIT", format_table(report))
    assert report.status == "pass", format_table(report)
    assert report.load_path == "PTX through the driver JIT"
    assert any("using the driver JIT instead" in n for n in report.notes)


def test_driver_jit_refuses_a_newer_ptx_isa_and_says_so():
    ptx = (ROOT / "examples" / "vec_add.ptx").read_text().replace(".version 8.0", ".version 9.5")
    cu = (ROOT / "examples" / "vec_add.cu").read_text()
    report = _run(lambda sup: run_gpu_test(ptx, "vec_add", reference_cuda=cu, ptxas="/no/such/ptxas",
                                           supervisor=sup, sizes=[1]))  # fmt: skip
    _transcript("vec_add.ptx at .version 9.5 via the driver JIT", format_table(report))
    assert report.status == "build-error", format_table(report)
    assert "CUDA_ERROR_UNSUPPORTED_PTX_VERSION" in report.summary
