"""The scores: pass@k against a brute-force count over every k-subset of the samples, the
geometric mean, fast_1 and the per-row summary of a handful of records."""

from __future__ import annotations

import itertools
import math

import pytest

from ptxls.evaluation.metrics import Pricing, geomean, pass_at_k, summarize
from ptxls.evaluation.records import SampleRecord


def brute_force(n: int, c: int, k: int) -> float:
    """Share of the k-subsets of n samples (c correct) that hold a correct one."""
    samples = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return sum(any(samples[i] for i in s) for s in subsets) / len(subsets)


@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_pass_at_k_is_the_chance_that_one_of_k_draws_passes(n):
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(brute_force(n, c, k))


def test_pass_at_k_needs_k_samples():
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 5)


def test_geomean():
    assert geomean([2.0, 0.5]) == pytest.approx(1.0)
    assert geomean([]) is None


def rec(task, sample, passed, speed=None, row="llm", **kw):
    r = SampleRecord(task, row, sample, family="fam", passed=passed,
                     verified="gpu" if passed else "none", **kw)  # fmt: skip
    if speed:
        r.kernel_ms, r.reference_ms = 1.0, speed
    return r


def test_a_summary_of_two_tasks():
    records = [
        rec("a", 0, True, speed=1.5, prompt_tokens=100, completion_tokens=50, rounds=1),
        rec("a", 1, False, category="ptxas-error", prompt_tokens=100, completion_tokens=60),
        rec("b", 0, False, category="wrong-result", prompt_tokens=80, completion_tokens=40),
        rec("b", 1, True, speed=0.5, prompt_tokens=80, completion_tokens=40, rounds=3),
        rec("a", 0, True, speed=1.0, row="nvcc"),
        rec("b", 0, True, speed=1.0, row="nvcc"),
    ]
    s = summarize(records, ks=(1, 2), pricing=Pricing(prompt=1.0, completion=2.0))
    llm = s["llm"]
    assert llm["pass@k"] == {"1": 0.5, "2": 1.0}
    assert llm["speedup_geomean"] == pytest.approx(math.sqrt(1.5 * 0.5))
    # fast_1: the first sample of each task; a's is faster than nvcc, b's failed
    assert llm["fast_1"] == 0.5
    assert llm["categories"] == {"ptxas-error": 1, "wrong-result": 1}
    assert llm["rounds_to_pass"] == 2.0
    assert llm["tokens_per_solved_task"] == (360 + 190) / 2
    assert llm["cost_usd"] == pytest.approx((360 * 1.0 + 190 * 2.0) / 1e6)
    assert s["nvcc"]["pass@k"] == {"1": 1.0}  # one sample each: pass@2 is not estimable
    assert s["nvcc"]["speedup_geomean"] == 1.0 and s["nvcc"]["fast_1"] == 0.0
