"""The GPU-test side of Triton as a source, without a GPU: the spec a Triton signature gives,
the scratch parameters Triton adds, and the builder's own refusal of anything but plain defs."""

from __future__ import annotations

import asyncio

import pytest

from ptxls.frontend.triton import read_triton
from ptxls.frontend.triton_build import build_recipe
from ptxls.gputest.triton_ref import infer_spec, spec_types_from_annotations
from ptxls.lowering.triton_reference import drop_unused_scratch
from ptxls.toolchain.triton_compile import UnsafeSource, check_definitions_only, triton_to_ptx

SCALE = """import triton
import triton.language as tl


# @gputest x: inout bf16[n]; n: size; alpha: f32 = 0.5
# ptxls: signature BLOCK=512 num_warps=8
@triton.jit
def scale(x, y_out, n, alpha, k, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x + offs, mask=offs < n)
    tl.store(x + offs, v * alpha, mask=offs < n)
    tl.atomic_add(y_out + offs, v, mask=offs < n)
"""


def _spec(text, kernel, extra=None):
    found = read_triton(text)
    k = found.kernel(kernel)
    types = spec_types_from_annotations(text, k) | (extra or {})
    build, problems = build_recipe(found, text, kernel, spec_types=types)
    assert problems == [], problems
    return infer_spec(text, k, build)


def test_roles_types_and_launch_from_the_signature_and_gputest_lines():
    spec, problems = _spec(SCALE, "scale", {"y_out": "*fp32", "k": "i32"})
    by = {p.name: p for p in spec.params}
    assert (by["x"].role, by["x"].dtype) == ("inout", "bf16")  # loaded and stored
    assert (by["y_out"].role, by["y_out"].dtype) == ("inout", "f32")  # an atomic reads too
    assert (by["n"].role, by["alpha"].value) == ("size", "0.5")
    assert (spec.launch.grid, spec.launch.block) == ("cdiv(n, 512)", "256")  # 8 warps
    assert "BLOCK" not in by  # a constexpr is no launch argument
    # k is an int scalar nothing gives a value: the spec says how to give it
    assert any("'k' has no value" in p.message for p in problems)


def test_gputest_lines_may_name_constexprs():
    text = SCALE.replace("alpha: f32 = 0.5", "alpha: f32 = 0.5; k: i32 = BLOCK // 2")
    text = text.replace("# ptxls: signature", "# @gputest launch: grid=cdiv(n, BLOCK) block=256\n"
                        "# ptxls: signature")  # fmt: skip
    spec, problems = _spec(text, "scale", {"y_out": "*fp32"})
    assert problems == []
    assert spec.param("k").value == "512 // 2" and spec.launch.grid == "cdiv(n, 512)"


PTX = """.visible .entry k(
\t.param .u64 .ptr .global .align 1 k_param_0,
\t.param .u32 k_param_1,
\t.param .u64 .ptr .global .align 1 k_param_2,
\t.param .u64 .ptr .global .align 1 k_param_3
)
{
\tld.param.b64 %rd1, [k_param_0];
\tret;
}
"""


def test_unused_scratch_parameters_are_dropped_and_used_ones_kept():
    ptx, note = drop_unused_scratch(PTX, "k", 2, {"global_scratch_size": 0})
    assert "k_param_2" not in ptx and "k_param_3" not in ptx and "k_param_1\n)" in ptx
    assert "2 scratch pointer parameter(s)" in note
    assert drop_unused_scratch(PTX, "k", 2, {"global_scratch_size": 64}) == (PTX, "")
    used = PTX.replace("[k_param_0]", "[k_param_2]")
    assert drop_unused_scratch(used, "k", 2, {})[0] == used


@pytest.mark.parametrize(
    "source",
    ["import os\n", "@triton.jit\ndef f(x):\n    pass\n", "def f(x=__import__('os')):\n    pass\n",
     "x = 1\n", "def f(x):\n    pass\nprint('hi')\n"],
)  # fmt: skip
def test_the_builder_refuses_anything_but_plain_defs(source):
    with pytest.raises(UnsafeSource):
        check_definitions_only(source)


def test_a_compile_past_its_time_limit_is_killed_and_said():
    text = SCALE.replace("# ptxls: signature", "# ptxls: signature y_out=*fp32 k=i32")
    found = read_triton(text)
    build, _ = build_recipe(found, text, "scale",
                            spec_types=spec_types_from_annotations(text, found.kernel("scale")))  # fmt: skip
    result = asyncio.run(triton_to_ptx(build.to_json(), timeout=0.05))
    assert not result.ok and "did not finish within 0.05 s" in result.message
