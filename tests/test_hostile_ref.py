"""Hostile input: no code from a file runs. A ``ref:`` line or spec expression is text from a
cloned repository; it used to be eval'd with an emptied __builtins__, which the usual
``__subclasses__`` walk escapes. Now: a restricted, bounded evaluator (gputest/numpy_ref.py,
gputest/exprs.py), checked before anything starts; Python only for a trusted workspace."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from raw_lsp import ROOT, RawServer

from ptxls.gputest import numpy_ref, ref_language
from ptxls.gputest.exprs import ExprError, evaluate, evaluate_int
from ptxls.gputest.spec import TestSpec
from ptxls.gputest.spec_check import check_spec

ESCAPE = "().__class__.__bases__[0].__subclasses__()"

PTX_WITH = """\
.version 8.0
.target sm_80
.address_size 64

// @gputest a: in f32[n]; c: out f32[n]; n: size
// @gputest {line}
.visible .entry k(.param .u64 a, .param .u64 c, .param .u32 n)
{{
    ret;
}}
"""

HOSTILE_REFS = [
    f"c = {ESCAPE}",
    f"c = [x for x in {ESCAPE} if x.__name__ == 'Popen'][0](['touch', 'PWNED'])",
    "c = __import__('os').system('touch PWNED')",
    "c = (lambda: 0)()",
    "c = open('PWNED', 'w')",
    "c = np.load('x.npy', allow_pickle=True)",
    "c = np.sqrt.__call__",
    "c = getattr(a, '__class__')",
    "import os",
    "c = a; del c",
    "c = f'{a}'",
    "c = {1: 2}",
    "c = np.lib",
    "c = a.ctypes",
    "c = a.tofile('PWNED')",
]

HEAVY_REFS = [
    "c = 9**9**9",
    "c = 2**10**6 + a",
    "c = 1 << 10**9",
    "c = 'x' * 10**10",
    "c = [0] * 10**10",
    "c = np.zeros(10**13)",
    "c = np.ones(10**6).reshape(-1, 1) * np.ones(10**6)",
    "c = np.arange(10**13)",
    "c = np.ones((30000, 30000)) @ np.ones((30000, 30000))",
    "c = np.repeat(a, 10**12)",
    "c = np.bincount(np.array([10**12]))",
    "c = a.astype('O')",
    "c = np.array([np.sqrt, np.exp])",
    "c = np.pad(a, 10**11)",
]


def env(n: int = 8) -> dict:
    rng = np.random.default_rng(1)
    return {"n": n, "a": rng.standard_normal(n), "b": rng.standard_normal(n), "c": np.zeros(n)}


@pytest.mark.parametrize("program", HOSTILE_REFS)
def test_code_constructs_are_refused_before_running(program, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(numpy_ref.RefError) as err:
        numpy_ref.run(program, env())
    assert (
        err.value.refused and "not allowed" in str(err.value) or "not a function" in str(err.value)
    ), err.value
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("program", HEAVY_REFS)
def test_huge_results_are_refused_fast(program):
    t0 = time.monotonic()
    with pytest.raises(numpy_ref.RefError):
        numpy_ref.run(program, env())
    assert time.monotonic() - t0 < 2.0


def test_the_array_limit_follows_the_memory_budget():
    # a quarter of the budget in float64, as a power of two, between 2^27 and 2^29 elements:
    # 128 GiB hosts (the H200 machine, budget 16 GiB) reference 2^28 floats and 2^29 bytes
    assert ref_language.element_limit(16 << 30) == 1 << 29
    assert ref_language.element_limit(11 << 30) == 1 << 28
    assert ref_language.element_limit(8 << 30) == 1 << 28
    assert ref_language.element_limit(4 << 30) == 1 << 27
    assert ref_language.element_limit(2 << 30) == 1 << 27
    assert ref_language.element_limit(1 << 40) == 1 << 29  # never past 4 GiB per array
    assert ref_language.element_limit(ref_language.MAX_MEMORY_GROWTH) == ref_language.MAX_ELEMENTS


def test_one_element_past_the_limit_is_refused_before_it_is_allocated(monkeypatch):
    monkeypatch.setattr(numpy_ref, "MAX_ELEMENTS", 1 << 10)
    assert numpy_ref.run("c = np.zeros(1024)", {})["c"].size == 1024
    t0 = time.monotonic()
    with pytest.raises(numpy_ref.RefError, match=r"an array of 1025 elements \(at most 1024\)"):
        numpy_ref.run("c = np.zeros(1025)", {})
    with pytest.raises(numpy_ref.RefError, match="at most 1024"):
        numpy_ref.run("c = np.ones(33).reshape(-1, 1) * np.ones(32)", {})
    assert time.monotonic() - t0 < 1.0


def test_the_message_names_the_construct():
    with pytest.raises(numpy_ref.RefError, match=r"attribute access \(\.__"):
        numpy_ref.check(f"c = {ESCAPE}")
    with pytest.raises(numpy_ref.RefError, match="a lambda"):
        numpy_ref.check("c = (lambda: 0)()")
    with pytest.raises(numpy_ref.RefError, match="comprehension"):
        numpy_ref.check("c = [v for v in a]")
    with pytest.raises(numpy_ref.RefError, match="'open' is not a function"):
        numpy_ref.check("c = open('x')")


def test_the_library_references_run_and_match_numpy():
    """Every reference the kernel library ships is inside the ref language and computes what
    numpy computes."""
    specs = sorted((ROOT / "fewshot" / "kernels").glob("*/spec.json"))
    assert specs
    ran = 0
    for path in specs:
        spec = json.loads(path.read_text())
        program = spec.get("numpy_ref")
        if not program:
            continue
        numpy_ref.check(program)
        ran += 1
    assert ran >= 3
    e = env(12)
    x = np.random.default_rng(2).standard_normal(12 * 5)
    got = numpy_ref.run(
        "m = x.reshape(n, cols); e = exp(m - m.max(axis=1, keepdims=True)); "
        "y = (e / e.sum(axis=1, keepdims=True)).reshape(-1)",
        {**e, "x": x, "cols": 5},
    )["y"]
    m = x.reshape(12, 5)
    want = (np.exp(m - m.max(1, keepdims=True)) / np.exp(m - m.max(1, keepdims=True)).sum(
        1, keepdims=True)).reshape(-1)  # fmt: skip
    np.testing.assert_allclose(got, want)
    got = numpy_ref.run("y = a.copy(); y[1:] += a[:-1]; y *= 2", e)["y"]
    want = e["a"].copy()
    want[1:] += e["a"][:-1]
    np.testing.assert_allclose(got, want * 2)


def test_a_trusted_workspace_may_run_python():
    out = numpy_ref.run("c = np.array([v * 2 for v in a])", env(), trusted=True)
    np.testing.assert_allclose(out["c"], env()["a"] * 2)
    with pytest.raises(numpy_ref.RefError):
        numpy_ref.run("c = np.array([v * 2 for v in a])", env())


@pytest.mark.parametrize("text", ["9**9**9", "1<<10**8", "10**10**10", "2**(2**200)"])
def test_spec_expressions_are_bounded(text):
    t0 = time.monotonic()
    with pytest.raises(ExprError):
        evaluate(text, {"n": 1})
    assert time.monotonic() - t0 < 0.5
    assert evaluate_int("1<<24", {}) == 16777216


def test_spec_check_refuses_absurd_buffers():
    spec = TestSpec(kernel="k", params=[], sizes=[1])
    from ptxls.gputest.spec import ParamSpec

    spec.params = [ParamSpec("a", "in", "f32", "n * 10**12"), ParamSpec("c", "out", "f32")]
    problems = check_spec(spec)
    assert problems and "elements" in problems[0].message


def _ptxls(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ptxls.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_cli_refuses_a_planted_escape_and_creates_nothing(tmp_path):
    planted = (
        f"ref: c = {ESCAPE}[0].__init__.__globals__['sys'].modules['os'].system('touch PWNED')"
    )
    (tmp_path / "planted.ptx").write_text(PTX_WITH.format(line=planted))
    res = _ptxls("test", "planted.ptx", cwd=tmp_path)
    assert res.returncode == 1, res
    assert "not allowed" in res.stdout and "--trust" in res.stdout, res.stdout
    assert not (tmp_path / "PWNED").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["planted.ptx"]


def test_cli_sizes_bomb_answers_at_once(tmp_path):
    (tmp_path / "bomb.ptx").write_text(PTX_WITH.format(line="sizes: 9**9**9"))
    t0 = time.monotonic()
    res = _ptxls("test", "bomb.ptx", cwd=tmp_path)
    assert time.monotonic() - t0 < 30
    assert res.returncode == 1 and "too large" in res.stdout, res.stdout


def test_server_stays_responsive_and_refuses(tmp_path):
    """Through the real server: the GPU-test command on a planted file says why nothing ran,
    and a hover on the 9**9**9 file answers at once."""
    planted = tmp_path / "planted.ptx"
    bomb = tmp_path / "bomb.ptx"
    with RawServer(cwd=str(tmp_path)) as server:
        server.initialize(str(tmp_path))
        server.open(planted.as_uri(), PTX_WITH.format(line=f"ref: c = {ESCAPE}"))
        server.open(bomb.as_uri(), PTX_WITH.format(line="sizes: 9**9**9"))
        rid = server.request("workspace/executeCommand", {
            "command": "ptxls.runGpuTest", "arguments": [planted.as_uri(), "k"]})  # fmt: skip
        reply = server.wait_reply(rid, timeout=60)["result"]
        assert reply["status"] == "spec-error", reply
        assert "__" in reply["summary"] or "not allowed" in json.dumps(reply), reply
        rid = server.request("workspace/executeCommand", {
            "command": "ptxls.runGpuTest", "arguments": [bomb.as_uri(), "k"]})  # fmt: skip
        t0 = time.monotonic()
        hover = server.hover(bomb.as_uri(), 7, 3, timeout=5)
        assert time.monotonic() - t0 < 1.0 and "error" not in hover
        reply = server.wait_reply(rid, timeout=60)["result"]
        assert reply["status"] == "spec-error", reply
    assert not (tmp_path / "PWNED").exists()
