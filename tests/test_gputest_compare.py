"""Comparison, tolerances, guards and the numpy reference, on plain numpy arrays (no GPU)."""

from __future__ import annotations

import numpy as np
import pytest

from ptxls.gputest.compare import changed, compare
from ptxls.gputest.dtypes import (
    DTYPES,
    PARALLEL_DRAW_MIN,
    bf16_to_f32,
    f32_to_bf16,
    from_float64,
    poison,
    random_values,
    to_float64,
)
from ptxls.gputest.harness import numpy_reference
from ptxls.gputest.spec import ParamSpec, TestSpec

F32 = DTYPES["f32"]


def _cmp(exp, got, dt=F32, rtol=None):
    return compare("c", dt, exp, got, poison(dt, len(exp)), rtol)


def test_identical_outputs_pass_with_zero_error():
    x = np.linspace(-1, 1, 1000, dtype=np.float32)
    r = _cmp(x, x.copy())
    assert r.passed and r.wrong == 0 and r.max_rel_err == 0.0


def test_f32_rounding_differences_pass_and_are_measured():
    exp = np.linspace(0.5, 2.0, 1000, dtype=np.float32)
    got = np.nextafter(exp, np.float32(3))  # one ulp up everywhere
    r = _cmp(exp, got)
    assert r.passed and 0 < r.max_rel_err < 2.5e-7


def test_wrong_elements_are_counted_with_first_indices_expected_and_got():
    exp = np.arange(1, 1001, dtype=np.float32)
    got = exp.copy()
    got[[3, 7, 500]] = [0.5, 8.5, -1]
    r = _cmp(exp, got)
    assert not r.passed and r.wrong == 3 and r.unwritten == 0
    assert [(m.index, m.expected, m.got) for m in r.first_wrong] == [
        (3, 4.0, 0.5),
        (7, 8.0, 8.5),
        (500, 501.0, -1.0),
    ]
    assert r.describe().startswith(
        "c: 3 of 1000 wrong; first wrong: c[3] expected 4 got 0.5, c[7] expected 8 got 8.5"
    )


def test_poison_left_in_place_is_reported_as_never_written():
    exp = np.ones(10, dtype=np.float32)
    got = exp.copy()
    got[4:] = poison(F32, 6)
    r = _cmp(exp, got)
    assert (r.wrong, r.unwritten) == (6, 6)
    assert (
        "c: 6 of 10 wrong (6 never written); first wrong: c[4] expected 1 got unwritten"
        in r.describe()
    )


def test_nan_where_the_reference_has_nan_passes_elsewhere_fails():
    exp = np.array([1.0, np.nan, 3.0], dtype=np.float32)
    got = np.array([1.0, np.float32("nan"), np.inf], dtype=np.float32)
    r = _cmp(exp, got)
    assert r.wrong == 1 and r.first_wrong[0].index == 2


def test_near_zero_reference_elements_are_judged_against_the_output_scale():
    exp = np.array([1000.0, 1e-9, -1000.0], dtype=np.float32)
    got = np.array([1000.0, 2e-9, -1000.0], dtype=np.float32)  # 100% off, but 1e-12 of the scale
    assert _cmp(exp, got).passed
    got[1] = 0.5  # 5e-4 of the scale: wrong
    assert not _cmp(exp, got).passed


def test_all_zero_and_constant_outputs_trip_the_guard_even_under_a_loose_tolerance():
    exp = np.linspace(1e-6, 2e-6, 100, dtype=np.float32)
    r = _cmp(exp, np.zeros(100, np.float32), rtol=10.0)
    assert r.guard == "all zeros" and not r.passed
    assert "c is all zeros but the reference is not" in r.describe()
    r = _cmp(exp, np.full(100, 1.5e-6, np.float32), rtol=10.0)
    assert r.guard.startswith("constant (") and not r.passed
    const = np.full(100, 2.0, np.float32)
    assert _cmp(const, const.copy()).passed  # a constant reference may have a constant output


@pytest.mark.parametrize("name", ["i32", "u32", "i8", "u8", "i64", "i16"])
def test_integers_must_match_exactly(name):
    dt = DTYPES[name]
    exp = np.arange(50).astype(dt.storage)
    got = exp.copy()
    assert compare("c", dt, exp, got, poison(dt, 50)).passed
    got[10] += 1
    r = compare("c", dt, exp, got, poison(dt, 50))
    assert r.wrong == 1 and r.first_wrong[0].index == 10 and r.first_wrong[0].got == 11


@pytest.mark.parametrize(
    "name, ok_rel, bad_rel", [("f16", 1e-3, 1e-2), ("bf16", 8e-3, 5e-2), ("f64", 1e-13, 1e-9)]
)
def test_dtype_aware_tolerances(name, ok_rel, bad_rel):
    dt = DTYPES[name]
    base = np.linspace(1.0, 2.0, 64)
    exp = from_float64(dt, base)
    assert compare("c", dt, exp, from_float64(dt, base * (1 + ok_rel)), poison(dt, 64)).passed
    assert not compare("c", dt, exp, from_float64(dt, base * (1 + bad_rel)), poison(dt, 64)).passed


def test_bf16_round_trip_and_rounding_to_nearest_even():
    vals = np.array([1.0, -2.5, 3.140625, 1e-3], dtype=np.float32)
    assert np.array_equal(bf16_to_f32(f32_to_bf16(vals))[:3], vals[:3])
    # 1 + 2^-8 is exactly halfway between two bf16 values: rounds to the even one (1.0)
    assert bf16_to_f32(f32_to_bf16(np.array([1 + 2**-8], np.float32)))[0] == 1.0
    assert np.isnan(bf16_to_f32(f32_to_bf16(np.array([np.nan], np.float32))))[0]


@pytest.mark.parametrize("name", ["f32", "f64", "f16", "bf16", "i32", "u32", "i8", "u8"])
def test_fresh_inputs_are_random_nonzero_and_seeded(name):
    dt = DTYPES[name]
    a = random_values(dt, 1000, np.random.default_rng(5))
    b = random_values(dt, 1000, np.random.default_rng(5))
    c = random_values(dt, 1000, np.random.default_rng(6))
    assert a.dtype == np.dtype(dt.storage) and np.array_equal(a, b) and not np.array_equal(a, c)
    assert len(np.unique(a)) > 10


@pytest.mark.parametrize("name", ["f32", "f64", "f16"])
def test_large_inputs_drawn_in_chunks_are_seeded_uniform_and_differ_between_chunks(name):
    dt = DTYPES[name]
    count = PARALLEL_DRAW_MIN * 2 + 3  # two whole chunks and a partial one
    a = random_values(dt, count, np.random.default_rng(5))
    b = random_values(dt, count, np.random.default_rng(5))
    c = random_values(dt, count, np.random.default_rng(6))
    assert a.dtype == np.dtype(dt.storage) and len(a) == count
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    v = to_float64(dt, a)
    assert v.min() >= -1 and v.max() <= 1 and abs(v.mean()) < 0.01 and v.std() > 0.5
    # each chunk has a generator of its own: no chunk repeats another's values
    first, second = v[:PARALLEL_DRAW_MIN], v[PARALLEL_DRAW_MIN : 2 * PARALLEL_DRAW_MIN]
    assert not np.array_equal(first, second)
    # a second input of the same case gets other values
    rng = np.random.default_rng(5)
    x, y = random_values(dt, count, rng), random_values(dt, count, rng)
    assert np.array_equal(x, a) and not np.array_equal(x, y)


def test_poison_is_nan_for_floats_and_a_byte_pattern_for_ints():
    assert np.isnan(poison(F32, 3)).all()
    assert np.isnan(bf16_to_f32(poison(DTYPES["bf16"], 2))).all()
    assert (poison(DTYPES["i32"], 2).view(np.uint8) == 0xA5).all()


def test_inputs_changed_names_how_many_and_where():
    a = np.arange(10, dtype=np.float32)
    assert changed("a", a, a.copy()) == ""
    b = a.copy()
    b[[2, 9]] = 0
    assert changed("a", a, b) == "input a was modified: 2 of 10 elements changed (first at 2, 9)"


def test_numpy_reference_computes_in_float64_and_rounds_to_the_output_type():
    spec = TestSpec("k", [ParamSpec("x", "in", "f32"), ParamSpec("y", "inout", "f16"),
                          ParamSpec("s", "scalar", "f32", value="0.5"), ParamSpec("n", "size", "i32")])  # fmt: skip
    x = np.array([1, 2, 3], np.float32)
    y = np.array([1, 1, 1], np.float16)
    out = numpy_reference(
        spec, {"x": x, "y": y}, {"x": 3, "y": 3}, {"n": 3, "s": 0.5}, "y = sqrt(x) * s + y"
    )
    assert out["y"].dtype == np.float16
    assert np.allclose(out["y"], (np.sqrt([1, 2, 3]) * 0.5 + 1).astype(np.float16))
    with pytest.raises(ValueError, match="does not assign output 'y'"):
        numpy_reference(spec, {"x": x, "y": y}, {"x": 3, "y": 3}, {"n": 3, "s": 0.5}, "z = x")
