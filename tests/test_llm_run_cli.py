"""The loop as a person runs it (issue 20): ``ptxls lower`` as a real process against the scripted
OpenAI-compatible server on loopback, then ``ptxls replay`` on its transcript. What a run cost
(``--format json``, the header, the caps), what is sent (few-shot count, extra body fields and
headers — never logged), what is decided by meaning (dataflow, forbidden calls, certain fixes)
and how progress is shown."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ptxls.lowering.provenance import strip_header
from ptxls.lowering.transcript import read

from reply_corpus import REFERENCE
from scripted_llm import ROOT, ScriptedLLM, Step, fenced

GOOD = REFERENCE["vec_add"]
# the index computation and the conversions gone behind a comment: ptxas accepts it
GUTTED = "\n".join(
    line if "mad.lo" not in line else "    // ... (unchanged index computation and loads) ..."
    for line in GOOD.split("\n")
    if not any(k in line for k in ("mov.u32", "cvta.to"))
)
USAGE = {"prompt_tokens": 3000, "completion_tokens": 700, "total_tokens": 3700,
         "completion_tokens_details": {"reasoning_tokens": 200}}  # fmt: skip
HEADER_SECRET = "hdr-value-never-logged-7f3a9c"


def lower(work, steps, *args: str, env_extra: dict | None = None):
    with ScriptedLLM(steps) as llm:
        env = dict(os.environ, OPENAI_BASE_URL=llm.base_url, PTXLS_MODEL="scripted-model",
                   PTXLS_LLM_RETRY_BACKOFF="0.01", **(env_extra or {}))  # fmt: skip
        env.pop("OPENAI_API_KEY", None)
        p = subprocess.run(
            [sys.executable, "-m", "ptxls.cli.main", "lower", "vec_add.cu", "--backend", "llm",
             "--compile-only", "--candidates", "1", *args],
            capture_output=True, text=True, env=env, cwd=work, timeout=240,
        )  # fmt: skip
    transcripts = sorted((work / ".ptxls" / "transcripts").glob("*.jsonl"))
    records = [r for t in transcripts for r in read(t)]
    return p, llm, records, transcripts


@pytest.fixture
def work(tmp_path):
    (tmp_path / "vec_add.cu").write_text((ROOT / "examples" / "vec_add.cu").read_text())
    return tmp_path


def test_json_report_says_model_endpoint_rounds_verdicts_tokens_duration_and_cost(work):
    steps = [Step(fenced(GUTTED), usage=USAGE), Step(fenced(GOOD), usage=USAGE)]
    env = {"PTXLS_LLM_PRICE_PROMPT": "2.5", "PTXLS_LLM_PRICE_COMPLETION": "10"}
    p, llm, records, _ = lower(work, steps, "--format", "json", env_extra=env)
    assert p.returncode == 0, p.stdout + p.stderr
    out = json.loads(p.stdout)
    assert out["model"] == "scripted-model"
    assert out["endpoint"] == llm.base_url and out["endpoint_host"].startswith("127.0.0.1:")
    assert out["rounds"] == 2
    verdicts = [r["verdict"] for r in out["candidates"][0]["rounds"]]
    assert verdicts == ["incomplete", "passed"]
    assert out["tokens"]["prompt_tokens"] == 6000 and out["tokens"]["completion_tokens"] == 1400
    assert out["tokens"]["reasoning_tokens"] == 400
    assert out["cost"] == pytest.approx((6000 * 2.5 + 1400 * 10) / 1e6)
    assert out["duration_s"] > 0
    header = (work / "vec_add.ptx").read_text().split(".version")[0]
    assert "// spent: model scripted-model at 127.0.0.1:" in header
    assert "7,400 tokens" in header and "2 rounds" in header


def test_the_token_cap_stops_the_loop_with_the_reason(work):
    steps = [Step(fenced(GUTTED), usage=USAGE)] * 5
    p, llm, records, _ = lower(work, steps, "--rounds", "5", "--max-total-tokens", "5000")
    assert p.returncode == 1, p.stdout + p.stderr
    assert len(llm.chat_requests) == 2  # the reply that crossed 5000 was the last
    assert "token cap reached" in p.stdout + p.stderr
    assert "ptxls.llm.maxTotalTokens" in p.stdout + p.stderr
    assert not (work / "vec_add.ptx").exists()


def test_an_incomplete_kernel_is_never_written_without_a_test(work):
    # ptxas accepts the gutted kernel every time; nothing tests it: it must not become a result
    p, llm, records, _ = lower(work, [Step(fenced(GUTTED))] * 3, "--rounds", "3")
    assert p.returncode == 1, p.stdout + p.stderr
    assert not (work / "vec_add.ptx").exists()
    assert not (work / ".ptxls" / "attempts").exists()
    told = llm.chat_requests[1].body["messages"][-1]["content"]
    assert "cannot be complete" in told and "reads %r5" in told
    assert all(r["kind"] != "ptxas" or r["ok"] for r in records)


def test_fewshot_count_from_the_flag_and_the_environment(work):
    p0, llm0, _, _ = lower(work, [Step(fenced(GOOD))], "--fewshot", "0")
    p2, llm2, _, _ = lower(work, [Step(fenced(GOOD))], env_extra={"PTXLS_LLM_FEWSHOT": "2"})
    assert p0.returncode == 0 and p2.returncode == 0, p0.stderr + p2.stderr

    def size(server):
        return sum(len(m["content"]) for m in server.chat_requests[0].body["messages"])

    assert size(llm0) + 3000 < size(llm2)  # two library kernels are several thousand characters


def test_extra_body_and_headers_are_sent_and_header_values_never_logged(work):
    body = '{"chat_template_kwargs": {"enable_thinking": false}, "top_k": 20}'
    p, llm, records, transcripts = lower(
        work, [Step(fenced(GOOD))], "--extra-body", body,
        "--header", f"X-Title: {HEADER_SECRET}", "--header", "HTTP-Referer: https://ptxls.dev",
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    sent = llm.chat_requests[0]
    assert sent.body["chat_template_kwargs"] == {"enable_thinking": False}
    assert sent.body["top_k"] == 20
    assert sent.headers["x-title"] == HEADER_SECRET
    for t in transcripts:
        assert HEADER_SECRET not in t.read_text()
    assert HEADER_SECRET not in p.stdout + p.stderr
    settings = next(r for r in records if r["kind"] == "settings")
    assert settings["extra_headers"] == {"X-Title": "(set)", "HTTP-Referer": "(set)"}


VPRINTF = GOOD.replace(
    ".visible .entry",
    ".extern .func (.param .b32 func_retval0) vprintf(.param .b64 f, .param .b64 a);\n"
    ".global .align 1 .b8 $str[4] = {104, 105, 10, 0};\n\n.visible .entry",
).replace(
    "DONE:\n",
    "    {\n    .reg .b64 %fmt;\n    .param .b64 p0;\n    .param .b64 p1;\n"
    "    .param .b32 rv;\n    mov.u64 %fmt, $str;\n    cvta.global.u64 %fmt, %fmt;\n"
    "    st.param.b64 [p0], %fmt;\n    st.param.b64 [p1], 0;\n"
    "    call.uni (rv), vprintf, (p0, p1);\n    }\nDONE:\n",
)


def test_a_call_to_vprintf_is_fed_back_when_the_source_does_not_print(work):
    p, llm, records, _ = lower(work, [Step(fenced(VPRINTF)), Step(fenced(GOOD))], "--rounds", "2")
    assert p.returncode == 0, p.stdout + p.stderr
    told = llm.chat_requests[1].body["messages"][-1]["content"]
    assert "calls vprintf" in told
    assert "vprintf" not in (work / "vec_add.ptx").read_text()
    assert [r for r in records if r["kind"] == "calls"]


def test_certain_fixes_are_applied_before_asking_and_said_in_the_transcript(work):
    # %r5 used, '.reg .b32 %r<5>' declares %r0-%r4: ptxls check --fix widens the range
    narrow = GOOD.replace(".reg .b32   %r<6>;", ".reg .b32   %r<5>;")
    assert narrow != GOOD
    p, llm, records, _ = lower(work, [Step(fenced(narrow))], "--rounds", "2")
    assert p.returncode == 0, p.stdout + p.stderr
    assert len(llm.chat_requests) == 1  # no round spent on it
    fixed = [r for r in records if r["kind"] == "certain_fixes"]
    assert fixed and fixed[0]["ok"] and "%r<6>" in fixed[0]["fixes"][0]
    assert "%r<6>" in strip_header((work / "vec_add.ptx").read_text())


def test_progress_is_one_line_per_phase_never_per_chunk(work):
    long_reply = "Some words first.\n" * 4000 + fenced(GOOD)  # ~80k characters, 2000 chunks
    p, llm, _, _ = lower(work, [Step(long_reply, chunk_size=40)])
    assert p.returncode == 0, p.stderr
    progress = [ln for ln in p.stderr.splitlines() if ln.startswith("  candidate")]
    assert len(progress) <= 6, progress
    assert sum("receiving" in ln for ln in progress) == 1


def test_replay_reruns_the_checks_of_a_recorded_run_without_a_model(work):
    p, _, _, transcripts = lower(work, [Step(fenced(GUTTED)), Step(fenced(GOOD))], "--rounds", "2")
    assert p.returncode == 0, p.stderr
    r = subprocess.run(
        [sys.executable, "-m", "ptxls.cli.main", "replay", str(transcripts[-1]), "--format", "json"],
        capture_output=True, text=True, cwd=work, timeout=120,
        env={k: v for k, v in os.environ.items() if k != "OPENAI_BASE_URL"},
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    out = json.loads(r.stdout)
    assert out["agrees"] and [x["round"] for x in out["rounds"]] == [1, 2]
    first, second = out["rounds"]
    assert first["recorded_incomplete"] and any(
        "read-before-write" in f for f in first["now_findings"]
    )
    assert second["now_ptxas_ok"] and second["now_findings"] == []
    text = subprocess.run(
        [sys.executable, "-m", "ptxls.cli.main", "replay", str(transcripts[-1])],
        capture_output=True, text=True, cwd=work, timeout=120,
    )  # fmt: skip
    assert "incomplete" in text.stdout and "agrees with the record" in text.stdout


def test_a_kernel_that_writes_an_input_instead_of_the_output_is_told_which(work):
    # stores the sum into a (an input) instead of c: the test spec says c is the output
    into_a = GOOD.replace("st.global.f32       [%rd10], %f3;", "st.global.f32       [%rd8], %f3;")
    assert into_a != GOOD
    p, llm, records, _ = lower(work, [Step(fenced(into_a)), Step(fenced(GOOD))], "--rounds", "2")
    assert p.returncode == 0, p.stdout + p.stderr
    told = llm.chat_requests[1].body["messages"][-1]["content"]
    assert "output parameter 'vec_add_param_c'" in told and "never stored through" in told
