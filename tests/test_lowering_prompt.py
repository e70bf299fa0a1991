"""What the model is told: a measured .version per target, the ASCII rule, the exact .param
lines, the test's launch and numerics, few-shot examples that are never the answer itself; and
feedback with one item per cause."""

from __future__ import annotations

import pytest

from ptxls.lowering import prompt, target_isa
from ptxls.lowering.job import LowerJob
from ptxls.lowering.prompt import fitting_examples
from ptxls.lowering.ptx_check import compile_check, fold_problems
from ptxls.lowering.source_spec import facts_for_test, source_spec
from ptxls.lowering.sources import cuda_kernels

from scripted_llm import GOOD_VEC_ADD, ROOT

VEC_ADD_CU = """__global__ void vec_add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""


def _isa(v: str) -> tuple[int, int]:
    major, minor = v.split(".")
    return int(major), int(minor)


@pytest.fixture(autouse=True)
def _fresh_cache():
    target_isa._cache.clear()
    yield
    target_isa._cache.clear()


async def test_sm_100_never_gets_version_8_0_and_ptxas_accepts_what_is_asked():
    for arch in ("sm_90", "sm_100", "sm_120"):
        choice = await target_isa.choose_target(arch)
        assert not choice.problem, choice
        # ptxas accepts the header the prompt asks for
        module = GOOD_VEC_ADD.replace(".version 8.0", f".version {choice.isa}").replace(
            ".target sm_90", f".target {arch}"
        )
        assert (await compile_check(module, arch=arch)).ok, (arch, choice)
    assert _isa((await target_isa.choose_target("sm_100")).isa) >= (8, 6)


async def test_the_gpu_drivers_limit_caps_targets_that_run_on_it(monkeypatch):
    async def h200_with_cuda_12_4_driver():
        return (8, 4), "sm_90"

    monkeypatch.setattr(target_isa, "_driver_limit", h200_with_cuda_12_4_driver)
    here = await target_isa.choose_target("sm_90")
    assert here.isa == "8.4" and "driver JIT" in here.why
    # a newer GPU's target cannot run here anyway: the driver's limit does not apply
    newer = await target_isa.choose_target("sm_100")
    assert _isa(newer.isa) >= (8, 6) and not newer.problem


async def test_a_target_ptxas_rejects_lists_the_ones_it_accepts():
    choice = await target_isa.choose_target("sm_999")
    assert choice.problem and "sm_90" in choice.problem and "sm_100" in choice.problem


def test_prompt_states_version_ascii_params_launch_and_numerics(tmp_path):
    cu = tmp_path / "vec_add.cu"
    cu.write_text(VEC_ADD_CU)
    src = cuda_kernels(VEC_ADD_CU)[0]
    job = LowerJob(cu, VEC_ADD_CU, workspace=tmp_path)
    spec, why = source_spec(src, job)
    assert spec is not None, why
    msgs = prompt.first_messages(
        src, [], prompt.Target("sm_100", "9.0"), facts=facts_for_test(spec, True)
    )
    system, user = msgs[0]["content"], msgs[1]["content"]
    assert "`.version 9.0`, `.target sm_100`" in system
    assert "ASCII only" in system and ".rn" in system
    for line in (
        ".param .u64 vec_add_param_a",
        ".param .u64 vec_add_param_b",
        ".param .u64 vec_add_param_c",
        ".param .u32 vec_add_param_n",
    ):
        assert line in user
    assert user.index("vec_add_param_a") < user.index("vec_add_param_b")
    assert f"grid ({spec.launch.grid}) blocks of ({spec.launch.block}) threads" in user
    assert "relative error of" in user and "every size must work" in user


def test_few_shot_never_holds_the_exact_answer():
    library_cu = (ROOT / "fewshot" / "kernels" / "vec_add" / "reference.cu").read_text()
    src = cuda_kernels(library_cu)[0]
    picked = fitting_examples(src, 3)
    assert all(".entry vec_add(" not in e.ptx.replace(" (", "(") for e in picked)
    assert all(e.name != "vec_add" for e in picked)


async def test_ptxas_cascade_is_one_item_with_the_register_hint():
    lines = GOOD_VEC_ADD.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.strip().startswith("add.f32"))
    reg = lines[at].split()[1].rstrip(",")  # the destination, e.g. %f17
    bad = lines[:at] + [lines[at].replace(reg + ",", "%f99,", 1)] + lines[at + 1 :]
    check = await compile_check("\n".join(bad))
    assert not check.ok
    messages = [p.message for p in check.errors]
    assert any("Unknown symbol '%f99'" in m for m in messages)
    items = fold_problems(check.errors)
    assert len(items) == 1 and "Unknown symbol '%f99'" in items[0].cause
    fb = check.feedback
    assert fb.count("ptxas error at line") == 1
    assert "as a consequence" in fb or len(messages) == 1
    assert "declare '.reg .f32 %f<100>'" in fb


async def test_a_rejected_target_in_the_ptx_is_answered_with_the_accepted_ones():
    check = await compile_check(GOOD_VEC_ADD, arch="sm_999")
    assert not check.ok and "This ptxas accepts these targets:" in check.feedback
