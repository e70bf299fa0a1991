"""Planted cheating kernels (tests/data/cheaters/) get no speedup from the harness's timing:
each timed launch starts from the verified launch's state (outputs re-poisoned, module
globals reset), so skipping work when the output already holds the answer, or carrying a
result across launches in a module variable, buys nothing; the shortcut probe (launches on the
kernel's own previous output and module state) flags them, and a global that cannot be reset
means no time at all.
Each is timed against the nvcc build of the honest CUDA kernel, in the same run.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ptxls.gputest.api import format_table, run_gpu_test
from ptxls.gputest.supervisor import Supervisor

from .device import HAVE_GPU, WHY

CHEATERS = Path(__file__).resolve().parents[1] / "data" / "cheaters"
N = 1 << 25  # 128 MiB per buffer: the kernel's time, not the launch's


pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAVE_GPU, reason=WHY)]


def _run(name: str):
    ptx = CHEATERS / name
    ref = CHEATERS / "vec_add.cu"

    async def go():
        sup = Supervisor()
        try:
            return await run_gpu_test(
                ptx.read_text(), "vec_add", ptx_path=str(ptx), reference_cuda=ref.read_text(),
                reference_path=str(ref), sizes=[N], supervisor=sup, timeout_s=120,
            )  # fmt: skip
        finally:
            await sup.close()

    return asyncio.run(go())


def _probe(case) -> str:
    """What the shortcut probe saw, for a failure message (pytest cuts a long dict short)."""
    t = case.timing
    return (f"honest {case.time_ms} ms, rerun on its own output {t.get('rerun_ms')} ms, "
            f"flags {t.get('flags')}, globals_written {t.get('globals_written')}")  # fmt: skip


def _speedup(report) -> float:
    case = report.cases[-1]
    return case.ref_time_ms / case.time_ms


def test_honest_kernel_runs_even_with_its_nvcc_build():
    report = _run("vec_add_honest.ptx")
    assert report.status == "pass", format_table(report)
    assert 0.8 < _speedup(report) < 1.25, format_table(report)
    assert not report.cases[-1].timing.get("flags"), report.cases[-1].timing


def test_skipping_work_when_the_output_holds_the_answer_gains_nothing():
    report = _run("skips_when_done.ptx")
    assert report.status == "pass", format_table(report)
    # Were the timed launches to start from the previous output, this kernel would read three
    # floats and stop: hundreds of times faster. Re-poisoned, it does the whole job.
    assert _speedup(report) < 1.25, format_table(report)
    # and the shortcut is named: launched on its own previous output it skips the work
    assert any("skips work" in f for f in report.cases[-1].timing.get("flags", [])), _probe(
        report.cases[-1]
    )


def test_a_visible_global_cache_is_reset_before_every_launch():
    report = _run("caches_in_global.ptx")
    case = report.cases[-1]
    assert report.status == "pass", format_table(report)
    assert case.timing.get("globals_written") == ["computed_once"], case.timing
    assert _speedup(report) < 1.25, format_table(report)
    assert any("skips work" in f for f in case.timing.get("flags", [])), _probe(case)


def test_a_hidden_global_cache_is_reset_or_flagged_never_faster():
    report = _run("caches_in_hidden_global.ptx")
    case = report.cases[-1]
    if case.time_ms is None:  # the driver would not say where it lives: no time, flagged
        assert any("cannot be reset" in f for f in case.timing.get("flags", [])), case.timing
    else:
        assert report.status == "pass", format_table(report)
        assert _speedup(report) < 1.25, format_table(report)
