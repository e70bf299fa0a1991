"""GPU tests of Triton-sourced PTX against the Triton kernel itself, launched by Triton (the
worker builds it from the kernel's own source): Triton's own PTX passes, a one-instruction
change fails. Needs a CUDA device, triton and torch (the H200 has both)."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import pytest

from ptxls.gputest.api import format_table
from ptxls.gputest.supervisor import Supervisor
from ptxls.lowering.triton_reference import gpu_test_against_triton, lower_with_triton

from .device import HAVE_GPU, WHY

ROOT = Path(__file__).resolve().parents[2]
MISSING = [m for m in ("triton", "torch") if importlib.util.find_spec(m) is None]
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not HAVE_GPU, reason=WHY),
    pytest.mark.skipif(bool(MISSING), reason=f"not installed here: {', '.join(MISSING)}"),
]


def _test(file: str, kernel: str, edit=None):
    text = (ROOT / "examples" / file).read_text()

    async def go():
        low = await lower_with_triton(text, kernel=kernel, file_path=file)
        assert low.ok, low.message
        ptx = edit(low.ptx) if edit else low.ptx
        sup = Supervisor()
        try:
            shared = int(low.metadata.get("shared", 0))
            return await gpu_test_against_triton(ptx, text, kernel, file, shared=shared,
                                                 supervisor=sup)  # fmt: skip
        finally:
            await sup.close()

    return asyncio.run(go())


@pytest.mark.parametrize(
    "file, kernel", [("vec_add_triton.py", "add_kernel"), ("softmax_triton.py", "softmax_kernel")]
)
def test_tritons_ptx_passes_against_the_triton_kernel(file, kernel):
    report = _test(file, kernel)
    assert report.status == "pass", format_table(report)
    assert report.reference.startswith(f"the Triton kernel {kernel}, launched by Triton")
    assert report.timed_case is not None and report.timed_case.ref_time_ms


def test_a_wrong_ptx_fails_against_the_triton_kernel():
    report = _test("vec_add_triton.py", "add_kernel", lambda p: p.replace("add.f32", "sub.f32"))
    assert report.status == "fail", format_table(report)
