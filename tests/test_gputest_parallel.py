"""The chunked, threaded paths of gputest/parallel.py give exactly the one-call results: the
numpy reference's operators and functions, the comparison's counts, first wrong elements,
maximum error and degenerate-output guard. Forced on (4 threads, small chunks) so the CPU
machine runs them too."""

from __future__ import annotations

import numpy as np
import pytest

from ptxls.gputest import compare as C
from ptxls.gputest import numpy_ref, parallel
from ptxls.gputest.dtypes import DTYPES, poison


@pytest.fixture
def chunked(monkeypatch):
    def use(on: bool) -> None:
        monkeypatch.setattr(parallel, "threads", lambda: 4 if on else 1)
        monkeypatch.setattr(parallel, "PARALLEL_MIN", 1 << 12)
        monkeypatch.setattr(parallel, "CHUNK", 1000)  # not a divisor of the sizes below

    return use


def _both(chunked, fn):
    chunked(True)
    on = fn()
    chunked(False)
    return on, fn()


REFS = [
    "v = x + tile(b, n // cols + 1)[:n]; y = 0.5 * v * (1 + tanh(0.79788 * (v + 0.044715 * v ** 3)))",
    "y = where(x > 0, sqrt(abs(x)) / (b2 + 1), -x) ; y = -y",
    "y = maximum(x, 0.25) * 3 - (x >= b2) ; y = exp(y) ; y = y ** 2",
    "y = cumsum(x) / 7",  # not element-wise: one call
]


@pytest.mark.parametrize("ref", REFS)
def test_the_reference_is_the_same_chunked(chunked, ref):
    rng = np.random.default_rng(3)
    n, cols = 10_007, 97
    names = {"x": rng.standard_normal(n), "b": rng.standard_normal(cols),
             "b2": rng.random(n), "n": n, "cols": cols}  # fmt: skip
    on, off = _both(chunked, lambda: numpy_ref.run(ref, dict(names))["y"])
    assert on.dtype == off.dtype and on.shape == off.shape
    assert np.array_equal(on, off, equal_nan=True)


@pytest.mark.parametrize("dtype", ["f16", "f32", "i32", "u8"])
@pytest.mark.parametrize("damage", ["some", "none", "zeros", "constant", "unwritten"])
def test_the_comparison_is_the_same_chunked(chunked, dtype, damage):
    dt = DTYPES[dtype]
    rng = np.random.default_rng(5)
    n = 9_999
    if dt.is_float:
        exp = rng.standard_normal(n).astype(dt.storage)
    else:
        exp = rng.integers(0, 100, n).astype(dt.storage)
    got = exp.copy()
    if damage == "some":
        got[::13] = exp[::13] + (1 if not dt.is_float else np.asarray(0.5, dt.storage))
        got[4003] = poison(dt, 1)[0]
    elif damage == "zeros":
        got[:] = 0
    elif damage == "constant":
        got[:] = exp[1]
    elif damage == "unwritten":
        got[7000:] = poison(dt, 1)[0]
    on, off = _both(chunked, lambda: C.compare("y", dt, exp, got, poison(dt, 1), 0.01))
    assert repr(on) == repr(off)
    if damage != "none":
        assert not on.passed


def test_large_integer_inputs_depend_on_the_seed_alone(monkeypatch):
    from ptxls.gputest.harness import _inputs
    from ptxls.gputest.spec import ParamSpec

    monkeypatch.setattr(parallel, "PARALLEL_MIN", 1 << 12)
    monkeypatch.setattr(parallel, "CHUNK", 1000)
    p = ParamSpec("x", "in", "u8", range=[0, 255])
    a = _inputs(p, 10_000, np.random.default_rng(9))
    monkeypatch.setattr(parallel, "threads", lambda: 1)
    b = _inputs(p, 10_000, np.random.default_rng(9))
    c = _inputs(p, 10_000, np.random.default_rng(10))
    assert a.dtype == np.uint8 and np.array_equal(a, b) and not np.array_equal(a, c)
    assert a.min() == 0 and a.max() == 255
