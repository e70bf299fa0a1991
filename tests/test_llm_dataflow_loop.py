"""The dataflow check in the loop, with a verifier that does or does not run the kernel: a test
that ran settles it (GPU or CPU emulator), without one a flagged candidate is never the result.
Real HTTP (scripted endpoint), real ptxas; the verifiers stand in for the device."""

from __future__ import annotations

import pytest
from test_lowering_loop import SECRET, run

from ptxls.lowering.transcript import Transcript
from ptxls.lowering.verify import VerifyResult

from scripted_llm import GOOD_VEC_ADD, ScriptedLLM, Step, fenced

# vec_add with the index computation gone (ptxas accepts it; registers read that nothing writes)
GUTTED = "\n".join(
    line for line in GOOD_VEC_ADD.split("\n") if not line.strip().startswith(("mov.u32", "mad.lo"))
)


@pytest.fixture
def llm():
    with ScriptedLLM() as server:
        yield server


def verifier_that(ok: bool, tested: bool, emulated: bool = False):
    async def verify(ptx: str, kernel: str, *, candidate=None) -> VerifyResult:
        return VerifyResult(ok=ok, tested=tested, summary="stand-in verifier", emulated=emulated)

    return verify


def test_the_gutted_kernel_really_is_flagged():
    from ptxls.frontend.ptx_dataflow import check_dataflow

    assert GUTTED != GOOD_VEC_ADD
    assert {f.kind for f in check_dataflow(GUTTED)} == {"read-before-write"}


async def test_without_a_test_a_flagged_candidate_is_never_the_result(llm):
    result, _ = await run(llm, [Step(fenced(GUTTED))] * 2, rounds=2,
                       verifier=verifier_that(True, False))  # fmt: skip
    assert not result.ok and result.attempt is None
    assert [r.outcome for r in result.candidates[0].rounds] == ["incomplete", "incomplete"]


@pytest.mark.parametrize("emulated", [False, True], ids=["gpu", "emulator"])
async def test_a_test_that_ran_and_passed_settles_it_with_a_warning(llm, emulated):
    transcript = Transcript(None, [SECRET])
    result, _ = await run(llm, [Step(fenced(GUTTED))], rounds=1, transcript=transcript,
                       verifier=verifier_that(True, not emulated, emulated))  # fmt: skip
    assert result.ok, result.report()
    assert any("dataflow check says" in w for w in result.warnings)
    assert [r["kind"] for r in transcript.records].count("dataflow") == 1


async def test_a_failed_test_gets_the_dataflow_lines_in_its_feedback(llm):
    result, _ = await run(
        llm, [Step(fenced(GUTTED))], rounds=1, verifier=verifier_that(False, True)
    )
    rec = result.candidates[0].rounds[0]
    assert (
        rec.outcome == "gpu"
        and "cannot be complete" in rec.feedback
        and " reads %r" in rec.feedback
    )
