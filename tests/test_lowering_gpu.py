"""The loop with the real GPU harness as its verifier (H200; skipped where there is no device),
plus the translation of harness reports into loop results (CPU)."""

from __future__ import annotations

import shutil

import pytest

from ptxls.gputest import report as greport
from ptxls.lowering.verify import from_report

from scripted_llm import GOOD_VEC_ADD, ScriptedLLM, Step, fenced

ROOT = __import__("pathlib").Path(__file__).resolve().parent.parent
WRONG_VEC_ADD = GOOD_VEC_ADD.replace(
    "add.f32             %f3, %f1, %f2;", "sub.f32             %f3, %f1, %f2;"
)


def test_failing_report_becomes_feedback_naming_the_case():
    bad = greport.CaseResult(
        index=3,
        n=257,
        seed=11,
        passed=False,
        messages=["c[0]: expected 1.5, got -0.5; 257 of 257 wrong"],
        launch={"grid": [2, 1, 1], "block": [256, 1, 1], "shared": 0},
    )
    report = greport.TestReport(
        "vec_add",
        greport.FAIL,
        summary="case n=257: c wrong",
        cases=[greport.CaseResult(0, 1, 8, True), bad],
        sizes=[1, 257],
        seed=8,
        device={"name": "NVIDIA H200"},
    )
    v = from_report(report)
    assert not v.ok and v.tested and v.gpu == "NVIDIA H200"
    assert "expected 1.5, got -0.5; 257 of 257 wrong" in v.feedback and "n=257" in v.feedback
    assert "n=257" in v.summary


def test_passing_and_untestable_reports():
    ok = from_report(
        greport.TestReport(
            "vec_add",
            greport.PASS,
            cases=[greport.CaseResult(0, 1, 8, True, time_ms=0.9, ref_time_ms=0.95)],
            sizes=[1],
            seed=8,
            device={"name": "NVIDIA H200"},
        )
    )
    assert (
        ok.ok
        and ok.tested
        and "1/1 cases passed on NVIDIA H200" in ok.summary
        and ok.kernel_ms == 0.9
    )
    none = from_report(
        greport.TestReport("vec_add", greport.NO_GPU, summary="no CUDA device (no driver)")
    )
    assert none.ok and not none.tested and "not GPU-tested" in none.summary


def _has_gpu() -> tuple[bool, str]:
    from ptxls.toolchain.gpu_probe import probe_gpu

    gpu = probe_gpu()  # the reason worded as everywhere else
    return gpu.available, gpu.reason or gpu.name


@pytest.mark.gpu
@pytest.mark.parametrize("first", ["broken", "wrong"])
async def test_cuda_to_ptx_lowering_ends_gpu_verified(first, tmp_path):
    has, why = _has_gpu()
    if not has:
        pytest.skip(f"no CUDA device ({why})")
    pytest.importorskip("openai")
    from ptxls.gputest.supervisor import Supervisor
    from ptxls.lowering.service import LowerJob, lower_llm
    from ptxls.lowering.settings import LlmSettings
    from ptxls.lowering.verify import gpu_verifier

    from scripted_llm import BROKEN_VEC_ADD

    cu = tmp_path / "vec_add.cu"
    shutil.copy(ROOT / "examples" / "vec_add.cu", cu)
    script = [
        Step(fenced(BROKEN_VEC_ADD if first == "broken" else WRONG_VEC_ADD)),
        Step(fenced(GOOD_VEC_ADD)),
    ]
    sup = Supervisor()
    try:
        with ScriptedLLM(script) as llm:
            settings = LlmSettings(
                base_url=llm.base_url,
                model="scripted-model",
                candidates=1,
                rounds=3,
                retry_backoff_s=0.01,
            )
            job = LowerJob(cu, cu.read_text(), kernel="vec_add", workspace=tmp_path)
            verifier = gpu_verifier(reference_cuda=cu.read_text(), supervisor=sup, time_it=False)
            out = await lower_llm(job, settings, verifier=verifier)
            second = llm.chat_requests[1].body["messages"][-1]["content"]
    finally:
        await sup.close()
    assert out.ok and out.gpu_tested, out.report
    assert "cases passed on" in out.ptx  # the header names the GPU
    rounds = out.loop.best.rounds
    if first == "wrong":
        assert rounds[0].outcome == "gpu"
        assert "expected" in second and "wrong" in second  # names the wrong elements
    else:
        assert rounds[0].outcome == "ptxas"
