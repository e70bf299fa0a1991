"""Warp collectives, mma.sync and ldmatrix against per-lane references written from the PTX
ISA's pseudocode and fragment tables (loops over lanes here; the emulator's are vectorised),
and a GEMM assembled from mma.sync tiles against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from ptxls.emulator.semantics import atomic, mma, warp


def _shfl_ref(mode, a, b, c, lane):
    """PTX ISA, shfl.sync pseudocode, for one lane of a full warp."""
    bval, cval, segmask = b & 31, c & 31, (c >> 8) & 31
    max_lane = (lane & segmask) | (cval & ~segmask & 31)
    min_lane = lane & segmask
    if mode == "up":
        j, p = lane - bval, lane - bval >= max_lane
    elif mode == "down":
        j, p = lane + bval, lane + bval <= max_lane
    elif mode == "bfly":
        j, p = lane ^ bval, (lane ^ bval) <= max_lane
    else:
        j = min_lane | (bval & ~segmask & 31)
        p = j <= max_lane
    if not p:
        j = lane
    return a[j], p


@pytest.mark.parametrize("mode", ["up", "down", "bfly", "idx"])
@pytest.mark.parametrize("width", [32, 16, 8, 4, 2, 1])
@pytest.mark.parametrize("b", [0, 1, 3, 5, 17, 31])
def test_shfl_matches_isa_pseudocode(mode, width, b):
    # CUDA's __shfl_*_sync(mask, v, b, width) pass c = ((32-width) << 8) | clamp, with clamp
    # 0 for up and width-1 (0x1f with width 32) otherwise
    c = ((32 - width) << 8) | (0 if mode == "up" else 31)
    vals = np.arange(2 * 32, dtype=np.uint32).reshape(2, 32) * 7 + 3
    act = np.ones((2, 32), bool)
    d, p, bad = warp.shfl(mode, vals, b, c, act)
    for w in range(2):
        for lane in range(32):
            want, wp = _shfl_ref(mode, vals[w], b, c, lane)
            assert (int(d[w, lane]), bool(p[w, lane])) == (int(want), wp), (w, lane)
    assert not bad.any()


def test_shfl_reports_reads_from_absent_lanes():
    vals = np.arange(32, dtype=np.uint32)[None, :]
    act = np.ones((1, 32), bool)
    act[0, 16:] = False
    d, p, bad = warp.shfl("down", vals, 16, 0x1F, act, membermask=0x0000FFFF)
    assert bad[0, :16].all() and not bad[0, 16:].any()  # lanes 0-15 read 16-31: not executing
    d, p, bad = warp.shfl("down", vals, 1, 0x1F, act, membermask=0x0000FFFF)
    assert bad[0].tolist() == [False] * 15 + [True] + [False] * 16  # lane 15 reads lane 16


def test_vote_ballot_any_all_uni():
    pred = np.zeros((2, 32), bool)
    pred[0, [1, 5, 31]] = True
    pred[1, :] = True
    act = np.ones((2, 32), bool)
    act[1, 0] = False
    assert warp.vote("ballot", pred, act)[:, 0].tolist() == [
        (1 << 1) | (1 << 5) | (1 << 31),
        0xFFFFFFFE,
    ]
    assert warp.vote("any", pred, act)[:, 3].tolist() == [True, True]
    assert warp.vote("all", pred, act)[:, 3].tolist() == [False, True]
    assert warp.vote("uni", pred, act)[:, 3].tolist() == [False, True]
    # membermask restricts the participants: only lanes 1 and 5 → all true
    assert warp.vote("all", pred, act, membermask=(1 << 1) | (1 << 5))[0, 1]


def test_match_any_all():
    a = np.array([[i % 3 for i in range(32)], [7] * 32], dtype=np.uint32)
    act = np.ones((2, 32), bool)
    d, _ = warp.match("any", a, act)
    for lane in range(32):
        want = sum(1 << j for j in range(32) if j % 3 == lane % 3)
        assert int(d[0, lane]) == want
    d, p = warp.match("all", a, act)
    assert d[0].tolist() == [0] * 32 and not p[0].any()
    assert d[1].tolist() == [0xFFFFFFFF] * 32 and p[1].all()
    a64 = np.array([[2**40 + (i // 16) for i in range(32)]], dtype=np.uint64)
    d, _ = warp.match("any", a64, np.ones((1, 32), bool))
    assert int(d[0, 0]) == 0x0000FFFF and int(d[0, 31]) == 0xFFFF0000


@pytest.mark.parametrize("op", ["add", "min", "max", "and", "or", "xor"])
@pytest.mark.parametrize("t", ["u32", "s32"])
def test_redux(op, t):
    rng = np.random.default_rng(9)
    a = rng.integers(-(2**31), 2**31, (3, 32)).astype(np.int64)
    act = rng.random((3, 32)) < 0.7
    act[:, 0] = True
    got = warp.redux(op, a.astype(np.int32 if t == "s32" else np.uint32), t, act)
    for w in range(3):
        vals = [int(a[w, i]) & 0xFFFFFFFF for i in range(32) if act[w, i]]
        if t == "s32":
            vals = [v - 2**32 if v >> 31 else v for v in vals]
        want = {"add": sum, "min": min, "max": max}.get(op)
        if want:
            r = want(vals)
        else:
            r = vals[0]
            for v in vals[1:]:
                r = {"and": r & v, "or": r | v, "xor": r ^ v}[op]
        assert int(got[w, 0]) & 0xFFFFFFFF == r & 0xFFFFFFFF


def test_activemask():
    act = np.zeros((1, 32), bool)
    act[0, [0, 2, 31]] = True
    assert warp.activemask(act).tolist() == [(1 << 31) | 5]


# ----------------------------------------------------------------------------- mma

# Fragment tables transcribed from the PTX ISA ("Matrix Fragments for mma.m16n8k16 with
# floating point type", "... for mma.m16n8k8"), one lane at a time.


def _isa_coords(shape, operand, etype, lane):
    g, t = lane >> 2, lane % 4
    out = []
    if shape == "m16n8k16" and etype in ("f16", "bf16") and operand == "a":
        for i in range(8):
            row = g if (i < 2 or 4 <= i < 6) else g + 8
            col = t * 2 + (i & 1) + (8 if i >= 4 else 0)
            out.append((row, col))
    elif shape == "m16n8k16" and etype in ("f16", "bf16") and operand == "b":
        for i in range(4):
            out.append((t * 2 + (i & 1) + (8 if i >= 2 else 0), g))
    elif (
        operand == "c"
        and shape != "m8n8k4"
        or shape == "m16n8k8"
        and etype in ("f16", "bf16")
        and operand == "a"
    ):
        for i in range(4):
            out.append((g if i < 2 else g + 8, t * 2 + (i & 1)))
    elif shape == "m16n8k8" and etype in ("f16", "bf16") and operand == "b":
        for i in range(2):
            out.append((t * 2 + i, g))
    elif shape == "m16n8k8" and etype == "tf32" and operand == "a":
        for i in range(4):
            out.append((g if i in (0, 2) else g + 8, t if i < 2 else t + 4))
    elif shape == "m16n8k8" and etype == "tf32" and operand == "b":
        for i in range(2):
            out.append((t if i == 0 else t + 4, g))
    elif shape == "m8n8k4":
        out = {"a": [(g, t)], "b": [(t, g)], "c": [(g, t * 2), (g, t * 2 + 1)]}[operand]
    elif etype in ("s8", "u8") and operand == "a":
        # a0-a3: row g, k 4t..4t+3; a4-a7: row g+8; (m16n8k32:) a8-a11 row g, k 16+4t..;
        # a12-a15 row g+8, k 16+4t..
        n = 16 if shape == "m16n8k32" else 8
        for i in range(n):
            out.append((g + (8 if (i // 4) % 2 else 0), 4 * t + (i % 4) + (16 if i >= 8 else 0)))
    elif etype in ("s8", "u8") and operand == "b":
        n = 8 if shape == "m16n8k32" else 4
        for i in range(n):
            out.append((4 * t + (i % 4) + (16 if i >= 4 else 0), g))
    return out


def _pack(mat, shape, operand, etype):
    """A [nw, r, c] float64 matrix → registers, lane by lane, from the ISA table."""
    nw = mat.shape[0]
    coords = [_isa_coords(shape, operand, etype, lane) for lane in range(32)]
    n = len(coords[0])
    if etype in ("f16", "bf16"):
        regs = np.zeros((nw, 32, n // 2), dtype=np.uint32)
        for w in range(nw):
            for lane in range(32):
                for k in range(0, n, 2):
                    lo = _half_bits(mat[w][coords[lane][k]], etype)
                    hi = _half_bits(mat[w][coords[lane][k + 1]], etype)
                    regs[w, lane, k // 2] = lo | (hi << 16)
        return regs
    if etype in ("s8", "u8"):
        regs = np.zeros((nw, 32, n // 4), dtype=np.uint32)
        for w in range(nw):
            for lane in range(32):
                for k in range(n):
                    byte = int(mat[w][coords[lane][k]]) & 0xFF
                    regs[w, lane, k // 4] |= np.uint32(byte << (8 * (k % 4)))
        return regs
    if etype == "s32":
        regs = np.zeros((nw, 32, n), dtype=np.int32)
        for w in range(nw):
            for lane in range(32):
                for k in range(n):
                    regs[w, lane, k] = int(mat[w][coords[lane][k]])
        return regs
    dt = {"tf32": np.float32, "f32": np.float32, "f64": np.float64}[etype]
    regs = np.zeros((nw, 32, n), dtype=dt)
    for w in range(nw):
        for lane in range(32):
            for k in range(n):
                regs[w, lane, k] = mat[w][coords[lane][k]]
    return regs.view(np.uint32) if etype == "tf32" else regs


def _half_bits(v, etype):
    if etype == "f16":
        return int(np.float16(v).view(np.uint16))
    return int(np.float32(v).view(np.uint32)) >> 16  # exact for the test's small integers


def _unpack_c(regs, shape, etype):
    nw = regs.shape[0]
    m, n = (16, 8) if shape != "m8n8k4" else (8, 8)
    out = np.zeros((nw, m, n))
    for w in range(nw):
        for lane in range(32):
            for k, (r, c) in enumerate(_isa_coords(shape, "c", etype, lane)):
                if etype == "f16":
                    word = int(regs[w, lane, k // 2])
                    bits = (word >> (16 * (k % 2))) & 0xFFFF
                    out[w, r, c] = float(np.uint16(bits).view(np.float16))
                else:
                    out[w, r, c] = float(regs[w, lane, k])
    return out


@pytest.mark.parametrize(
    "shape,ab,cd",
    [("m16n8k16", "f16", "f32"), ("m16n8k16", "bf16", "f32"), ("m16n8k8", "f16", "f32"),
     ("m16n8k8", "bf16", "f32"), ("m16n8k8", "tf32", "f32"), ("m16n8k16", "f16", "f16"),
     ("m8n8k4", "f64", "f64")],
)  # fmt: skip
def test_mma_fragments_follow_the_isa_table(shape, ab, cd):
    m, n, k = mma.SHAPES[shape]
    rng = np.random.default_rng(12)
    nw = 3
    # small integers: exact in every type, so D must equal A@B + C exactly
    A = rng.integers(-4, 5, (nw, m, k)).astype(np.float64)
    B = rng.integers(-4, 5, (nw, k, n)).astype(np.float64)
    C = rng.integers(-8, 9, (nw, m, n)).astype(np.float64)
    d = mma.mma_sync(
        shape,
        _pack(A, shape, "a", ab),
        _pack(B, shape, "b", ab),
        _pack(C, shape, "c", cd),
        ab,
        ab,
        cd,
        cd,
    )
    assert np.array_equal(_unpack_c(d, shape, cd), A @ B + C)


@pytest.mark.parametrize("shape", ["m16n8k32", "m16n8k16"])
@pytest.mark.parametrize("at,bt", [("s8", "s8"), ("u8", "s8"), ("u8", "u8")])
@pytest.mark.parametrize("satfinite", [False, True])
def test_integer_mma_follows_the_isa_table(shape, at, bt, satfinite):
    m, n, k = mma.SHAPES[shape]
    rng = np.random.default_rng(15)
    nw = 2
    lo = {"s8": -128, "u8": 0}
    A = rng.integers(lo[at], lo[at] + 256, (nw, m, k))
    B = rng.integers(lo[bt], lo[bt] + 256, (nw, k, n))
    C = rng.integers(-(2**31), 2**31, (nw, m, n))
    C[0, :2] = 2**31 - 1  # overflow: wraps, or clamps with .satfinite
    C[1, :2] = -(2**31)
    d = mma.mma_sync(shape, _pack(A, shape, "a", at), _pack(B, shape, "b", bt),
                     _pack(C, shape, "c", "s32"), at, bt, "s32", "s32", satfinite=satfinite)  # fmt: skip
    exact = A @ B + C
    want = np.clip(exact, -(2**31), 2**31 - 1) if satfinite else (exact + 2**31) % 2**32 - 2**31
    got = np.zeros((nw, m, n), dtype=np.int64)
    for w in range(nw):
        for lane in range(32):
            for e, (r, c) in enumerate(_isa_coords(shape, "c", "s32", lane)):
                got[w, r, c] = int(d[w, lane, e])
    assert np.array_equal(got, want)


def test_gemm_through_mma_tiles_equals_numpy():
    """A 32x24 @ 24... GEMM (m16n8k8 tf32 tiles and m16n8k16 f16 tiles), one warp per tile."""
    rng = np.random.default_rng(13)
    M, N, K = 32, 16, 32
    A = rng.standard_normal((M, K)).astype(np.float16).astype(np.float64)
    B = rng.standard_normal((K, N)).astype(np.float16).astype(np.float64)
    D = np.zeros((M, N))
    for i in range(0, M, 16):
        for j in range(0, N, 8):
            acc = np.zeros((1, 16, 8))
            c = _pack(acc, "m16n8k16", "c", "f32")
            for kk in range(0, K, 16):
                a = _pack(A[None, i : i + 16, kk : kk + 16], "m16n8k16", "a", "f16")
                b = _pack(B[None, kk : kk + 16, j : j + 8], "m16n8k16", "b", "f16")
                c = mma.mma_sync("m16n8k16", a, b, c, "f16", "f16", "f32", "f32")
            D[i : i + 16, j : j + 8] = _unpack_c(c, "m16n8k16", "f32")[0]
    want = A @ B
    assert np.allclose(D, want, rtol=1e-6, atol=1e-5)


# ----------------------------------------------------------------------------- ldmatrix


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_delivery(num, trans):
    """ISA: lanes 8i..8i+7 give the row addresses of matrix i; each lane receives, per
    matrix, the two b16 elements of row laneid/4, columns 2*(laneid%4) and +1 (with .trans,
    of the transposed matrix)."""
    nw = 2
    mats = np.arange(nw * num * 64, dtype=np.uint16).reshape(nw, num, 8, 8)
    rows = np.zeros((nw, 32, 8), dtype=np.uint16)
    for w in range(nw):
        for i in range(num):
            for r in range(8):
                rows[w, 8 * i + r] = mats[w, i, r]  # lane 8i+r pointed at row r of matrix i
    d = mma.ldmatrix(rows, num, trans)
    assert d.shape == (nw, 32, num)
    for w in range(nw):
        for lane in range(32):
            for i in range(num):
                m = mats[w, i].T if trans else mats[w, i]
                r, c = lane // 4, 2 * (lane % 4)
                assert int(d[w, lane, i]) == int(m[r, c]) | (int(m[r, c + 1]) << 16)
    assert mma.ldmatrix_address_lanes(num).tolist() == list(range(8 * num))


def test_ldmatrix_feeds_mma_a_fragment():
    """ldmatrix.x4 of a row-major 16x16 f16 tile (lanes 0-15 rows 0-15 of columns 0-7,
    lanes 16-31 rows 0-15 of columns 8-15, as CUTLASS arranges it) yields exactly the
    m16n8k16 A fragment."""
    rng = np.random.default_rng(14)
    A = rng.integers(-8, 8, (16, 16)).astype(np.float16)
    bits = A.view(np.uint16)
    rows = np.zeros((1, 32, 8), dtype=np.uint16)
    for lane in range(32):
        rows[0, lane] = bits[lane % 16, (lane // 16) * 8 : (lane // 16) * 8 + 8]
    regs = mma.ldmatrix(rows, 4)
    assert np.array_equal(regs, _pack(A.astype(np.float64)[None], "m16n8k16", "a", "f16"))


# ----------------------------------------------------------------------------- atom


def test_atom_inc_dec_wrap_rules():
    old = np.array([0, 5, 9, 10], dtype=np.uint32)
    assert atomic.atom_op("inc", old, 9, "u32").tolist() == [1, 6, 0, 0]
    assert atomic.atom_op("dec", old, 9, "u32").tolist() == [9, 4, 8, 9]


def test_atom_cas_exch_bitwise_minmax():
    old = np.array([1, 2, 3], dtype=np.uint32)
    assert atomic.atom_op("cas", old, np.uint32(2), "b32", c=np.uint32(7)).tolist() == [1, 7, 3]
    assert atomic.atom_op("exch", old, np.uint32(9), "b32").tolist() == [9, 9, 9]
    assert atomic.atom_op("min", np.int32([-1, 5]), np.int32([3, 3]), "s32").tolist() == [-1, 3]
    assert atomic.atom_op("max", np.uint32([0xFFFFFFFF]), np.uint32([1]), "u32").tolist() == [
        0xFFFFFFFF
    ]
    assert atomic.atom_op("xor", np.uint32([0xF0]), np.uint32([0xFF]), "b32").tolist() == [0x0F]
    assert atomic.atom_op("add", np.uint32([0xFFFFFFFF]), np.uint32([2]), "u32").tolist() == [1]


def test_atom_add_float_rules():
    # atom.add.f32 flushes subnormal inputs/results (ISA); f64 keeps them
    got = atomic.atom_op("add", np.float32([1e-39]), np.float32([0.0]), "f32")
    assert got[0] == 0
    assert atomic.atom_op("add", np.float64([1e-310]), np.float64([0.0]), "f64")[0] == 1e-310
    h = atomic.atom_op("add", np.uint32([0x3C003C00]), np.uint32([0x3C004000]), "f16x2")
    assert int(h[0]) == 0x40004200  # (1+2, 1+1) → element 0 = 3.0 (0x4200), element 1 = 2.0
