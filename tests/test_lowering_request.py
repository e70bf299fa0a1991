"""A plain-language request becomes GPU-testable through @gputest lines in its comment block."""

from __future__ import annotations

from pathlib import Path

import pytest

from ptxls.lowering.job import LowerJob
from ptxls.lowering.source_spec import default_verifier, request_spec
from ptxls.lowering.sources import requests

from scripted_llm import ScriptedLLM, Step, fenced

REQUEST = """// an elementwise op written as a request, with its test
// @ptx: relu(float* x, int n): x[i] = max(x[i], 0) for i < n
//       one element per thread, block 256
// @gputest x: inout f32[n]; n: size
// @gputest ref: x = np.maximum(x, 0)
"""

GOOD_RELU = """.version 8.0
.target sm_90
.address_size 64

.visible .entry relu(
    .param .u64 relu_param_x,
    .param .u32 relu_param_n
)
{
    .reg .pred  %p<2>;
    .reg .b32   %r<6>;
    .reg .f32   %f<3>;
    .reg .b64   %rd<5>;

    ld.param.u64        %rd1, [relu_param_x];
    ld.param.u32        %r1, [relu_param_n];
    mov.u32             %r2, %ctaid.x;
    mov.u32             %r3, %ntid.x;
    mov.u32             %r4, %tid.x;
    mad.lo.s32          %r5, %r2, %r3, %r4;
    setp.ge.s32         %p1, %r5, %r1;
    @%p1 bra            DONE;
    cvta.to.global.u64  %rd2, %rd1;
    mul.wide.s32        %rd3, %r5, 4;
    add.s64             %rd4, %rd2, %rd3;
    ld.global.f32       %f1, [%rd4];
    max.f32             %f2, %f1, 0f00000000;
    st.global.f32       [%rd4], %f2;
DONE:
    ret;
}
"""
# clamps at 1.0 instead of 0.0: right for x >= 1, wrong below — only a numeric test sees it
WRONG_RELU = GOOD_RELU.replace(
    "max.f32             %f2, %f1, 0f00000000;", "max.f32             %f2, %f1, 0f3F800000;"
)


def _job(tmp_path: Path, text: str = REQUEST) -> tuple[LowerJob, object]:
    src_file = tmp_path / "relu.cu"
    src_file.write_text(text)
    job = LowerJob(src_file, text, backend="llm", kernel="relu", workspace=tmp_path)
    [src] = requests(text)
    return job, src


def test_gputest_lines_are_the_test_not_the_request(tmp_path):
    _, src = _job(tmp_path)
    assert src.name == "relu" and "@gputest" not in src.text and "np.maximum" not in src.text
    assert "one element per thread" in src.text
    assert (src.start_line, src.end_line) == (1, 4)  # the code action covers the whole block


def test_request_spec_from_the_block(tmp_path):
    job, src = _job(tmp_path)
    spec, why = request_spec(src, job)
    assert why == "" and spec.kernel == "relu"
    assert [(p.name, p.role) for p in spec.params] == [("x", "inout"), ("n", "size")]
    assert spec.numpy_ref == "x = np.maximum(x, 0)"


@pytest.mark.parametrize(
    "edit, reason",
    [
        (("// @gputest ref: x = np.maximum(x, 0)\n", ""), "no 'ref:'"),
        (("x: inout f32[n]", "x: inout f33[n]"), "f33"),
        (
            ("// @gputest x: inout f32[n]; n: size\n// @gputest ref: x = np.maximum(x, 0)\n", ""),
            "add @gputest lines",
        ),
    ],
    ids=["no-ref", "bad-type", "no-annotation"],
)
def test_request_without_a_usable_spec_says_why(tmp_path, edit, reason):
    job, src = _job(tmp_path, REQUEST.replace(*edit))
    spec, why = request_spec(src, job)
    assert spec is None and reason in why


async def test_without_a_gpu_the_request_is_compile_checked_and_says_why(tmp_path):
    from ptxls.lowering.service import close_gpu_worker
    from ptxls.lowering.verify import gpu_availability

    available, reason = await gpu_availability()
    await close_gpu_worker()
    if available:
        pytest.skip("a GPU is present: the GPU test below covers this machine")
    job, src = _job(tmp_path)
    job.device = "gpu"  # no emulator fall-back: what a missing GPU says
    try:
        _, why, spec = await default_verifier(src, job)
    finally:
        from ptxls.lowering.service import close_gpu_worker

        await close_gpu_worker()  # the availability check started one in this test's loop
    assert spec is not None  # the request block carries @gputest lines: a spec, just no GPU
    assert why == reason and "no CUDA device" in why


@pytest.mark.gpu
async def test_request_lowering_ends_gpu_verified_after_a_numeric_repair(tmp_path):
    from ptxls.lowering.service import close_gpu_worker
    from ptxls.lowering.verify import gpu_availability

    available, reason = await gpu_availability()
    if not available:
        await close_gpu_worker()  # started in this test's loop: closed before the loop ends
        pytest.skip(reason)
    pytest.importorskip("openai")
    from ptxls.lowering.service import lower_llm
    from ptxls.lowering.settings import LlmSettings

    job, _ = _job(tmp_path)
    with ScriptedLLM([Step(fenced(WRONG_RELU)), Step(fenced(GOOD_RELU))]) as llm:
        settings = LlmSettings(
            base_url=llm.base_url,
            model="scripted-model",
            candidates=1,
            rounds=3,
            retry_backoff_s=0.01,
        )
        out = await lower_llm(job, settings)
        second = llm.chat_requests[1].body["messages"][-1]["content"]
    assert out.ok and out.gpu_tested, out.report
    assert out.loop.best.rounds[0].outcome == "gpu"
    assert "expected" in second and "x[" in second  # the feedback names wrong elements of x
