"""Integer and bit instructions against Python-int references written from the PTX ISA's
pseudocode (one lane at a time), plus the ISA's own examples."""

from __future__ import annotations

import numpy as np
import pytest

from ptxls.emulator.semantics import bits, integer

W = {"u16": 16, "s16": 16, "u32": 32, "s32": 32, "u64": 64, "s64": 64}


def _signed(v: int, w: int) -> int:
    v &= (1 << w) - 1
    return v - (1 << w) if v >> (w - 1) else v


def _val(v: int, t: str) -> int:
    return _signed(v, W[t]) if t[0] == "s" else v & ((1 << W[t]) - 1)


def _rand(rng, t, n):
    w = W[t]
    edge = [0, 1, (1 << w) - 1, 1 << (w - 1), (1 << (w - 1)) - 1, 2, 3]
    vals = edge + [int(x) for x in rng.integers(0, 2**63, n, dtype=np.int64)]
    vals = [v & ((1 << w) - 1) for v in vals] + [
        int(x) & ((1 << w) - 1) for x in rng.integers(-40, 40, 20)
    ]
    return vals


def _arr(vals, t):
    dt = integer.dtype_of(t)
    return np.array([_val(v, t) for v in vals], dtype=dt)


@pytest.mark.parametrize("t", ["u16", "s16", "u32", "s32", "u64", "s64"])
@pytest.mark.parametrize("mode", ["lo", "hi", "wide"])
def test_mul_modes(t, mode):
    if mode == "wide" and W[t] == 64:
        pytest.skip("mul.wide has no 64-bit form")
    rng = np.random.default_rng(3)
    a, b = _rand(rng, t, 200), _rand(rng, t, 200)[::-1]
    got = integer.mul(_arr(a, t), _arr(b, t), t, mode)
    w = W[t]
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        p = _val(x, t) * _val(y, t)
        want = {
            "lo": p & ((1 << w) - 1),
            "hi": (p >> w) & ((1 << w) - 1),
            "wide": p & ((1 << 2 * w) - 1),
        }[mode]
        assert int(got[i]) & ((1 << (2 * w if mode == "wide" else w)) - 1) == want, (x, y)


@pytest.mark.parametrize("t", ["u32", "s32", "u64", "s64"])
def test_div_rem_truncate_toward_zero(t):
    rng = np.random.default_rng(4)
    a, b = _rand(rng, t, 200), _rand(rng, t, 200)[::-1]
    q = integer.div(_arr(a, t), _arr(b, t), t)
    r = integer.rem(_arr(a, t), _arr(b, t), t)
    mask = (1 << W[t]) - 1
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        xv, yv = _val(x, t), _val(y, t)
        if yv == 0:
            want_q = want_r = mask  # the H200's all-ones (h200_facts.json)
        else:
            qq = abs(xv) // abs(yv) * (1 if (xv < 0) == (yv < 0) else -1)
            want_q, want_r = qq & mask, (xv - qq * yv) & mask
        assert (int(q[i]) & mask, int(r[i]) & mask) == (want_q, want_r), (xv, yv)


def test_mul24_and_mad24():
    a = np.array([0x00FFFFFF, 0x00800000, 5, 0x12345678], dtype=np.uint32)
    b = np.array([0x00FFFFFF, 2, 7, 0x00000100], dtype=np.uint32)
    for t in ("u32", "s32"):
        lo, hi = integer.mul24(a, b, t, "lo"), integer.mul24(a, b, t, "hi")
        for i in range(4):
            x, y = int(a[i]) & 0xFFFFFF, int(b[i]) & 0xFFFFFF
            if t == "s32":
                x, y = _signed(x, 24), _signed(y, 24)
            p = x * y
            assert int(lo[i]) & 0xFFFFFFFF == p & 0xFFFFFFFF
            assert int(hi[i]) & 0xFFFFFFFF == (p >> 16) & 0xFFFFFFFF
    assert int(integer.mad24(a, b, np.uint32(1), "u32")[2]) == 36


def test_mad_hi_sat_and_wide():
    a = np.array([2**30, -(2**31)], dtype=np.int32)
    b = np.array([8, -(2**31)], dtype=np.int32)
    c = np.array([2**31 - 1, 2**31 - 1], dtype=np.int32)
    # (a*b)>>32 + c: 2 + INT_MAX and 2**30 + INT_MAX, both saturate
    assert integer.mad(a, b, c, "s32", "hi", sat=True).tolist() == [2**31 - 1, 2**31 - 1]
    w = integer.mad(
        np.array([-3], np.int32), np.array([5], np.int32), np.array([100], np.int64), "s32", "wide"
    )
    assert w.dtype == np.int64 and w.tolist() == [85]


def test_add_sat_and_carry_chain():
    assert integer.add(np.int32([2**31 - 1]), np.int32([5]), "s32", sat=True).tolist() == [
        2**31 - 1
    ]
    assert integer.sub(np.int32([-(2**31)]), np.int32([1]), "s32", sat=True).tolist() == [-(2**31)]
    # 64-bit add as add.cc + addc on 32-bit halves
    x, y = 0xFFFFFFFF_00000001, 0x00000001_FFFFFFFF
    lo, cf = integer.add_cc(np.uint32([x & 0xFFFFFFFF]), np.uint32([y & 0xFFFFFFFF]), "u32")
    hi, _ = integer.add_cc(np.uint32([x >> 32]), np.uint32([y >> 32]), "u32", carry_in=cf)
    assert (int(hi[0]) << 32 | int(lo[0])) == (x + y) & (2**64 - 1)
    lo, bf = integer.sub_cc(np.uint32([0]), np.uint32([1]), "u32")
    assert int(lo[0]) == 0xFFFFFFFF and int(bf[0]) == 1


def test_sad_min_max_abs_neg():
    assert integer.sad(np.int32([3, -5]), np.int32([10, 5]), np.int32([1, 1]), "s32").tolist() == [
        8,
        11,
    ]
    assert integer.sad(np.uint32([3]), np.uint32([10]), np.uint32([0]), "u32").tolist() == [7]
    assert integer.imin(np.int32([-1]), np.int32([1]), "s32").tolist() == [-1]
    assert integer.imin(np.uint32([0xFFFFFFFF]), np.uint32([1]), "u32").tolist() == [1]
    assert integer.imax(np.int32([-7]), np.int32([-9]), "s32", relu=True).tolist() == [0]
    assert integer.iabs(np.int32([-(2**31), -3]), "s32").tolist() == [-(2**31), 3]
    assert integer.ineg(np.int32([-(2**31), 3]), "s32").tolist() == [-(2**31), -3]


def test_dp4a_dp2a():
    a = np.array([0x80FF0102], dtype=np.uint32)  # bytes (lsb first) 02 01 ff 80
    b = np.array([0x01020304], dtype=np.uint32)  # 04 03 02 01
    # signed: 2*4 + 1*3 + (-1)*2 + (-128)*1 = -119, + c
    assert integer.dp4a(a, b, np.int32([1000]), "s32", "s32").tolist() == [881]
    # unsigned: 8 + 3 + 510 + 128 = 649
    assert integer.dp4a(a, b, np.uint32([0]), "u32", "u32").tolist() == [649]
    # dp2a.lo: halves of a (0x0102, 0x80ff) times bytes 0,1 of b; dp2a.hi: bytes 2,3
    assert integer.dp2a(a, b, np.uint32([0]), "u32", "u32", "lo").tolist() == [
        0x0102 * 4 + 0x80FF * 3
    ]
    assert integer.dp2a(a, b, np.int32([0]), "s32", "s32", "hi").tolist() == [
        0x0102 * 2 + (0x80FF - 65536) * 1
    ]


# ----------------------------------------------------------------------------- bits


def _bfe_ref(a, pos, ln, t):
    """ISA pseudocode of bfe."""
    w = W[t]
    msb = w - 1
    pos &= 0xFF
    ln &= 0xFF
    signed = t[0] == "s" and ln > 0
    sbit = (a >> min(pos + ln - 1, msb)) & 1 if signed else 0
    d = 0
    for i in range(w):
        bit = (a >> (pos + i)) & 1 if (i < ln and pos + i <= msb) else sbit
        d |= bit << i
    return d


def _bfi_ref(a, b, pos, ln, w):
    pos &= 0xFF
    ln &= 0xFF
    f = b
    i = 0
    while i < ln and pos + i <= w - 1:
        f = (f & ~(1 << (pos + i))) | (((a >> i) & 1) << (pos + i))
        i += 1
    return f


@pytest.mark.parametrize("t", ["u32", "s32", "u64", "s64"])
def test_bfe_against_isa_pseudocode(t):
    rng = np.random.default_rng(7)
    w = W[t]
    vals = [int(x) & ((1 << w) - 1) for x in rng.integers(0, 2**63, 60, dtype=np.int64)] + [
        (1 << w) - 1,
        1 << (w - 1),
    ]
    cases = [
        (v, p, ln)
        for v in vals
        for p, ln in (
            (0, 0),
            (0, w),
            (3, 5),
            (w - 1, 1),
            (w - 4, 9),
            (w, 3),
            (300, 4),
            (5, 255),
            (256 + 2, 256 + 3),
        )
    ]
    a = np.array([c[0] for c in cases], dtype=np.uint64).astype(integer.dtype_of("u" + t[1:]))
    pos = np.array([c[1] for c in cases], dtype=np.uint32)
    ln = np.array([c[2] for c in cases], dtype=np.uint32)
    got = bits.bfe(a, pos, ln, t)
    mask = (1 << w) - 1
    for i, (v, p, n) in enumerate(cases):
        assert int(got[i]) & mask == _bfe_ref(v, p, n, t), (hex(v), p, n)


@pytest.mark.parametrize("t", ["b32", "b64"])
def test_bfi_against_isa_pseudocode(t):
    rng = np.random.default_rng(8)
    w = 32 if t == "b32" else 64
    cases = []
    for _ in range(40):
        a, b = (int(x) & ((1 << w) - 1) for x in rng.integers(0, 2**63, 2, dtype=np.int64))
        for p, ln in ((0, 0), (4, 8), (w - 3, 8), (w, 2), (0, w), (7, 200), (260, 2)):
            cases.append((a, b, p, ln))
    dt = integer.dtype_of(t)
    got = bits.bfi(*(np.array([c[k] for c in cases], dtype=np.uint64).astype(dt) for k in range(2)),
                   np.array([c[2] for c in cases], np.uint32), np.array([c[3] for c in cases], np.uint32), t)  # fmt: skip
    for i, (a, b, p, ln) in enumerate(cases):
        assert int(got[i]) == _bfi_ref(a, b, p, ln, w), (hex(a), hex(b), p, ln)


def _prmt_ref(a, b, c, mode):
    byte = [(a >> (8 * i)) & 0xFF for i in range(4)] + [(b >> (8 * i)) & 0xFF for i in range(4)]
    d = 0
    if mode is None:
        for i in range(4):
            sel = (c >> (4 * i)) & 0xF
            v = byte[sel & 7]
            if sel & 8:
                v = 0xFF if v & 0x80 else 0
            d |= v << (8 * i)
        return d
    # the ISA's table, listed as d.b3 d.b2 d.b1 d.b0 for c[1:0] = 0..3
    table = {
        "f4e": ["3210", "4321", "5432", "6543"], "b4e": ["5670", "6701", "7012", "0123"],
        "rc8": ["0000", "1111", "2222", "3333"], "ecl": ["3210", "3211", "3222", "3333"],
        "ecr": ["0000", "1110", "2210", "3210"], "rc16": ["1010", "3232", "1010", "3232"],
    }[mode][c & 3]  # fmt: skip
    for i in range(4):
        d |= byte[int(table[3 - i])] << (8 * i)
    return d


@pytest.mark.parametrize("mode", [None, "f4e", "b4e", "rc8", "ecl", "ecr", "rc16"])
def test_prmt(mode):
    a, b = 0x83828180, 0x07060504
    cs = list(range(4)) if mode else [0x3210, 0x7654, 0x5410, 0x8888, 0xF0A1, 0x0123, 0xFEDC]
    got = bits.prmt(np.uint32([a] * len(cs)), np.uint32([b] * len(cs)), np.uint32(cs), mode)
    assert [int(x) for x in got] == [_prmt_ref(a, b, c, mode) for c in cs]


def test_prmt_isa_example_byte_swap():
    # prmt.b32 with selector 0x0123 reverses the bytes of a (the ISA's byte-permute use)
    assert (
        int(bits.prmt(np.uint32([0x11223344]), np.uint32([0]), np.uint32([0x0123]))[0])
        == 0x44332211
    )


@pytest.mark.parametrize("direction", ["l", "r"])
@pytest.mark.parametrize("mode", ["clamp", "wrap"])
def test_shf(direction, mode):
    a, b = 0x89ABCDEF, 0x01234567
    ns = [0, 1, 8, 31, 32, 33, 40, 64, 0xFFFFFFFF]
    got = bits.shf(
        np.uint32([a] * len(ns)), np.uint32([b] * len(ns)), np.uint32(ns), direction, mode
    )
    for n, g in zip(ns, got, strict=True):
        k = min(n, 32) if mode == "clamp" else n & 31
        both = (b << 32) | a
        want = ((both << k) >> 32) & 0xFFFFFFFF if direction == "l" else (both >> k) & 0xFFFFFFFF
        assert int(g) == want, n


def test_shl_shr_clamp_shift_amounts():
    x = np.array([0x80000001] * 4, dtype=np.uint32)
    n = np.array([1, 31, 32, 100], dtype=np.uint32)
    assert bits.shl(x, n, "b32").tolist() == [2, 0x80000000, 0, 0]
    assert bits.shr(x, n, "u32").tolist() == [0x40000000, 1, 0, 0]
    assert bits.shr(x.view(np.int32), n, "s32").tolist() == [-(2**30), -1, -1, -1]
    assert bits.shl(np.uint64([1]), np.uint32([63]), "b64").tolist() == [2**63]
    assert bits.shr(np.uint16([0x8000]), np.uint32([16]), "u16").tolist() == [0]


def test_popc_clz_bfind_brev():
    x = np.array([0, 1, 0x80000000, 0xFFFFFFFF, 0x00F0F000], dtype=np.uint32)
    assert bits.popc(x, "b32").tolist() == [0, 1, 1, 32, 8]
    assert bits.clz(x, "b32").tolist() == [32, 31, 0, 0, 8]
    assert bits.bfind(x, "u32").tolist() == [0xFFFFFFFF, 0, 31, 31, 23]
    assert bits.bfind(x, "u32", shiftamt=True).tolist() == [0xFFFFFFFF, 31, 0, 0, 8]
    s = np.array([-1, -2, 0x40000000, -(2**31)], dtype=np.int32)
    assert bits.bfind(s, "s32").tolist() == [0xFFFFFFFF, 0, 30, 30]
    assert bits.brev(np.uint32([1, 0x80000000, 0x12345678]), "b32").tolist() == [
        0x80000000,
        1,
        0x1E6A2C48,
    ]
    assert bits.brev(np.uint64([1]), "b64").tolist() == [2**63]
    assert bits.clz(np.uint64([1]), "b64").tolist() == [63]
    assert bits.popc(np.uint64([2**64 - 1]), "b64").tolist() == [64]


@pytest.mark.parametrize("lut", [0x00, 0xFF, 0x96, 0xE8, 0xCA, 0x80, 0xFE, 0x1E, 0x6A])
def test_lop3_truth_tables(lut):
    rng = np.random.default_rng(lut)
    a, b, c = (rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32) for _ in range(3))
    got = bits.lop3(a, b, c, lut)
    for i in range(64):
        want = 0
        for bit in range(32):
            idx = (
                (((int(a[i]) >> bit) & 1) << 2)
                | (((int(b[i]) >> bit) & 1) << 1)
                | ((int(c[i]) >> bit) & 1)
            )
            want |= ((lut >> idx) & 1) << bit
        assert int(got[i]) == want
