"""f32/f64 arithmetic with every rounding modifier: hand-derived IEEE facts
(tests/data/emulator/ieee_rounding.json) and random operands against an exact rational
oracle (emu_sem_oracle, written from IEEE 754's definitions, not from the emulator)."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from emu_sem_oracle import bits_f32, bits_f64, f32_bits, f64_bits, round_fraction

from ptxls.emulator.semantics import fp

DATA = Path(__file__).resolve().parents[2] / "data" / "emulator"
ROWS = json.loads((DATA / "ieee_rounding.json").read_text())["rows"]
MODES = ("rn", "rz", "rm", "rp")


def _arr(bits: list[str], t: str):
    dt = np.uint32 if t == "f32" else np.uint64
    ft = np.float32 if t == "f32" else np.float64
    return [np.array([int(b, 16)], dtype=dt).view(ft) for b in bits]


@pytest.mark.parametrize("row", ROWS, ids=[r[0] + ":" + "/".join(r[1]) for r in ROWS])
def test_ieee_table(row):
    ins, ops, expected, why = row
    op, rnd, t = ins.split(".")
    args = _arr(ops, t)
    fn = {"add": fp.add, "mul": fp.mul, "div": fp.div, "sqrt": fp.sqrt, "fma": fp.fma}[op]
    got = fn(*args, rnd=rnd)
    width = 8 if t == "f32" else 16
    got_bits = int(got.view(np.uint32 if t == "f32" else np.uint64)[0])
    assert f"{got_bits:0{width}x}" == expected, why


def _random_f32(rng, n):
    """Operands that stress rounding: near-equal magnitudes, wide exponent gaps, subnormals."""
    sig = rng.integers(2**23, 2**24, n)
    exp = rng.integers(-80, 62, n)  # products reach the subnormals, never overflow
    x = np.ldexp(sig.astype(np.float64), exp - 23) * rng.choice([-1.0, 1.0], n)
    return x.astype(np.float32)


def _random_f64(rng, n):
    sig = rng.integers(2**52, 2**53, n, dtype=np.int64)
    exp = rng.integers(-300, 300, n)
    return np.ldexp(sig.astype(np.float64), exp - 52) * rng.choice([-1.0, 1.0], n)


def _oracle(op, vals, t, rnd):
    v = [Fraction(float(x)) for x in vals]
    exact = {"add": lambda: v[0] + v[1], "mul": lambda: v[0] * v[1],
             "fma": lambda: v[0] * v[1] + v[2], "div": lambda: v[0] / v[1]}[op]()  # fmt: skip
    r = round_fraction(exact, t, rnd)
    if r == 0:  # the sign of an exact or rounded-away zero
        r = -0.0 if (exact < 0 or (exact == 0 and rnd == "rm")) else 0.0
    return r


@pytest.mark.parametrize("t", ["f32", "f64"])
@pytest.mark.parametrize("op", ["add", "mul", "fma", "div"])
@pytest.mark.parametrize("rnd", MODES)
def test_random_against_exact_rationals(t, op, rnd):
    rng = np.random.default_rng(hash((t, op, rnd)) % 2**32)
    n = 300
    gen = _random_f32 if t == "f32" else _random_f64
    a, b, c = gen(rng, n), gen(rng, n), gen(rng, n)
    if op in ("add", "fma"):  # make cancellation likely for part of the lanes
        c[: n // 3] = -(a[: n // 3].astype(np.float64) * b[: n // 3]).astype(a.dtype)
        b[n // 3 : 2 * n // 3] = (
            -a[n // 3 : 2 * n // 3] * (1 + rng.uniform(-1e-6, 1e-6, n // 3))
        ).astype(a.dtype)
        # powers of two with a tiny operand of the other sign: the result sits just below a
        # binade boundary, where the quantum halves
        k = rng.integers(-60, 60, 40)
        a[-40:] = np.ldexp(1.0, k) * rng.choice([-1.0, 1.0], 40)
        b[-40:] = -np.sign(a[-40:]) * np.ldexp(1.0, k - rng.integers(20, 80, 40))
        c[-40:] = b[-40:]
    args = {"add": (a, b), "mul": (a, b), "div": (a, b), "fma": (a, b, c)}[op]
    got = {"add": fp.add, "mul": fp.mul, "div": fp.div, "fma": fp.fma}[op](*args, rnd=rnd)
    tobits = f32_bits if t == "f32" else f64_bits
    bad = []
    for i in range(n):
        if not all(np.isfinite(x[i]) for x in args) or (op == "div" and b[i] == 0):
            continue
        want = _oracle(op, [x[i] for x in args], t, rnd)
        if not math.isfinite(want) and want != want:
            continue
        if tobits(float(got[i])) != tobits(want):
            bad.append((i, [float(x[i]) for x in args], float(got[i]), want))
    assert not bad, bad[:3]


def test_f32_rn_agrees_with_numpy():
    rng = np.random.default_rng(1)
    a, b, c = (rng.standard_normal(10000).astype(np.float32) for _ in range(3))
    assert np.array_equal(fp.add(a, b), a + b)
    assert np.array_equal(fp.mul(a, b), a * b)
    assert np.array_equal(fp.div(a, b), a / b)
    assert np.array_equal(fp.sqrt(np.abs(a)), np.sqrt(np.abs(a)))
    # fma.rn.f32 = the exact a*b+c rounded once: float64 then float32 is exact here
    # only when no double rounding occurs; compare with the exact oracle instead
    want = [_oracle("fma", (a[i], b[i], c[i]), "f32", "rn") for i in range(2000)]
    got = fp.fma(a[:2000], b[:2000], c[:2000])
    assert [f32_bits(float(x)) for x in got] == [f32_bits(w) for w in want]


@pytest.mark.parametrize("rnd", MODES)
def test_sqrt_directed_modes(rnd):
    rng = np.random.default_rng(5)
    for t, gen in (("f32", _random_f32), ("f64", _random_f64)):
        x = np.abs(gen(rng, 200))
        got = fp.sqrt(x, rnd=rnd)
        for xi, gi in zip(x, got, strict=True):
            g = Fraction(float(gi))
            lo_ok = g * g <= Fraction(float(xi)) if rnd in ("rz", "rm") else True
            hi_ok = g * g >= Fraction(float(xi)) if rnd == "rp" else True
            nxt = np.nextafter(gi, np.inf if rnd in ("rz", "rm") else -np.inf)
            # the result is the right neighbour: the next value in the other direction is
            # on the wrong side of the exact root
            other = Fraction(float(nxt)) ** 2
            side = (
                other > Fraction(float(xi)) if rnd in ("rz", "rm") else other < Fraction(float(xi))
            )
            assert lo_ok and hi_ok and (rnd == "rn" or side), (t, float(xi), float(gi))


def test_ftz_flushes_inputs_and_results():
    den = np.array([1e-45, -1e-45, 1e-39], dtype=np.float32)
    one = np.ones(3, dtype=np.float32)
    assert np.array_equal(np.signbit(fp.mul(den, one, ftz=True)), [False, True, False])
    assert np.all(fp.mul(den, one, ftz=True) == 0)
    assert np.all(fp.mul(den, one) == den)
    # a normal product whose result is subnormal is flushed too
    tiny = np.array([2.0**-100], dtype=np.float32)
    assert fp.mul(tiny, np.array([2.0**-30], np.float32), ftz=True)[0] == 0
    assert fp.mul(tiny, np.array([2.0**-30], np.float32))[0] == np.float32(2.0**-130)


def test_sat_clamps_and_zeroes_nan():
    a = np.array([-0.5, 0.25, 3.0, np.nan, -0.0], dtype=np.float32)
    got = fp.add(a, np.zeros_like(a), sat=True)
    assert got.view(np.uint32).tolist() == [0, f32_bits(0.25), f32_bits(1.0), 0, 0]


@pytest.mark.parametrize(
    "cmp,expect",
    [("eq", [1, 0, 0, 0]), ("ne", [0, 1, 0, 0]), ("lt", [0, 1, 0, 0]), ("equ", [1, 0, 1, 1]),
     ("neu", [0, 1, 1, 1]), ("ltu", [0, 1, 1, 1]), ("geu", [1, 0, 1, 1]), ("num", [1, 1, 0, 0]),
     ("nan", [0, 0, 1, 1]), ("ge", [1, 0, 0, 0]), ("gt", [0, 0, 0, 0]), ("le", [1, 1, 0, 0])],
)  # fmt: skip
def test_setp_ordered_and_unordered(cmp, expect):
    a = np.array([1.0, 1.0, np.nan, np.nan], dtype=np.float32)
    b = np.array([1.0, 2.0, 1.0, np.nan], dtype=np.float32)
    assert fp.setp(cmp, a, b).astype(int).tolist() == expect


def test_setp_ftz_compares_flushed_values():
    a = np.array([1e-45], dtype=np.float32)
    z = np.zeros(1, dtype=np.float32)
    assert fp.setp("eq", a, z, ftz=True)[0] and not fp.setp("eq", a, z)[0]


def test_testp():
    x = np.array([0.0, 1e-45, 1.0, np.inf, np.nan], dtype=np.float32)
    assert fp.testp("subnormal", x).tolist() == [False, True, False, False, False]
    assert fp.testp("normal", x).tolist() == [False, False, True, False, False]
    assert fp.testp("finite", x).tolist() == [True, True, True, False, False]
    assert fp.testp("notanumber", x).tolist() == [False, False, False, False, True]


def test_div_approx_large_divisor_gives_zero():
    # ISA: for 2**126 < |b| < 2**128, div.approx.f32 returns 0 (NaN if a is inf)
    a = np.array([1.0, -3.0, np.inf], dtype=np.float32)
    b = np.array([2.0**127, 2.0**127, 2.0**127], dtype=np.float32)
    got = fp.div(a, b, rnd="approx")
    assert got[0] == 0 and got[1] == 0 and np.isnan(got[2])
    assert fp.div(a[:1], b[:1], rnd="full")[0] == np.float32(2.0**-127)


def test_f64_nan_rules_of_the_h200():
    q1 = np.array([0x7FF8000000000123], dtype=np.uint64).view(np.float64)
    q2 = np.array([0x7FF8000000000000], dtype=np.uint64).view(np.float64)
    s = np.array([0x7FF0000000000001], dtype=np.uint64).view(np.float64)
    bits = lambda x: int(x.view(np.uint64)[0])  # noqa: E731
    assert bits(fp.add(q1, q2)) == 0x7FF8000000000000  # the last NaN operand
    assert bits(fp.div(q1, q2)) == 0x7FF8000000000123  # div: the first
    assert bits(fp.mul(s, np.ones(1))) == 0x7FF8000000000001  # quieted, payload kept
    inf = np.array([np.inf])
    assert bits(fp.add(inf, -inf)) == 0xFFF8000000000000


def test_bits_helpers_roundtrip():
    assert bits_f32(f32_bits(1.5)) == 1.5 and bits_f64(f64_bits(-2.25)) == -2.25


@pytest.mark.parametrize("fmt_name", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("rnd", MODES)
def test_fast_rounding_paths_agree_with_the_generic_one(fmt_name, rnd):
    """round_pair's cast/bit fast paths against the quantum-scaling implementation, on pairs
    built to sit on ties, just off ties, at binade edges and in the subnormal range."""
    from ptxls.emulator.semantics import rounding

    fmt = rounding.FORMATS_BY_NAME[fmt_name]
    rng = np.random.default_rng(31)
    n = 4000
    p = fmt.precision
    exp = rng.integers(fmt.emin - p - 2, 12, n)
    sig = rng.integers(2**p, 2 ** (p + 1), n).astype(np.float64)  # one bit below the target's
    s = np.ldexp(sig, exp - p) * rng.choice([-1.0, 1.0], n)  # many exact ties and exact values
    tiny = np.ldexp(np.abs(s), -60) * rng.choice([-1.0, 0.0, 1.0], n)
    e = np.where(np.abs(tiny) > 0, tiny, 0.0)
    got = rounding.round_pair(s, e, fmt, rnd)
    want = rounding.round_pair_generic(s, e, fmt, rnd)
    same = (got == want) & (np.signbit(got) == np.signbit(want))
    assert same.all(), list(
        zip(s[~same][:3], e[~same][:3], got[~same][:3], want[~same][:3], strict=True)
    )


@pytest.mark.parametrize("op", ["mul", "fma", "div", "add"])
@pytest.mark.parametrize("rnd", MODES)
def test_f64_extreme_exponents_against_rationals(op, rnd):
    """Results in the subnormal range and near overflow, where TwoProduct's error term
    cannot be exact and the rational fallback has to take over."""
    rng = np.random.default_rng(hash((op, rnd)) % 2**32)
    n = 120
    sig = lambda: rng.integers(2**52, 2**53, n, dtype=np.int64).astype(np.float64) * 2.0**-52  # noqa: E731
    sign = lambda: rng.choice([-1.0, 1.0], n)  # noqa: E731
    half = n // 2
    ea = np.concatenate([rng.integers(-540, -500, half), rng.integers(500, 520, n - half)])
    eb = np.concatenate([rng.integers(-560, -520, half), rng.integers(490, 505, n - half)])
    if op == "div":
        eb = -eb
    if op == "add":  # subnormal sums and near-max sums
        ea = np.concatenate([rng.integers(-1074, -1020, half), rng.integers(1020, 1023, n - half)])
        eb = ea - rng.integers(0, 60, n)
    a, b = np.ldexp(sig(), ea) * sign(), np.ldexp(sig(), eb) * sign()
    c = np.ldexp(sig(), rng.integers(-1074, -1000, n)) * sign()
    if op == "fma":  # exact cancellations whose product underflows TwoProduct: the zero's sign
        k = n // 6
        a[:k] = np.ldexp(sig()[:k], rng.integers(60, 100, k))
        b[:k] = 1e-323 * sign()[:k]
        c[:k] = -(a[:k] * b[:k])
    args = {"add": (a, b), "mul": (a, b), "div": (a, b), "fma": (a, b, c)}[op]
    got = {"add": fp.add, "mul": fp.mul, "div": fp.div, "fma": fp.fma}[op](*args, rnd=rnd)
    bad = []
    for i in range(n):
        if not all(np.isfinite(x[i]) for x in args):
            continue
        want = _oracle(op, [x[i] for x in args], "f64", rnd)
        if f64_bits(float(got[i])) != f64_bits(want):
            bad.append(([float(x[i]) for x in args], float(got[i]), want))
    assert not bad, bad[:3]
