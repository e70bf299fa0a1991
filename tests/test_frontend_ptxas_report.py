"""The one ``ptxas -v`` reader (ptxls.frontend.ptxas_report), used by the hover, ``ptxls usage``
and the lowering loop's performance feedback (which had its own reader until now)."""

from __future__ import annotations

import random

import pytest

from ptxls.diagnostics.resources import usage_report
from ptxls.frontend.ptxas_report import entry_named, parse_ptxas_verbose
from ptxls.lowering.perf import Resources
from ptxls.toolchain.discovery import ToolNotFound, find_ptxas

# An entry that calls a .func: the helper's "Function properties" come after the entry's.
ENTRY_THEN_HELPER = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'scale' for 'sm_90'
ptxas info    : Function properties for scale
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 0 barriers, 128+0 bytes smem, 372 bytes cmem[0]
ptxas info    : Function properties for helper
    48 bytes stack frame, 40 bytes spill stores, 40 bytes spill loads
ptxas info    : Compile time = 1.234 ms
"""


def test_the_entry_keeps_its_own_numbers_when_a_helper_follows():
    # the loop's old reader let the helper's frame line overwrite the entry's: 40 B "spilled"
    usage = parse_ptxas_verbose(ENTRY_THEN_HELPER)
    scale = entry_named(usage)
    assert (scale.name, scale.registers, scale.spill_stores, scale.shared_static) == (
        "scale",
        12,
        0,
        128,
    )
    helper = entry_named(usage, "helper")
    assert not helper.is_entry and helper.spill_stores == 40
    res = Resources.from_usage(scale, "ptxas 13.5")
    assert res.text() == "12 registers, 0 bytes spilled, 0 bytes stack, 128 bytes shared memory"
    assert entry_named(usage, "missing") is None
    assert Resources.from_usage(None).registers is None


async def test_a_real_ptxas_run_is_read_by_kernel_name():
    try:
        find_ptxas()
    except ToolNotFound:
        pytest.skip("needs ptxas (pip install nvidia-cuda-nvcc)")
    ptx = """.version 8.0
.target sm_90
.address_size 64
.visible .entry first(.param .u64 p) { ret; }
.visible .entry second(.param .u64 p)
{
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [p];
    cvta.to.global.u64 %rd2, %rd1;
    st.global.u64 [%rd2], %rd1;
    ret;
}
"""
    report = await usage_report(ptx, "sm_90")
    assert report.error == "" and sorted(u.name for u in report.entries) == ["first", "second"]
    res = Resources.from_usage(entry_named(report.entries, "second"), report.tool)
    assert res.registers is not None and res.registers > 0 and "ptxas" in res.tool
    assert entry_named(report.entries, "nope") is None


@pytest.mark.parametrize("seed", range(3))
def test_no_output_makes_the_reader_raise(seed):
    rng = random.Random(seed)
    for _ in range(300):
        if rng.random() < 0.5:
            text = ENTRY_THEN_HELPER[: rng.randrange(len(ENTRY_THEN_HELPER) + 1)]
        else:
            words = ["Used", "registers", "bytes", "smem", "'", "cmem[", "]", "\n", "9" * 30]
            text = " ".join(rng.choice(words) for _ in range(rng.randrange(60)))
        for u in parse_ptxas_verbose(text):
            assert u.name
        entry_named(parse_ptxas_verbose(text))
