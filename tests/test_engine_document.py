"""diagnostics.engine.check_document: what the editor and ``ptxls check`` share — the
binary-content guard before any tool runs, the instant lints delivered ahead of a slow ptxas,
the lints alone between saves of a large file, and the lints before PtxasUnavailable."""

from __future__ import annotations

import pytest

from ptxls.diagnostics.engine import (
    CudaCheckOptions,
    DocumentCheckOptions,
    PtxasUnavailable,
    PtxCheckOptions,
    check_document,
    check_text,
)

from lsp_helpers import BROKEN, EXAMPLES

MISSING_PTXAS = PtxCheckOptions(ptxas_path="/nonexistent/ptxas")


async def steps_of(text: str, opts: DocumentCheckOptions) -> list:
    return [step async for step in check_document(text, opts)]


async def test_binary_content_is_one_problem_and_no_tool_runs():
    # ptxas would be "missing": had the engine tried it, PtxasUnavailable would be raised
    steps = await steps_of("ab\x00cd", DocumentCheckOptions(ptx=MISSING_PTXAS))
    assert [(s.final, s.binary, s.result.ran_tool) for s in steps] == [(True, True, False)]
    [problem] = steps[0].result.problems
    assert (problem.code, problem.line, problem.col, problem.source) == (
        "binary-content",
        0,
        2,
        "ptxls",
    )
    cuda = DocumentCheckOptions("cuda", cuda=CudaCheckOptions(nvcc_path="/nonexistent/nvcc"),
                                guard_source="nvcc")  # fmt: skip
    [step] = await steps_of("int x;\n\ufffd", cuda)
    assert (step.binary, step.result.problems[0].source, step.result.problems[0].line) == (
        True,
        "nvcc",
        1,
    )


async def test_without_the_tool_the_lints_alone_are_the_last_word():
    opts = DocumentCheckOptions(ptx=MISSING_PTXAS, run_tool=False)
    [step] = await steps_of(BROKEN, opts)
    assert step.final and not step.binary and not step.result.ran_tool
    assert all(p.source == "ptxls" for p in step.result.problems)


async def test_a_missing_ptxas_is_raised_after_the_lints_are_delivered():
    got = []
    with pytest.raises(PtxasUnavailable):
        async for step in check_document(BROKEN, DocumentCheckOptions(ptx=MISSING_PTXAS)):
            got.append(step)
    assert [(s.final, s.result.ran_tool) for s in got] == [(False, False)]
    with pytest.raises(PtxasUnavailable):  # the CLI's form: no lints, exit 2
        await check_text(BROKEN, DocumentCheckOptions(ptx=MISSING_PTXAS))


async def test_lints_first_when_ptxas_is_slower_than_the_wait_then_ptxas():
    opts = DocumentCheckOptions(lints_alone_after_s=0.0)
    steps = await steps_of(BROKEN, opts)
    assert [(s.final, s.result.ran_tool) for s in steps] == [(False, False), (True, True)]
    assert any(p.source == "ptxas" for p in steps[-1].result.problems)
    # no wait asked for: one delivery, ptxas's word merged with the lints
    [only] = await steps_of((EXAMPLES / "vec_add.ptx").read_text(), DocumentCheckOptions())
    assert only.final and only.result.ran_tool and only.result.error_count == 0


async def test_lints_the_caller_started_are_the_ones_delivered():
    """The editor starts the lints as the edit arrives and hands them over: they are delivered
    as they are (not computed again), first, and folded into the final word."""
    import asyncio

    from ptxls.diagnostics.model import Problem, Severity
    from ptxls.frontend.ptx import parse_ptx

    marker = Problem(2, 0, 1, Severity.WARNING, "handed over, not recomputed", "ptxls")
    started = asyncio.get_running_loop().create_future()
    started.set_result((parse_ptx(BROKEN)[0], [marker]))
    opts = DocumentCheckOptions(lints_alone_after_s=0.0)
    steps = [s async for s in check_document(BROKEN, opts, lints=started)]
    assert [(s.final, s.result.ran_tool) for s in steps] == [(False, False), (True, True)]
    assert steps[0].result.problems == [marker]
    assert marker.message in [p.message for p in steps[-1].result.problems]
