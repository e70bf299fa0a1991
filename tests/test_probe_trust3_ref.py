"""Probe-trust 3, the ``ref:`` evaluator: refused by the shape a call would create, before
numpy allocates it, in every calling form.

Before (issue 25): the size checks read ``args[0]``/``args[1]`` by position, so ``outer(a=x,
b=x)``, ``arange(start=0, stop=N)``, ``stack(arrays=...)``, ``zeros_like(x, shape=...)``,
``tril(ones(20000))``, ``inner`` of two columns and fancy indexing with a tuple of index arrays
were refused only after a 3.0-3.5 GB peak, ``dot(a=x, b=x)`` at 6000³ ran, and an int64 2048³
product ran 70 s inside one call. Now every listed function and method has a rule
(``gputest/ref_limits.py``) that binds the call like numpy and bounds its result and its work.
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from ref_bomb_cases import CASES

from ptxls.gputest import numpy_ref, ref_language, ref_limits

P = inspect.Parameter
M = np.arange(12.0).reshape(3, 4)
V = np.arange(1.0, 6.0)
I = np.array([0, 2, 1, 2])  # noqa: E741
B = M > 4

# One small call per listed function, written positionally; the test derives the keyword and
# mixed forms from the rule's signature and checks each against numpy itself.
SAMPLES: dict[str, list[tuple]] = {
    "arange": [(7,), (1, 9, 2), (0.0, 1.0, 0.25)],
    "linspace": [(0, 1, 5), (V, V + 1, 3)],
    "zeros": [((3, 4),)],
    "ones": [(5,)],
    "full": [((2, 3), 1.5)],
    "zeros_like": [(M,), (M, None, "K", True, (2, 5))],
    "ones_like": [(V,)],
    "full_like": [(M, 2.0), (M, 2.0, None, "K", True, (7,))],
    "bincount": [(I,), (I, None, 9)],
    "repeat": [(V, 3), (V, np.array([1, 0, 2, 1, 3]))],
    "tile": [(V, (2, 3))],
    "pad": [(M, 2), (M, ((1, 0), (0, 3)))],
    "tril": [(M,), (V,), (M, 1)],
    "triu": [(V, -1)],
    "diff": [(V,), (M, 2, 0), (V, 1, -1, 0.0, V)],
    "concatenate": [((V, V),)],
    "stack": [((V, V, V),)],
    "hstack": [((V, V),)],
    "vstack": [((V, V),)],
    "dot": [(M, M.T), (M, np.ones(4)), (2.0, V), (np.ones((2, 3, 4)), np.ones((5, 4, 2)))],
    "matmul": [(M, M.T), (np.ones((2, 3, 4)), np.ones((4, 5))), (V, V)],
    "inner": [(M, M), (V, V)],
    "vdot": [(M, M)],
    "outer": [(V, M)],
    "where": [(B, M, 0.0), (B,)],
    "clip": [(M, 1, 5)],
    "broadcast_to": [(V, (4, 5))],
    "asarray": [([V, V],)],
    "array": [([V, V, V],)],
    "roll": [(V, 2), (M, (1, 2), (0, 1))],
    "sort": [(M,)],
    "argsort": [(V,)],
    "median": [(M,)],
    "divmod": [(M, 3.0)],
    "allclose": [(M, M)],
    "isclose": [(M, V[:4])],
    "reshape": [(M, (4, 3))],
    "transpose": [(M,)],
    "ravel": [(M,)],
    "flip": [(M,)],
    "expand_dims": [(V, 0)],
    "squeeze": [(M[None],)],
    "swapaxes": [(M, 0, 1)],
    "moveaxis": [(M, 0, 1)],
    "copy": [(M,)],
    "nan_to_num": [(M,)],
    "round": [(M, 1)],
    "around": [(M,)],
    "fix": [(M,)],
    "count_nonzero": [(M,)],
    "cumsum": [(M, 1)],
    "cumprod": [(V,)],
    "argmax": [(M, 0)],
    "argmin": [(M,)],
}
REDUCTIONS = ["sum", "prod", "max", "min", "amax", "amin", "mean", "var", "std", "all", "any"]
CONVERSIONS = "float16 float32 float64 int8 int16 int32 int64 uint8 uint16 uint32 uint64 bool_"


def samples(name: str) -> list[tuple]:
    if name in SAMPLES:
        return SAMPLES[name]
    if name in REDUCTIONS:
        return [(M,), (M, 1)]
    if name in CONVERSIONS.split():
        return [(M,)]
    rule = ref_limits.FUNCTION_RULES[name]
    m = M.astype(np.int64) if "bitwise" in name or "shift" in name or name == "invert" else M
    return [(m,)] if rule is ref_limits.U1 else [(m, m[0])]


def forms(rule: ref_limits.Rule, args: tuple) -> list[tuple[str, tuple, dict]]:
    """The positional call, the all-keyword call where the parameters allow it, and mixes."""
    params = [p for p in rule.signature().parameters.values() if p.kind is not P.VAR_KEYWORD]
    out = [("positional", args, {})]
    for split in range(len(args) - 1, -1, -1):
        named = params[split : len(args)]
        if any(p.kind is not P.POSITIONAL_OR_KEYWORD for p in named):
            break
        kw = {p.name: a for p, a in zip(named, args[split:], strict=True)}
        out.append(("keyword" if split == 0 else f"mixed@{split}", args[:split], kw))
    return out


def sizes(result) -> int:
    if isinstance(result, tuple):
        return max(sizes(r) for r in result)
    return int(np.size(result))


def test_every_listed_function_and_method_has_a_rule():
    assert set(ref_language.FUNCTIONS) <= set(ref_limits.FUNCTION_RULES)
    assert set(ref_language.METHODS) <= set(ref_limits.METHOD_RULES)


@pytest.mark.parametrize("name", sorted(ref_limits.FUNCTION_RULES))
def test_each_rule_binds_like_numpy(name):
    """The rule's parameters are numpy's own, in numpy's order (where numpy says them), so a
    keyword or mixed call is bound to the same parameters numpy binds it to."""
    if np.lib.NumpyVersion(np.__version__) < "2.0.0":
        pytest.skip("the rules state numpy 2's parameters (numpy 1 names some differently)")
    try:
        theirs = inspect.signature(getattr(np, name))
    except (TypeError, ValueError):
        pytest.skip(f"numpy {np.__version__} gives no signature for {name}")
    ours = ref_limits.FUNCTION_RULES[name].signature()
    positional = (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)
    ours_pos = [(p.name, p.kind) for p in ours.parameters.values() if p.kind in positional]
    theirs_pos = [(p.name, p.kind) for p in theirs.parameters.values() if p.kind in positional]
    if name == "arange":  # numpy's parser also takes start= (issue 25's arange(start=0, stop=N))
        theirs_pos[0] = ("start", P.POSITIONAL_OR_KEYWORD)
    assert ours_pos == theirs_pos
    assert {p for p in ours.parameters} <= {p for p in theirs.parameters} | {"start"}


@pytest.mark.parametrize("name", sorted(ref_limits.FUNCTION_RULES))
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_each_rule_bounds_what_numpy_creates_in_every_form(name):
    rule = ref_limits.FUNCTION_RULES[name]
    fn = getattr(np, name)
    for args in samples(name):
        expected = fn(*args)
        for form, a, kw in forms(rule, args):
            cost, bound = ref_limits.call_cost(name, list(a), kw)
            got = fn(*bound.call_args, **bound.call_kwargs)
            np.testing.assert_array_equal(got, expected, err_msg=f"{name} {form}")
            assert cost.elements >= sizes(got), (name, form, cost, sizes(got))
            assert cost.work >= 0


@pytest.mark.parametrize("name", sorted(ref_limits.METHOD_RULES))
def test_each_method_rule_bounds_what_numpy_creates(name):
    args = {"reshape": (4, 3), "astype": ("f4",), "swapaxes": (0, 1), "repeat": (2,),
            "dot": (M.T,), "item": (0,), "clip": (1, 5), "round": (1,)}.get(name, ())  # fmt: skip
    a = M.copy()
    cost, bound = ref_limits.call_cost(name, [a, *args], {}, method=True)
    got = getattr(a, name)(*bound.call_args[1:], **bound.call_kwargs)
    assert cost.elements >= (M.size if name == "sort" else sizes(got)), (name, cost)


def test_refused_keywords_and_unbindable_calls_say_why():
    with pytest.raises(numpy_ref.RefError, match="'out' is not allowed"):
        numpy_ref.run("y = exp(x, out=x)", {"x": V.copy()})
    with pytest.raises(numpy_ref.RefError, match="inner"):
        numpy_ref.run("y = inner(a=x, b=x)", {"x": V.copy()})  # positional-only in numpy


_RUNNER = textwrap.dedent(
    """
    import json, resource, sys, time
    import numpy as np
    from ptxls.gputest import numpy_ref
    x = np.arange(1000, dtype=np.float64)
    for program in json.loads(sys.stdin.read()):
        t = time.monotonic()
        try:
            numpy_ref.run(program, {"x": x.copy(), "n": 1000}, deadline_s=60)
            outcome = "ran"
        except numpy_ref.RefError as e:
            outcome = "refused: " + str(e)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        print(json.dumps([program, outcome, time.monotonic() - t, peak]), flush=True)
    """
)


def test_every_hostile_case_is_refused_before_numpy_allocates():
    if not sys.platform.startswith("linux"):
        pytest.skip("peak memory is read from getrusage (Linux kilobytes)")
    programs = [p for _, _, p in CASES]
    proc = subprocess.run(
        [sys.executable, "-c", _RUNNER], input=json.dumps(programs), capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(rows) == len(programs), proc.stderr[-3000:]
    first_peak = rows[0][3]
    for program, outcome, seconds, peak in rows:
        assert outcome.startswith("refused"), (program, outcome)
        assert seconds < 2.0, (program, seconds)
        # each refusal costs no allocation: the process stays near where it started
        assert peak < first_peak + 64, (program, peak, first_peak)
