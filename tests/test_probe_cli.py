"""``ptxls lower --backend llm --compile-only`` as a real process against a scripted endpoint,
for what an outside checker would try first: an endpoint that refuses every request (exit 2,
"could not run", not "nothing passed"), a repair that elides code under ``--compile-only``
(never written, exit 1), a model stuck on one error whose line numbers drift (it still changes
tack), a source path with spaces and non-ASCII letters, an output that is a symlink to a
directory, and the key echoed by the endpoint (never printed). Plus extraction edge cases that
must not raise or run long."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from ptxls.lowering.extract import extract_ptx
from ptxls.lowering.transcript import read

from scripted_llm import BROKEN_VEC_ADD, GOOD_VEC_ADD, ROOT, ScriptedLLM, Step, fenced

KEY = "sk-proj-cliPROBE0123456789abcdefSECRET"


def lower(work, steps, *args, source="vec_add.cu", key=False):
    with ScriptedLLM(steps) as llm:
        env = dict(
            os.environ,
            OPENAI_BASE_URL=llm.base_url,
            PTXLS_MODEL="scripted-model",
            PTXLS_LLM_RETRY_BACKOFF="0.01",
        )
        env.pop("OPENAI_API_KEY", None)
        if key:
            env["OPENAI_API_KEY"] = KEY
        p = subprocess.run(
            [
                sys.executable,
                "-m",
                "ptxls.cli.main",
                "lower",
                source,
                "--backend",
                "llm",
                "--compile-only",
                "--candidates",
                "1",
                *args,
            ],
            capture_output=True,
            text=True,
            env=env,
            cwd=work,
            timeout=180,
        )
        requests = len(llm.chat_requests)
    records = [
        r for t in sorted((work / ".ptxls" / "transcripts").glob("*.jsonl")) for r in read(t)
    ]
    return p, requests, records


@pytest.fixture
def work(tmp_path):
    (tmp_path / "vec_add.cu").write_text((ROOT / "examples" / "vec_add.cu").read_text())
    return tmp_path


@pytest.mark.parametrize(
    "step",
    [
        Step(
            status=400,
            error_body={
                "object": "error",
                "message": "Unsupported request: tools are disabled",
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            },
        ),
        Step(status=401, error="Incorrect API key provided: {key}", echo_key=True),
        Step(status=503, error="upstream overloaded: Authorization: Bearer {key}", echo_key=True),
    ],
    ids=["400 naming nothing", "401 echoing the key", "503 every time"],
)
def test_an_endpoint_that_refuses_every_request_could_not_run(work, step):
    p, requests, records = lower(work, [step] * 20, "--rounds", "3", key=True)
    out = p.stdout + p.stderr
    assert p.returncode == 2, out  # not 1: no model ever answered, nothing was tried
    said = p.stderr.strip().splitlines()[-1]
    assert said.startswith("ptxls lower:") and "127.0.0.1" in said, said  # the endpoint named
    assert KEY not in out and KEY[8:24] not in out
    assert requests <= 5  # a final refusal is not retried; a 503 only `retries` times
    assert not (work / "vec_add.ptx").exists()
    assert not list(work.glob(".ptxls/attempts/*"))


def test_an_elided_repair_is_never_written_under_compile_only(work):
    # the address computation really left out: its registers are read and never written
    gone = (
        "    mul.wide.u32        %rd4, %r6, 4;\n"
        "    add.s64             %rd5, %rd1, %rd4;\n"
        "    add.s64             %rd6, %rd2, %rd4;\n"
        "    add.s64             %rd7, %rd3, %rd4;\n"
    )
    assert gone in GOOD_VEC_ADD
    elided = fenced(GOOD_VEC_ADD.replace(gone, "    // ... unchanged ...\n", 1))
    p, requests, records = lower(work, [Step(elided)] * 5, "--rounds", "5")
    assert p.returncode == 1, p.stdout + p.stderr
    assert not (work / "vec_add.ptx").exists()
    assert requests == 3  # round 2 repeats round 1, a fresh start, then it stops
    assert len([r for r in records if r.get("kind") == "dataflow"]) == 3  # each one judged
    last = p.stdout.strip().splitlines()[-1]
    assert "incomplete" in last and "%rd5" in last, last  # the register nothing writes


def test_a_complete_kernel_with_an_unchanged_comment_is_judged_by_its_code(work):
    # the words alone decide nothing: every instruction is there, so it is a candidate
    worded = fenced(
        GOOD_VEC_ADD.replace("cvta.to.global", "// ... unchanged ...\n    cvta.to.global", 1)
    )
    p, requests, _ = lower(work, [Step(worded)] * 5, "--rounds", "5")
    assert p.returncode == 0, p.stdout + p.stderr
    assert requests == 1
    assert "add.f32" in (work / "vec_add.ptx").read_text()


def test_a_stuck_model_whose_line_numbers_drift_still_changes_tack(work):
    # the same wrong operand every round, moved down by blank lines: ptxas reports another
    # line each time, the cause is the same
    steps = [
        Step(fenced(BROKEN_VEC_ADD.replace("ld.param.u64", "\n" * i + "    ld.param.u64", 1)))
        for i in range(6)
    ]
    p, requests, records = lower(work, steps, "--rounds", "5")
    assert p.returncode == 1
    lines = [e for r in records if r.get("kind") == "ptxas" for e in r["errors"]]
    assert len({e.split(":")[0] for e in lines}) >= 2, lines  # the line numbers did differ
    assert any(r.get("kind") == "change_tack" for r in records)
    assert requests == 3, requests  # not all 5 rounds
    assert "same ptxas error" in p.stdout.strip().splitlines()[-1]


def test_a_source_path_with_spaces_and_accents(work):
    where = work / "dir with space"
    where.mkdir()
    (where / "vëc add.cu").write_text((ROOT / "examples" / "vec_add.cu").read_text())
    p, _, _ = lower(work, [Step(fenced(GOOD_VEC_ADD))], source="dir with space/vëc add.cu")
    assert p.returncode == 0, p.stdout + p.stderr
    assert (where / "vec_add.ptx").read_text().count(".entry vec_add(") == 1


def test_an_output_that_is_a_symlink_to_a_directory_is_not_written_through(work):
    (work / "elsewhere").mkdir()
    (work / "vec_add.ptx").symlink_to(work / "elsewhere")
    p, _, _ = lower(work, [Step(fenced(GOOD_VEC_ADD))])
    assert p.returncode == 0, p.stdout + p.stderr
    assert (work / "vec_add.ptx").is_symlink() and not list((work / "elsewhere").iterdir())
    assert (work / "vec_add.llm.ptx").exists() and "symbolic link" in p.stdout


# ---- extraction: hostile shapes added with the new reading rules stay bounded and never raise


@pytest.mark.parametrize(
    "reply",
    [
        # json.loads recurses per nesting level: this raised RecursionError out of extraction
        '{"ptx": ".entry a", "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
        '{"a":"' + '{\\"a\\":\\"' * 1000 + '.entry"}',
        "<pre>" * 1_000_000,
        "> " * 2_000_000 + ".entry",
        "\\n" * 1_000_000 + ".entry a",
        "\u200b" * 5_000_000,
        "````\n```\n" * 20_000,
        "&lt;" * 1_000_000 + "\n.entry a{}",
    ],
    ids=[
        "deep json",
        "json in json in json",
        "pre tags",
        "quote marks",
        "escaped newlines",
        "zero-width spaces",
        "nested fences",
        "entities",
    ],
)
def test_new_reading_rules_stay_bounded_on_hostile_replies(reply):
    started = time.perf_counter()
    ext = extract_ptx(reply, "a")
    took = time.perf_counter() - started
    assert isinstance(ext.problem, str)
    assert took < 3.0, took  # ~0.01-0.3 s here; generous for a loaded CI box


def test_a_tool_call_reply_is_read_at_any_depth_but_not_run():
    ptx = GOOD_VEC_ADD
    reply = json.dumps(
        {"tool_calls": [{"function": {"name": "emit", "arguments": json.dumps({"code": ptx})}}]}
    )
    ext = extract_ptx(reply, "vec_add")
    assert ext.candidate and ext.ptx.strip() == ptx.strip()
