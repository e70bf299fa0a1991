"""f16/bf16 (scalar and packed) arithmetic and cvt in every rounding mode, against the exact
rational oracle (emu_sem_oracle) and hand-derived facts."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from emu_sem_oracle import f32_bits, round_fraction

from ptxls.emulator.semantics import cvt, formats, half

MODES = ("rn", "rz", "rm", "rp")


def _half_value(bits: int, kind: str) -> float:
    if kind == "f16":
        return float(np.uint16(bits).view(np.float16))
    return float(np.uint32(bits << 16).view(np.float32))


def _half_bits(v: float, kind: str) -> int:
    if kind == "f16":
        return int(np.float16(v).view(np.uint16))  # v is exactly representable
    return f32_bits(v) >> 16


def _random_half_bits(rng, kind, n):
    b = rng.integers(0, 65536, n).astype(np.uint16)
    top = 0x7C00 if kind == "f16" else 0x7F80
    return b[(b & top) != top]  # finite only


@pytest.mark.parametrize("kind", ["f16", "bf16"])
@pytest.mark.parametrize("op", ["add", "mul", "fma"])
@pytest.mark.parametrize("rnd", MODES)
def test_half_arith_against_rationals(kind, op, rnd):
    rng = np.random.default_rng(21)
    a, b, c = (_random_half_bits(rng, kind, 400)[:300] for _ in range(3))
    fn = {"add": half.add, "mul": half.mul, "fma": half.fma}[op]
    got = fn(a, b, c, kind, rnd) if op == "fma" else fn(a, b, kind, rnd)
    for i in range(300):
        x, y, z = (Fraction(_half_value(int(v[i]), kind)) for v in (a, b, c))
        exact = {"add": x + y, "mul": x * y, "fma": x * y + z}[op]
        if exact == 0:
            continue  # the sign of an exact zero: test_half_zero_signs
        want = round_fraction(exact, kind, rnd)
        if want == 0:
            want = -0.0 if exact < 0 else 0.0
        if want in (np.inf, -np.inf):
            w = 0x7C00 if kind == "f16" else 0x7F80
            want_bits = w | (0x8000 if want < 0 else 0)
        else:
            want_bits = _half_bits(want, kind)
        assert int(got[i]) == want_bits, (op, hex(int(a[i])), hex(int(b[i])), hex(int(c[i])))


def test_half_zero_signs():
    one, mone = np.uint16([0x3C00]), np.uint16([0xBC00])
    assert half.add(one, mone, "f16").tolist() == [0x0000]
    assert half.add(one, mone, "f16", "rm").tolist() == [0x8000]
    assert half.add(np.uint16([0x8000]), np.uint16([0x8000]), "f16").tolist() == [0x8000]
    bone, bmone = np.uint16([0x3F80]), np.uint16([0xBF80])
    assert half.fma(bone, bmone, bone, "bf16", "rm").tolist() == [0x8000]
    assert half.mul(np.uint16([0x8000]), one, "f16").tolist() == [0x8000]


def test_packed_ops_work_per_element_low_half_first():
    one, two, three = 0x3C00, 0x4000, 0x4200
    a = np.array([one | (two << 16)], dtype=np.uint32)
    b = np.array([two | (two << 16)], dtype=np.uint32)
    assert int(half.add(a, b, "f16x2")[0]) == three | (0x4400 << 16)  # (1+2, 2+2)
    assert int(half.mul(a, b, "f16x2")[0]) == two | (0x4400 << 16)
    neg = half.hneg(a, "f16x2")
    assert int(neg[0]) == (one | 0x8000) | ((two | 0x8000) << 16)
    bf = np.array([0x3F80 | (0xC000 << 16)], dtype=np.uint32)  # (1.0, -2.0) in bf16
    assert int(half.habs(bf, "bf16x2")[0]) == 0x3F80 | (0x4000 << 16)


def test_half_sat_relu_ftz_and_nan():
    x = np.array([0xC000, 0x3800, 0x4400, 0x7E00, 0x0001], dtype=np.uint16)  # -2, .5, 4, NaN, tiny
    zero = np.zeros(5, dtype=np.uint16)
    assert half.add(x, zero, "f16", sat=True).tolist() == [0, 0x3800, 0x3C00, 0, 0x0001]
    assert half.fma(x, np.full(5, 0x3C00, np.uint16), zero, "f16", relu=True).tolist() == [
        0,
        0x3800,
        0x4400,
        0x7FFF,
        1,
    ]
    assert half.add(x, zero, "f16", ftz=True).tolist()[4] == 0
    assert half.mul(x, x, "f16").tolist()[3] == 0x7FFF  # canonical NaN


def test_half_min_max_xorsign_abs():
    # ISA: |min|/|max| of the magnitudes, sign = sign(a) XOR sign(b)
    a = np.array([0xC000, 0x3C00, 0xC400], dtype=np.uint16)  # -2, 1, -4
    b = np.array([0x3C00, 0xC200, 0xC200], dtype=np.uint16)  # 1, -3, -3
    assert half.hmin(a, b, "f16", xorsign_abs=True).tolist() == [0xBC00, 0xBC00, 0x4200]
    assert half.hmax(a, b, "f16", xorsign_abs=True).tolist() == [0xC000, 0xC200, 0x4400]


def test_half_min_max_nan_rules():
    nan, one, mzero, pzero = 0x7E00, 0x3C00, 0x8000, 0x0000
    a = np.array([nan, one, mzero, nan], dtype=np.uint16)
    b = np.array([one, nan, pzero, nan], dtype=np.uint16)
    assert half.hmin(a, b, "f16").tolist() == [one, one, mzero, 0x7FFF]
    assert half.hmax(a, b, "f16").tolist() == [one, one, pzero, 0x7FFF]
    assert half.hmin(a, b, "f16", nan=True).tolist() == [0x7FFF, 0x7FFF, mzero, 0x7FFF]


@pytest.mark.parametrize("dst", ["f16", "bf16", "tf32"])
@pytest.mark.parametrize("rnd", ["rn", "rz", "rm", "rp"])
def test_cvt_f32_to_narrow_floats(dst, rnd):
    if dst == "tf32" and rnd in ("rm", "rp"):
        pytest.skip("cvt to tf32 takes .rna/.rn/.rz")
    rng = np.random.default_rng(22)
    x = (rng.standard_normal(500) * np.exp2(rng.integers(-30, 30, 500))).astype(np.float32)
    got = cvt.cvt(x, dst, "f32", rnd)
    for i in range(500):
        want = round_fraction(Fraction(float(x[i])), dst, rnd)
        if dst == "tf32":
            assert int(got[i]) == f32_bits(want)
        elif abs(want) == np.inf:
            assert formats.decode(got[i : i + 1], dst)[0] == want
        else:
            assert int(got[i]) == _half_bits(want, dst), (float(x[i]), rnd)


def test_cvt_tf32_rna_ties_away():
    # 1 + 2^-11 is halfway between tf32 neighbours 1 and 1 + 2^-10: rna → away, rn → even
    x = np.array([1 + 2**-11, -(1 + 2**-11), 1 + 3 * 2**-11], dtype=np.float32)
    assert cvt.cvt(x, "tf32", "f32", "rna").tolist() == [
        f32_bits(1 + 2**-10),
        f32_bits(-(1 + 2**-10)),
        f32_bits(1 + 2**-9),
    ]
    assert cvt.cvt(x, "tf32", "f32", "rn").tolist() == [
        f32_bits(1.0),
        f32_bits(-1.0),
        f32_bits(1 + 2**-9),
    ]


@pytest.mark.parametrize("rnd", MODES)
def test_cvt_f64_to_f32(rnd):
    rng = np.random.default_rng(23)
    x = rng.standard_normal(500) * np.exp2(rng.integers(-160, 130, 500))
    got = cvt.cvt(x, "f32", "f64", rnd)
    for i in range(500):
        want = round_fraction(Fraction(float(x[i])), "f32", rnd)
        assert f32_bits(float(got[i])) == f32_bits(want), (float(x[i]), rnd)


@pytest.mark.parametrize("src", ["s32", "u32", "s64", "u64"])
@pytest.mark.parametrize("dst", ["f32", "f64", "f16"])
@pytest.mark.parametrize("rnd", MODES)
def test_cvt_int_to_float(src, dst, rnd):
    rng = np.random.default_rng(24)
    w = int(src[1:])
    vals = [int(v) for v in rng.integers(0, 2**63, 300, dtype=np.int64)] + [
        2**w - 1,
        2 ** (w - 1),
        2**53 + 1,
        2**24 + 1,
        3,
    ]
    vals = [v & (2**w - 1) for v in vals]
    if src[0] == "s":
        vals = [v - 2**w if v >> (w - 1) else v for v in vals]
    arr = np.array(
        vals, dtype={"s32": np.int32, "u32": np.uint32, "s64": np.int64, "u64": np.uint64}[src]
    )
    got = cvt.cvt(arr, dst, src, rnd)
    for i, v in enumerate(vals):
        want = round_fraction(Fraction(v), dst, rnd)
        if dst == "f16":
            g = formats.decode(got[i : i + 1], "f16")[0]
            assert g == want, (v, rnd)
        else:
            assert float(got[i]) == want, (v, rnd)


def test_cvt_float_to_int_rounding_and_saturation():
    x = np.array(
        [2.5, -2.5, 3.5, -0.5, 1e10, -1e10, np.nan, np.inf, -np.inf, 255.9], dtype=np.float32
    )
    assert cvt.cvt(x, "s32", "f32", "rni").tolist() == [
        2,
        -2,
        4,
        0,
        2**31 - 1,
        -(2**31),
        0,
        2**31 - 1,
        -(2**31),
        256,
    ]
    assert cvt.cvt(x, "s32", "f32", "rmi").tolist()[:4] == [2, -3, 3, -1]
    assert cvt.cvt(x, "s32", "f32", "rpi").tolist()[:4] == [3, -2, 4, 0]
    assert cvt.cvt(x, "u8", "f32", "rzi").tolist() == [2, 0, 3, 0, 255, 0, 0, 255, 0, 255]
    assert cvt.cvt(x, "s8", "f32", "rni").tolist()[4:6] == [127, -128]
    # .ftz on an f32 source: -subnormal with rmi is -1 without ftz, 0 with it
    d = np.array([-1e-40], dtype=np.float32)
    assert cvt.cvt(d, "s32", "f32", "rmi").tolist() == [-1]
    assert cvt.cvt(d, "s32", "f32", "rmi", ftz=True).tolist() == [0]


def test_cvt_half_sources_to_int_and_float():
    h = np.array([0x4100, 0xC100, 0x7C00, 0x7E00, 0x0001], dtype=np.uint16)  # 2.5 -2.5 inf NaN tiny
    assert cvt.cvt(h, "s32", "f16", "rni").tolist() == [2, -2, 2**31 - 1, 0, 0]
    assert cvt.cvt(h, "u8", "f16", "rpi").tolist() == [3, 0, 255, 0, 1]
    f = cvt.cvt(h, "f32", "f16")
    assert f[:3].tolist() == [2.5, -2.5, np.inf] and np.isnan(f[3]) and f[4] == np.float32(2.0**-24)
    assert cvt.cvt(np.uint16([0x4049]), "f32", "bf16").tolist() == [np.float32(3.140625)]
    assert cvt.cvt(h[:2], "f16", "f16", "rzi").tolist() == [0x4000, 0xC000]  # cvt.rzi.f16.f16


def test_cvt_int_to_int_wrap_and_sat():
    x = np.array([300, -5, 70000, -40000], dtype=np.int32)
    assert cvt.cvt(x, "u8", "s32").tolist() == [44, 251, 112, 192]
    assert cvt.cvt(x, "u8", "s32", sat=True).tolist() == [255, 0, 255, 0]
    assert cvt.cvt(x, "s16", "s32", sat=True).tolist() == [300, -5, 32767, -32768]
    assert cvt.cvt(np.int8([-1]), "u32", "s8").tolist() == [0xFFFFFFFF]  # sign-extends
    assert cvt.cvt(np.uint8([0xFF]), "s32", "u8").tolist() == [255]
    assert cvt.cvt(np.uint64([2**64 - 1]), "s64", "u64", sat=True).tolist() == [2**63 - 1]
    assert cvt.cvt(np.int64([-1]), "u64", "s64", sat=True).tolist() == [0]


def test_cvt_packs_a_into_the_upper_half():
    # ISA: cvt.rn.f16x2.f32 d, a, b → d = {cvt(a), cvt(b)}: a in bits 31:16
    d = cvt.cvt_pack_x2(np.float32([1.0]), np.float32([2.0]), "f16x2")
    assert int(d[0]) == (0x3C00 << 16) | 0x4000
    d = cvt.cvt_pack_x2(np.float32([-1.0]), np.float32([0.5]), "bf16x2", relu=True)
    assert int(d[0]) == (0x0000 << 16) | 0x3F00
    e = cvt.cvt_pack_x2(np.float32([448.0]), np.float32([1000.0]), "e4m3x2", satfinite=True)
    assert int(e[0]) == (0x7E << 8) | 0x7E
    assert int(cvt.cvt_unpack_fp8x2(np.uint16([0x3840]), "e4m3x2")[0]) == (0x3C00 << 16) | 0x4000


def test_cvt_f16x2_to_fp8x2():
    # (1.0, 3.0) as f16x2 → e4m3 codes 0x38 (1.0) low, 0x44 (3.0) high; 1000 saturates to 448
    a = np.array([0x3C00 | (0x4200 << 16), 0x63D0 | (0xBC00 << 16)], dtype=np.uint32)
    got = cvt.cvt_f16x2_to_fp8x2(a, "e4m3x2")
    assert got.tolist() == [0x38 | (0x44 << 8), 0x7E | (0xB8 << 8)]
    assert cvt.cvt_f16x2_to_fp8x2(a[1:], "e4m3x2", relu=True).tolist() == [0x7E]


def test_e4m3_e5m2_every_code_roundtrips():
    for kind in ("e4m3", "e5m2"):
        codes = np.arange(256, dtype=np.uint8)
        v = formats.decode(codes, kind)
        back = formats.encode(v, kind)
        keep = ~np.isnan(v)
        assert np.array_equal(back[keep], codes[keep])
