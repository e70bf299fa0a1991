"""Warp collectives and atomics on several warps and blocks, against numpy computations of
what the ISA defines (shfl/vote/match/redux over the lanes; atom returns a valid serial order)."""

from __future__ import annotations

import numpy as np

from ptxls import emulator

HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"


def _launch(body, grid, block, nout, regs="", init=None):
    text = (
        HEAD
        + f"""
.visible .entry k(.param .u64 out, .param .u64 aux)
{{
    .reg .b32 %r<24>;
    .reg .b64 %rd<16>;
    .reg .pred %p<8>;
    {regs}
    ld.param.u64 %rd0, [out];
    ld.param.u64 %rd9, [aux];
    mov.u32 %r0, %tid.x;
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mad.lo.s32 %r3, %r1, %r2, %r0;
    mul.wide.u32 %rd1, %r3, 4;
    add.s64 %rd2, %rd0, %rd1;
{body}
    ret;
}}
"""
    )
    m = emulator.load(text)
    mem = emulator.Memory()
    out = mem.alloc(4 * nout, "out")
    aux = mem.alloc(4096, "aux")
    mem.write(out, bytes(4 * nout))
    mem.write(aux, bytes(4096) if init is None else init)
    res = emulator.launch(
        m, "k", grid, block, 0, [out.to_bytes(8, "little"), aux.to_bytes(8, "little")], mem
    )
    assert res.findings == [] and not res.hang, res.findings
    return np.frombuffer(mem.read(out, 4 * nout), np.uint32), np.frombuffer(
        mem.read(aux, 4096), np.uint32
    )


def test_shfl_butterfly_sum_gives_every_lane_its_warp_total():
    body = "    mul.lo.u32 %r4, %r3, 7;\n"
    for k in (16, 8, 4, 2, 1):
        body += (
            f"    shfl.sync.bfly.b32 %r5, %r4, {k}, 31, 0xffffffff;\n    add.u32 %r4, %r4, %r5;\n"
        )
    body += "    st.global.u32 [%rd2], %r4;"
    got, _ = _launch(body, 2, 64, 128)
    vals = (np.arange(128) * 7).reshape(-1, 32)
    assert got.tolist() == np.repeat(vals.sum(axis=1), 32).tolist()


def test_shfl_up_down_idx_with_clamps():
    body = """
    shfl.sync.up.b32 %r4|%p1, %r3, 3, 0, 0xffffffff;
    shfl.sync.down.b32 %r5, %r3, 5, 31, 0xffffffff;
    shfl.sync.idx.b32 %r6, %r3, 9, 31, 0xffffffff;
    selp.u32 %r7, 1000, 0, %p1;
    add.u32 %r4, %r4, %r7;
    mul.wide.u32 %rd3, %r3, 16;
    add.s64 %rd3, %rd0, %rd3;
    st.global.v2.u32 [%rd3], {%r4, %r5};
    st.global.u32 [%rd3+8], %r6;"""
    got, _ = _launch(body, 1, 64, 256)
    got = got.reshape(-1, 4)
    t = np.arange(64)
    lane, base = t % 32, t - t % 32
    up = np.where(lane >= 3, t - 3 + 1000, t)  # in range: the lane 3 below, predicate true
    down = np.where(lane + 5 <= 31, t + 5, t)
    idx = base + 9
    assert got[:, 0].tolist() == up.tolist()
    assert got[:, 1].tolist() == down.tolist() and got[:, 2].tolist() == idx.tolist()


def test_vote_ballot_any_all_and_match_redux():
    body = """
    and.b32 %r4, %r3, 3;
    setp.eq.u32 %p1, %r4, 0;
    vote.sync.ballot.b32 %r5, %p1, 0xffffffff;
    vote.sync.any.pred %p2, %p1, 0xffffffff;
    vote.sync.all.pred %p3, %p1, 0xffffffff;
    selp.u32 %r6, 1, 0, %p2;
    selp.u32 %r7, 1, 0, %p3;
    match.any.sync.b32 %r8, %r4, 0xffffffff;
    redux.sync.add.u32 %r9, %r3, 0xffffffff;
    mul.wide.u32 %rd3, %r3, 32;
    add.s64 %rd3, %rd0, %rd3;
    st.global.v4.u32 [%rd3], {%r5, %r6, %r7, %r8};
    st.global.u32 [%rd3+16], %r9;"""
    got, _ = _launch(body, 1, 32, 256)
    got = got.reshape(32, 8)
    lanes = np.arange(32)
    ballot = int(sum(1 << i for i in lanes if i % 4 == 0))
    assert set(got[:, 0]) == {ballot} and set(got[:, 1]) == {1} and set(got[:, 2]) == {0}
    for i in lanes:
        assert got[i, 3] == sum(1 << j for j in lanes if j % 4 == i % 4)
    assert set(got[:, 4]) == {int(lanes.sum())}


def test_atom_add_returns_a_serial_order_and_the_total():
    body = """
    atom.global.add.u32 %r4, [%rd9], 1;
    st.global.u32 [%rd2], %r4;"""
    got, aux = _launch(body, 4, 96, 384)
    assert sorted(got.tolist()) == list(range(384)) and aux[0] == 384


def test_atom_cas_min_exch_and_red_shared():
    body = """
    mov.u32 %r10, bins;
    setp.lt.u32 %p5, %r0, 8;
    @%p5 shl.b32 %r11, %r0, 2;
    @%p5 add.u32 %r11, %r10, %r11;
    @%p5 st.shared.u32 [%r11], 0;
    bar.sync 0;
    and.b32 %r4, %r0, 7;
    shl.b32 %r4, %r4, 2;
    add.u32 %r4, %r10, %r4;
    red.shared.add.u32 [%r4], 1;
    atom.global.min.u32 %r5, [%rd9+4], %r3;
    atom.global.cas.b32 %r6, [%rd9+8], 0, 1;
    bar.sync 0;
    @%p5 ld.shared.u32 %r7, [%r11];
    @%p5 red.global.add.u32 [%rd9+16], %r7;
    st.global.u32 [%rd2], %r6;"""
    init = np.zeros(1024, np.uint32)
    init[1] = 10**6
    got, aux = _launch(body, 2, 64, 128, regs=".shared .align 4 .b32 bins[8];", init=init.tobytes())
    assert aux[1] == 0  # min over all tids
    assert sorted(got.tolist()) == [0] + [1] * 127  # exactly one CAS won
    assert aux[4] == 128  # every thread counted once in its block's bins


def test_bar_red_popc_and_or_per_block():
    """bar.red: a barrier whose threads all receive the block's reduction of a predicate."""
    body = """
    shl.b32 %r7, %r1, 5;
    setp.lt.u32 %p1, %r0, %r7;
    bar.red.popc.u32 %r4, 0, %p1;
    bar.red.and.pred %p2, 1, %p1;
    bar.red.or.pred %p3, 2, %p1;
    selp.u32 %r5, 1, 0, %p2;
    selp.u32 %r6, 1, 0, %p3;
    mul.wide.u32 %rd3, %r3, 16;
    add.s64 %rd3, %rd0, %rd3;
    st.global.v2.u32 [%rd3], {%r4, %r5};
    st.global.u32 [%rd3+8], %r6;"""
    got, _ = _launch(body, 3, 64, 3 * 64 * 4)
    got = got.reshape(3, 64, 4)
    # thread t of block b votes t < 32 b: block 0 none, block 1 half, block 2 all
    for b, (popc, all_, any_) in enumerate([(0, 0, 0), (32, 0, 1), (64, 1, 1)]):
        assert set(got[b, :, 0]) == {popc}
        assert set(got[b, :, 1]) == {all_} and set(got[b, :, 2]) == {any_}
