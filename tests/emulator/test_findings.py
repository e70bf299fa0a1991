"""Each finding class of the emulator shown on a planted kernel of our own, with a clean twin
where one exists (the same kernel fixed must give no finding)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ptxls import emulator

HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"


def _ptr(a: int) -> bytes:
    return int(a).to_bytes(8, "little")


def _run(body: str, grid=1, block=32, nout=64, extra_params="", budget=None, regs=""):
    text = (
        HEAD
        + f"""
.visible .entry k(.param .u64 out{extra_params})
{{
    .reg .b32 %r<16>;
    .reg .b64 %rd<16>;
    .reg .f32 %f<8>;
    .reg .pred %p<8>;
    {regs}
    ld.param.u64 %rd0, [out];
    mov.u32 %r0, %tid.x;
    mul.wide.u32 %rd1, %r0, 4;
    add.s64 %rd2, %rd0, %rd1;
{body}
    ret;
}}
"""
    )
    module = emulator.load(text)
    mem = emulator.Memory()
    out = mem.alloc(4 * nout, "out")
    mem.write(out, bytes(4 * nout))
    res = emulator.launch(module, "k", grid, block, 0, [_ptr(out)], mem, budget)
    return res, mem, out


def kinds(res):
    return [f.kind for f in res.findings]


def test_out_of_bounds_write_names_buffer_element_and_thread():
    res, _, _ = _run(
        "    st.global.f32 [%rd2], %f0;".replace("%f0", "0f3F800000"), block=40, nout=32
    )
    f = res.findings[0]
    assert f.kind == "out-of-bounds" and f.buffer == "out" and f.element == 32
    assert f.thread == (32, 0, 0) and f.block == (0, 0, 0) and f.access == "write"
    assert f.count == 8 and f.line is not None


def test_in_bounds_twin_is_clean():
    res, _, _ = _run("    st.global.f32 [%rd2], 0f3F800000;", block=32, nout=32)
    assert res.findings == []


def test_read_of_register_never_written():
    res, _, _ = _run(
        "    setp.lt.u32 %p1, %r0, 16;\n    @%p1 mov.u32 %r5, 1;\n    st.global.u32 [%rd2], %r5;"
    )
    f = res.findings[0]
    assert f.kind == "uninitialized-register" and "%r5" in f.message and f.count == 16
    assert f.thread == (16, 0, 0)


SHARED = ".shared .align 4 .b32 sm[64];"


def test_shared_read_never_written_is_reported_where_used():
    body = """
    mov.u32 %r1, sm;
    shl.b32 %r2, %r0, 2;
    add.u32 %r1, %r1, %r2;
    setp.lt.u32 %p1, %r0, 8;
    @%p1 st.shared.u32 [%r1], %r0;
    bar.sync 0;
    ld.shared.u32 %r3, [%r1];
    st.global.u32 [%rd2], %r3;"""
    res, _, _ = _run(body, regs=SHARED)
    assert kinds(res) == ["uninitialized-shared"]
    assert res.findings[0].count == 24 and "sm" in res.findings[0].message


def test_shared_loaded_but_unused_is_not_reported():
    body = """
    mov.u32 %r1, sm;
    ld.shared.u32 %r3, [%r1+128];
    setp.lt.u32 %p1, %r0, 0;
    @%p1 st.global.u32 [%rd2], %r3;"""
    res, _, _ = _run(body, regs=SHARED)
    assert res.findings == []


RACE = """
    mov.u32 %r1, sm;
    setp.eq.u32 %p1, %r0, 0;
    @%p1 st.shared.u32 [%r1], 7;
    {barrier}
    setp.eq.u32 %p2, %r0, 32;
    @%p2 ld.shared.u32 %r3, [%r1];
    @%p2 st.global.u32 [%rd0], %r3;"""


def test_shared_race_between_warps():
    res, _, _ = _run(RACE.format(barrier=""), block=64, regs=SHARED)
    f = next(f for f in res.findings if f.kind == "shared-race")
    assert f.thread == (32, 0, 0) and f.other_thread == (0, 0, 0) and f.buffer == "sm"


def test_barrier_removes_the_race():
    res, mem, out = _run(RACE.format(barrier="bar.sync 0;"), block=64, regs=SHARED)
    assert res.findings == []
    assert np.frombuffer(mem.read(out, 4), np.uint32)[0] == 7


def test_divergent_barrier_is_reported_and_does_not_hang():
    body = """
    setp.lt.u32 %p1, %r0, 32;
    @%p1 bra SKIP;
    bar.sync 0;
SKIP:
    st.global.u32 [%rd2], %r0;"""
    res, _, _ = _run(body, block=64)
    assert not res.hang
    f = next(f for f in res.findings if f.kind == "divergent-barrier")
    assert "32 of the block's 64 threads" in f.message


def test_barrier_after_early_exit_is_reported():
    body = """
    setp.ge.u32 %p1, %r0, 48;
    @%p1 bra DONE;
    bar.sync 0;
    st.global.u32 [%rd2], %r0;
DONE:"""
    res, _, _ = _run(body, block=64)
    assert any(f.kind == "divergent-barrier" and "16 had exited" in f.message for f in res.findings)


def test_shfl_mask_naming_exited_lanes():
    body = """
    setp.ge.u32 %p1, %r0, 16;
    @%p1 bra DONE;
    shfl.sync.bfly.b32 %r3, %r0, 1, 31, 0xffffffff;
    st.global.u32 [%rd2], %r3;
DONE:"""
    res, _, _ = _run(body)
    assert any(f.kind == "sync-mask" for f in res.findings) and not res.hang


def test_shfl_with_the_right_mask_is_clean():
    body = """
    setp.ge.u32 %p1, %r0, 16;
    @%p1 bra DONE;
    shfl.sync.bfly.b32 %r3, %r0, 1, 31, 0xffff;
    st.global.u32 [%rd2], %r3;
DONE:"""
    res, mem, out = _run(body)
    assert res.findings == []
    got = np.frombuffer(mem.read(out, 64), np.uint32)
    assert got.tolist() == [i ^ 1 for i in range(16)]


def test_misaligned_vector_access():
    res, _, _ = _run(
        "    ld.global.v4.f32 {%f0, %f1, %f2, %f3}, [%rd0+4];\n    st.global.f32 [%rd2], %f0;"
    )
    assert kinds(res)[0] == "misaligned"


def test_spin_on_a_flag_nobody_sets_is_a_hang_with_its_line():
    body = """
SPIN:
    ld.volatile.global.u32 %r3, [%rd0];
    setp.eq.u32 %p1, %r3, 0;
    @%p1 bra SPIN;"""
    res, _, _ = _run(body, budget=emulator.Budget(max_thread_instructions=200_000, seconds=20))
    assert res.hang and "line" in res.hang_where
    assert any(f.kind == "hang" for f in res.findings)


@pytest.mark.parametrize(
    "text,what",
    [
        ("tex.2d.v4.f32.f32 {%f0, %f1, %f2, %f3}, [tx, {%f0, %f1}];", "texture"),
        ("wgmma.fence.sync.aligned;", "wgmma"),
        ("frobnicate.b32 %r1, %r2;", "frobnicate"),
        ("add.u32 %r1, %r99, 1;", "not declared"),
    ],
)
def test_refused_before_launch_with_line(text, what):
    with pytest.raises(emulator.Refused) as e:
        _run("    " + text)
    assert what in str(e.value) and e.value.line is not None


@pytest.mark.parametrize("junk", ["", "garbage {{{", ".version 8.0\n.entry k( {", "\x00\x01"])
def test_bad_ptx_is_refused_not_a_traceback(junk):
    with pytest.raises(emulator.Refused):
        emulator.load(junk)


PLANTED = Path(__file__).resolve().parents[1] / "data" / "sanitizer" / "planted"


@pytest.mark.parametrize(
    "file,kernel,kind,line",
    [
        ("missing_barrier.ptx", "swap_warps_no_barrier", "shared-race", 47),
        ("missing_barrier.ptx", "swap_warps", None, None),
        ("shared_oob.ptx", "stencil_no_halo", "out-of-bounds", 48),
        ("shared_oob.ptx", "index_scaled_twice", "out-of-bounds", 88),
        ("uninit_read.ptx", "max_into_out", "uninitialized-global", 38),
    ],
)
def test_planted_sanitizer_kernels(file, kernel, kind, line):
    """The kernels planted for compute-sanitizer give the emulator's finding on the same line."""
    module = emulator.load((PLANTED / file).read_text())
    n = 1024
    mem = emulator.Memory()
    x = mem.alloc(4 * n, "x")
    y = mem.alloc(4 * n, "y", initialized=False)
    mem.write(x, np.arange(n, dtype=np.float32).tobytes())
    params = [_ptr(x), _ptr(y), n.to_bytes(4, "little")]
    res = emulator.launch(module, kernel, n // 256, 256, 0, params, mem)
    if kind is None:
        assert res.findings == []
    else:
        assert (res.findings[0].kind, res.findings[0].line) == (kind, line), res.findings
