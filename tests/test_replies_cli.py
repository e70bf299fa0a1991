"""Reply shapes from tests/data/replies/ through the whole product: ``ptxls lower --backend llm
--compile-only`` (the CLI's ``main`` in this process), against a scripted endpoint that behaves like an OpenAI
reasoning model (it refuses ``max_tokens`` and any temperature but 1 with OpenAI's own 400
bodies) and sends the corpus replies. The written PTX is what the reply meant, and the
transcript keeps the adaptations, the reasoning and why a reply was not a candidate."""

from __future__ import annotations

import json

import pytest
from cli_helpers import run_cli

from ptxls.lowering.provenance import strip_header
from ptxls.lowering.transcript import read

from reply_corpus import REFERENCE, load
from scripted_llm import ROOT, ScriptedLLM, Step, reasoning_model_gate


def lower(work, steps: list[Step], *args: str):
    # In this process (tests/cli_helpers.py): what is under test is how each reply is read and
    # what reaches the file; the process boundary has its own tests (test_llm_run_cli.py).
    with ScriptedLLM(steps, gate=reasoning_model_gate) as llm:
        env = {
            "OPENAI_BASE_URL": llm.base_url,
            "PTXLS_MODEL": "scripted-model",
            "PTXLS_LLM_RETRY_BACKOFF": "0.01",
            "OPENAI_API_KEY": None,
        }
        p = run_cli("lower", "vec_add.cu", "--backend", "llm", "--compile-only",
                    "--candidates", "1", *args, cwd=work, env=env)  # fmt: skip
    records = [
        r for t in sorted((work / ".ptxls" / "transcripts").glob("*.jsonl")) for r in read(t)
    ]
    return p, llm, records


def step_for(name: str) -> Step:
    reply, meta = load(name)
    return Step(reply, reasoning=meta["reasoning_content"], finish_reason=meta["finish_reason"])


@pytest.fixture
def work(tmp_path):
    (tmp_path / "vec_add.cu").write_text((ROOT / "examples" / "vec_add.cu").read_text())
    return tmp_path


@pytest.mark.parametrize(
    "name",
    [
        "think_draft_then_answer",
        "self_correction",
        "crlf",
        "bare_prose_braces",
        "several_entries_helper_func",
        "non_ascii_comment",
        "gputest_lines",
        # issue 20: which block, control tokens, the reasoning field
        "use_the_first_second_no_tail",
        "second_one_is_wrong",
        "final_version_then_original",
        "before_and_after_in_one_fence",
        "chatml_tokens_leak_a_second_turn",
        "llama3_header_and_eot",
        "phi_end_token",
        "prefer_the_block_without_dataflow_findings",
        "kernel_only_in_reasoning_content",
    ],
)
def test_a_first_reply_of_each_shape_is_the_result(work, name):
    p, llm, records = lower(work, [step_for(name)], "--rounds", "2")
    assert p.returncode == 0, p.stdout + p.stderr
    # round 1 was enough: the reply was read right the first time (3 requests: two refusals,
    # then the adapted one)
    assert len(llm.chat_requests) == 3
    body = strip_header((work / "vec_add.ptx").read_text())
    want = load(name)[1]["expect"]
    if "ptx" in want:
        assert body.strip() == REFERENCE[want["ptx"]].strip()
    for piece in want.get("ptx_has", []):
        assert piece in body
    for piece in want.get("ptx_lacks", []) + ["@gputest", "<think>"]:
        assert piece not in body
    assert body.isascii()
    notes = [n for r in records if r["kind"] == "reply" for n in r.get("notes", [])]
    assert "endpoint refused 'max_tokens'; sent 'max_completion_tokens'" in notes
    assert any("refused 'temperature'" in n for n in notes)
    assert "Traceback" not in p.stderr


def test_elided_repair_is_not_written_and_the_model_is_told(work):
    p, llm, records = lower(
        work, [step_for("elided_repair"), step_for("fenced_ptx")], "--rounds", "3"
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert strip_header((work / "vec_add.ptx").read_text()).strip() == REFERENCE["vec_add"].strip()
    # what the PTX does decides (a register read that nothing writes); the words are a hint
    flagged = [r for r in records if r["kind"] == "dataflow"]
    assert flagged and "read-before-write" in json.dumps(flagged[0])
    second = llm.chat_requests[-1].body["messages"][-1]["content"]
    assert "cannot be complete" in second and "says code was left out" in second


def test_a_reply_spent_on_reasoning_names_the_token_setting(work):
    p, llm, records = lower(
        work, [step_for("reasoning_only_empty"), step_for("fenced_ptx")], "--rounds", "3"
    )
    assert p.returncode == 0, p.stdout + p.stderr
    replies = [r for r in records if r["kind"] == "reply"]
    assert "addressing" in replies[0]["reasoning"] and replies[0]["finish_reason"] == "length"
    said = json.dumps([r for r in records if r["kind"] == "not_a_candidate"])
    assert "ptxls.llm.maxTokens" in said
