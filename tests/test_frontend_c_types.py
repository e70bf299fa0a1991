"""The one C-type table (ptxls.frontend.c_types): the GPU tests' element types and the lowering
loop's parameter widths come from it, so they can no longer disagree."""

from __future__ import annotations

import pytest

from ptxls.frontend.c_types import C_TYPES, c_type_bits, element_type, ptx_type_bits
from ptxls.gputest.dtypes import DTYPES, from_cuda
from ptxls.lowering.ptx_check import ExpectedParam


@pytest.mark.parametrize(
    ("c_type", "bits"),
    [
        ("const float*", 64),
        ("float", 32),
        ("const int", 32),
        ("unsigned char", 8),
        ("long long", 64),
        ("bool", 8),
        # the loop's own table answered these wrongly or not at all
        ("short int", 16),  # was 32: it took the last word, "int"
        ("unsigned", 32),  # was None
        ("__nv_bfloat16", 16),  # was None
        ("int16_t", 16),  # was None
        ("uint16_t", 16),  # was None
        ("ptrdiff_t", 64),  # was None
        ("float4", None),  # a vector type: not judged
        ("Pair<int, float>", None),
    ],
)
def test_parameter_widths(c_type, bits):
    assert c_type_bits(c_type) == bits
    assert ExpectedParam("x", c_type).ptx_bits() == bits


def test_the_gpu_tests_element_types_are_the_table():
    assert list(DTYPES) == list(C_TYPES)
    for name, dt in DTYPES.items():
        c = C_TYPES[name]
        assert dt.itemsize * 8 == c.bits and dt.is_float == c.is_float
        for spelling in c.c_names:
            assert from_cuda(spelling) is dt
            assert from_cuda(f"const volatile {spelling}") is dt
            assert c_type_bits(spelling) == c.bits
    assert from_cuda("Pair<int, float>") is None and element_type("") is None


def test_ptx_scalar_types_have_the_widths_the_isa_gives():
    # PTX ISA, "Fundamental types": the width is the number in the type's name
    widths = {".u64": 64, ".s64": 64, ".b64": 64, ".f64": 64, ".u32": 32, ".s32": 32,
              ".b32": 32, ".f32": 32, ".u16": 16, ".s16": 16, ".b16": 16, ".f16": 16,
              ".bf16": 16, ".u8": 8, ".s8": 8, ".b8": 8}  # fmt: skip
    assert {t: ptx_type_bits(t) for t in widths} == widths
    assert ptx_type_bits(".pred") is None and ptx_type_bits(".v4.f32") is None
