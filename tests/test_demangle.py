"""Kernel names as a person wrote them (issue 21): nvcc's mangled PTX names read back as C++
signatures, checked against c++filt's reading (const written before the type, as CUDA code
writes it) and, where c++filt is installed, against c++filt itself."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from ptxls.frontend.demangle import demangle, readable, short_name

CASES = [  # (symbol, signature, short name): c++filt's answers, const moved before the type
    ("_Z7vec_addPKfS0_Pfi", "vec_add(const float*, const float*, float*, int)", "vec_add"),
    ("_Z5saxpyfPKfPfi", "saxpy(float, const float*, float*, int)", "saxpy"),
    ("_Z6kernelIfEvPT_i", "void kernel<float>(float*, int)", "kernel<float>"),
    ("_Z4testIiLi4EEvPT_", "void test<int, 4>(int*)", "test<int, 4>"),
    ("_ZN3foo3barEPKfi", "foo::bar(const float*, int)", "foo::bar"),
    ("_Z3fooP6__halfPK13__nv_bfloat16i", "foo(__half*, const __nv_bfloat16*, int)", "foo"),
    (
        "_Z4gemmILi128ELb1EEvPKfS1_Pfiii",
        "void gemm<128, true>(const float*, const float*, float*, int, int, int)",
        "gemm<128, true>",
    ),
    ("_Z3barv", "bar()", "bar"),
]


@pytest.mark.parametrize(("symbol", "signature", "short"), CASES)
def test_kernel_signatures_read_back(symbol, signature, short):
    assert demangle(symbol) == signature
    assert short_name(symbol) == short
    assert readable(symbol) == f"{signature} [{symbol}]"


@pytest.mark.parametrize(
    "symbol", ["vec_add", "_Z", "_Z99x", "_ZN3fooC1Ev", "_Z3fooPZ", "_ZL3fooi" + "P" * 5000]
)
def test_what_it_cannot_read_is_shown_as_it_is(symbol):
    assert (
        demangle(symbol) == symbol and short_name(symbol) == symbol and readable(symbol) == symbol
    )


@pytest.mark.skipif(shutil.which("c++filt") is None, reason="no c++filt on this machine")
@pytest.mark.parametrize("symbol", [c[0] for c in CASES])
def test_agrees_with_cxxfilt(symbol):
    theirs = subprocess.run(["c++filt", symbol], capture_output=True, text=True).stdout.strip()
    # c++filt writes `float const*`; CUDA code (and this reader) writes `const float*`
    theirs = re.sub(r"([\w:]+(?:<[^<>]*>)?) const\*", r"const \1*", theirs)
    assert demangle(symbol) == theirs
