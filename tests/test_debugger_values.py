"""The debugger's own parts without a process: the expression parser (no eval) and how register
bits are shown by type."""

from __future__ import annotations

import numpy as np
import pytest

from ptxls.debugger import expressions as X
from ptxls.debugger.views import show


def _eval(text, names=None, elems=None):
    names = names or {}
    return X.evaluate(X.parse(text), names.__getitem__, lambda n, i: elems[n][i])


def test_conditions_over_a_group_of_threads():
    r5 = np.array([4095, 4096, 4097, 4098], np.int32)
    tid = np.array([1, 2, 3, 3])
    got = _eval("%r5 == 4097 || %tid.x == 3 && %r5 > 4097", {"%r5": r5, "%tid.x": tid})
    assert got.tolist() == [False, False, True, True]
    assert _eval("(1 + 2) * 3 - 8 / 2", {}) == 5
    assert _eval("0x10 >> 2 | 1", {}) == 5
    assert _eval("-%f1 < 0.5", {"%f1": np.float32(-0.25)}) == np.True_
    assert _eval("c[%r1 + 1]", {"%r1": 2}, {"c": np.array([1.0, 2.0, 3.0, 4.0])}) == 4.0
    assert _eval("not %p1", {"%p1": np.array([True, False])}).tolist() == [False, True]


@pytest.mark.parametrize(
    "text", ["", "%r5 ==", "__import__('os')", "a.b()", "%r5 = 3", "c[1", "1 2", "'x'"]
)
def test_what_is_not_an_expression_is_refused(text):
    with pytest.raises(X.ExpressionError):
        X.parse(text)


def test_names_are_listed_for_checking():
    assert X.names_in(X.parse("c[%r5] > n && %tid.x == 0")) == {"c", "%r5", "n", "%tid.x"}


def test_register_values_by_type():
    assert show(np.uint32(0xFFFFFFFF), ".b32") == "0xffffffff (-1)"
    assert show(np.uint32(7), ".u32") == "7"
    assert show(np.uint32(0xFFFFFFFE), ".s32") == "-2"
    assert show(np.True_, ".pred") == "true"
    assert show(np.float32(1.5).view(np.uint32), ".f32") == "1.5  0x3fc00000"
    halves = np.array([0.5, -2.0], np.float16).view(np.uint32)[0]
    assert show(halves, ".f16x2").startswith("(0.5, -2.0)")
    assert show(np.float64(0.1).view(np.uint64), ".f64").startswith("0.1 ")
