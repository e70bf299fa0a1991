"""Probe-trust, ``ref:`` and spec values: inputs the first hostile suite did not try. Each one
got through before (ran for minutes where the deadline cannot interrupt numpy, allocated
without a size check, escaped as an uncaught exception, or let every element pass) and is
now refused before numpy computes it, with a message."""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import pytest

from ptxls.gputest import annotations, numpy_ref
from ptxls.gputest.exprs import ExprError, evaluate
from ptxls.gputest.spec import spec_from_json
from ptxls.gputest.spec_check import check_spec


def names():
    return {"x": np.arange(1000, dtype=np.float64), "y": np.zeros(1000), "n": 1000}


@pytest.mark.parametrize(
    "program",
    [
        # dtype=object: numpy computes with Python integers, 10**(10**9) for hours, inside one
        # call the deadline cannot interrupt (10**7 alone took 9 s).
        "y = np.power(np.array([10]), 10**9, dtype='O')",
        "y = np.sum(np.array([10]), dtype='O') ** 3",
        "y = x.sum(dtype='O')",
        # A Python integer beyond 64 bits makes numpy use objects too.
        "y = np.power(2**100, 10**9)",
        "y = np.array([1, 2**70])",
        # Subarray dtypes multiply every element past the element limit: 10**9 doubles.
        "y = np.ones(10, dtype='(10000,10000)f8')",
        "y = x.astype('(1000000,)f8')",
        "y = np.full(10, 1.0, '(10000,1000)f8')",
        "y = np.array(1, ('f8', (10000, 10000)))",
        # String data: 4 bytes per character per element (16 GiB at the element limit).
        "y = np.full(2**27, 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa')",
        "y = np.full(2**27, fill_value='abc')",
        "y = np.where(x > 0, 'abc', x)",
        "y = x.astype('U1000')",
        "y = np.zeros(2**27, dtype='U32')",
        "y = np.zeros(3, 'c')",
        "y = x.astype('datetime64[s]')",
        "y = np.zeros(3, [('a', 'f8')])",
        "y = np.ones(3, 'complex256')",
    ],
)
def test_dtype_and_bigint_bombs_are_refused_before_numpy_runs(program):
    t = time.monotonic()
    with pytest.raises(numpy_ref.RefError):
        numpy_ref.run(program, names(), deadline_s=30)
    assert time.monotonic() - t < 2.0


@pytest.mark.parametrize(
    "program",
    [
        "z = np; y = z.flatten",  # was an AttributeError out of run(), not a RefError
        "y = (np if 1 else x).T",
        "z = np; y = z.real",  # np.real is not a listed function; z.NAME reached it
        "z = math; y = z.prod([2, 3])",
    ],
)
def test_a_module_under_another_name_reads_only_listed_names(program):
    with pytest.raises(numpy_ref.RefError, match="not listed|not a function"):
        numpy_ref.run(program, names())


def test_total_memory_held_by_a_reference_is_bounded(monkeypatch):
    if not sys.platform.startswith("linux"):
        pytest.skip("resident memory is read from /proc")
    # Each array is within the element limit; together they are not (at the real budget,
    # 'a0 = ones(2**27); a1 = ...' fills 16 GiB in seconds). A small budget shows the rule.
    monkeypatch.setattr(numpy_ref, "MAX_MEMORY_GROWTH", 200 << 20)
    program = "; ".join(f"a{i} = np.ones(2**24)" for i in range(6))  # 6 x 128 MiB
    with pytest.raises(numpy_ref.RefError, match="MiB of arrays at once"):
        numpy_ref.run(program, names())
    program = "y = [np.ones(2**24), np.ones(2**24), np.ones(2**24), np.ones(2**24)]"
    with pytest.raises(numpy_ref.RefError, match="MiB of arrays at once"):
        numpy_ref.run(program, names())


@pytest.mark.parametrize(
    "program",
    [
        "y = np.pad(x, 3, 'constant')",
        "y = np.pad(x, 3, mode='edge')",
        "y = np.sort(x, kind='stable')",
        "y = x.astype('float32')",
        "y = x.astype(np.int64)",
        "y = np.zeros(3, dtype='c16') + x[:3]",
        "y = bincount(x.astype(int64), minlength=256)",
        "y = np.array([1, 2**62])",
        "y = x.reshape(10, -1).sum(axis=1, dtype='float64')",
    ],
)
def test_ordinary_references_still_run(program):
    out = numpy_ref.run(program, names())
    assert isinstance(out["y"], np.ndarray) and out["y"].dtype.kind in "biufc"


@pytest.mark.parametrize(
    "text", ["(-8)**(1/3)", "1/(2**-1074)", "(1/2**-1074)-(1/2**-1074)", "-(1/2**-1074)"]
)
def test_spec_expressions_are_real_and_finite(text):
    # A complex value later failed with an uncaught TypeError; inf/NaN as a tolerance passed
    # every element ('err > NaN' is never true).
    with pytest.raises(ExprError):
        evaluate(text, {})


def _ann(line: str):
    lines = ["// @gputest c: out f32[n]; n: size", line, ".visible .entry k("]
    return annotations.apply(None, lines, 2, "k")


@pytest.mark.parametrize(
    "line",
    [
        "// @gputest tol: (-8)**(1/3)",
        "// @gputest sizes: (-8)**(1/3)",
        "// @gputest tol: 1/(2**-1074)",
        "// @gputest sizes: " + " ".join(["1<<20"] * 1_000_000),
    ],
)
def test_annotation_values_that_broke_the_spec_are_problems(line):
    t = time.monotonic()
    _spec, problems = _ann(line)
    assert problems, line[:60]
    assert time.monotonic() - t < 3.0  # a million sizes are counted, not parsed


BASE = (
    '{"kernel":"k","params":[{"name":"c","role":"out","dtype":"f32","length":"n"},'
    '{"name":"n","role":"size","dtype":"u32"}],"numpy_ref":"c = n"'
)


@pytest.mark.parametrize(
    "extra",
    [
        '"tol": NaN',  # Python's json reads it; every element passed
        '"tol": Infinity',
        '"tol": -1',
        '"timing_runs": 100000000',
        '"timing_runs": 1e30',
        '"seed": -1',
        '"numpy_ref": 5',
        '"sizes": [' + ",".join(["1"] * 1000) + "]",
    ],
)
def test_spec_json_values_that_weaken_or_stall_a_test_are_refused(extra):
    spec, problems = spec_from_json(BASE + "," + extra + "}")
    assert problems or check_spec(spec), extra


@pytest.mark.parametrize("extra", ['"sizes": ["x"]', '"sizes": 5', '"sizes": [true, 1.5]'])
def test_spec_json_with_malformed_sizes_is_a_problem_not_a_traceback(extra):
    spec, problems = spec_from_json(BASE + "," + extra + "}")
    assert spec is None and "sizes" in problems[0].message


def test_cli_reports_a_malformed_spec_json(tmp_path):
    (tmp_path / "k.ptx").write_text(
        ".version 8.0\n.target sm_80\n.address_size 64\n"
        ".visible .entry k(.param .u64 c, .param .u32 n)\n{\n\tret;\n}\n"
    )
    (tmp_path / "spec.json").write_text(BASE + ',"sizes": ["x"]}')
    r = subprocess.run(
        [sys.executable, "-m", "ptxls.cli", "test", "k.ptx"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in r.stderr + r.stdout, r.stderr[-2000:]
    assert "sizes" in r.stdout + r.stderr


def test_finding_kernels_is_linear_in_their_number():
    # Line numbers were counted from the start of the file for every kernel (and the CUDA
    # source split once per kernel): 20,000 .entry took 11 s of the event loop per code-lens
    # request. Now one pass.
    from ptxls.frontend.kernels import kernels_in

    ptx = "".join(
        f"// @gputest sizes: 1\n.visible .entry k{j}(.param .u64 p)\n{{\nret;\n}}\n"
        for j in range(20000)
    )
    cuda = "".join(
        f"template <int N>\n__global__ void g{j}(float* a, int n)\n{{ }}\n" for j in range(20000)
    )
    for text, lang, line in ((ptx, "ptx", 5 * 19999 + 1), (cuda, "cuda", 3 * 19999 + 1)):
        t = time.monotonic()
        found = kernels_in(text, lang)
        assert time.monotonic() - t < 3.0, lang
        assert len(found) == 20000 and found[-1][1] == line, found[-1]
