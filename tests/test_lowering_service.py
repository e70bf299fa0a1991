"""Lowering as the CLI and the server run it: nvcc reference, provenance, no-clobber output,
settings, extraction, and ``ptxls lower`` end to end (LLM backend against the scripted server)."""

from __future__ import annotations

import asyncio
import shutil

import pytest

from ptxls.cli.main import main as ptxls_main
from ptxls.frontend.ptx import parse_ptx
from ptxls.lowering import target_isa
from ptxls.lowering.extract import extract_ptx
from ptxls.lowering.provenance import plan_output, strip_header, untouched_since_generated
from ptxls.lowering.service import LowerJob, lower
from ptxls.lowering.settings import from_config, from_env
from ptxls.lowering.transcript import read

from scripted_llm import BROKEN_VEC_ADD, GOOD_VEC_ADD, ScriptedLLM, Step, fenced

ROOT = __import__("pathlib").Path(__file__).resolve().parent.parent
VEC_ADD_CU = ROOT / "examples" / "vec_add.cu"


@pytest.fixture
def work(tmp_path):
    shutil.copy(VEC_ADD_CU, tmp_path / "vec_add.cu")
    return tmp_path


def test_nvcc_reference_lowering_renames_and_checks(work):
    job = LowerJob(
        work / "vec_add.cu",
        (work / "vec_add.cu").read_text(),
        backend="nvcc",
        kernel="vec_add",
        workspace=work,
    )
    out = asyncio.run(lower(job))
    assert out.ok, out.message
    module, _ = parse_ptx(strip_header(out.ptx))
    assert [e.name for e in module.entries] == ["vec_add"]  # not _Z7vec_addPKfS0_Pfi
    # the .version the model would be asked for: measured (ptxas here, the driver on a GPU)
    asked = asyncio.run(target_isa.choose_target("sm_90")).isa
    assert module.version <= tuple(int(x) for x in asked.split("."))
    assert "// source: vec_add.cu" in out.ptx and "backend: nvcc" in out.ptx
    assert "renamed to vec_add" in out.ptx
    assert out.output.path == work / "vec_add.ptx" and out.output.action == "create"


def test_nvcc_reference_is_lowered_to_what_the_measured_driver_takes(work, monkeypatch):
    """nvcc 13.5 writes .version 9.5; under a GPU whose driver (CUDA 12.4, measured by the probe)
    takes at most 8.4, the reference is lowered to 8.4 and the header says why."""

    async def h200_with_cuda_12_4_driver():
        return (8, 4), "sm_90"

    monkeypatch.setattr(target_isa, "_driver_limit", h200_with_cuda_12_4_driver)
    target_isa._cache.clear()
    try:
        src = work / "vec_add.cu"
        job = LowerJob(src, src.read_text(), backend="nvcc", kernel="vec_add", workspace=work)
        out = asyncio.run(lower(job))
    finally:
        target_isa._cache.clear()
    assert out.ok, out.message
    module, _ = parse_ptx(strip_header(out.ptx))
    assert module.version == (8, 4)
    assert "lowered to 8.4" in out.ptx and "driver JIT (8.4, sm_90)" in out.ptx


def test_nvcc_compile_error_is_a_message_not_an_exception(work):
    bad = "__global__ void vec_add(float* a) { a[0] = undefined_name; }\n"
    out = asyncio.run(lower(LowerJob(work / "bad.cu", bad, backend="nvcc", workspace=work)))
    assert not out.ok and "undefined_name" in out.message


def test_output_never_clobbers_a_hand_edited_file(work):
    src = work / "vec_add.cu"
    job = LowerJob(src, src.read_text(), backend="nvcc", kernel="vec_add", workspace=work)
    first = asyncio.run(lower(job))
    first.output.path.write_text(first.ptx)
    assert untouched_since_generated(first.ptx)
    # the same result again: nothing to do
    assert plan_output(src, "vec_add", "nvcc", first.ptx).action == "unchanged"
    # a different result over an untouched generated file: replace it
    other = first.ptx.replace("ret;", "ret; // changed")
    assert plan_output(src, "vec_add", "nvcc", other).action == "replace"
    # after a hand edit: a new file beside it, the edited one left alone
    (work / "vec_add.ptx").write_text(first.ptx.replace("ret;", "ret; // tuned by hand"))
    plan = plan_output(src, "vec_add", "nvcc", other)
    assert plan.action == "create" and plan.path.name == "vec_add.nvcc.ptx"
    assert "edited by hand" in plan.reason


def test_settings_from_env_and_config_with_bad_values_falling_back():
    env = {
        "OPENAI_BASE_URL": "http://localhost:11434/v1",
        "PTXLS_MODEL": "qwen",
        "OPENAI_API_KEY": "sk-abcdefgh",
        "PTXLS_LLM_CANDIDATES": "three",
    }
    s, problems = from_env(env)
    assert (
        s.ready
        and s.base_url == "http://localhost:11434/v1"
        and s.model == "qwen"
        and s.candidates == 2
    )
    assert len(problems) == 1 and "PTXLS_LLM_CANDIDATES" in problems[0]
    assert "sk-abcdefgh" not in repr(s) and "api_key" not in s.public_dict()
    s, problems = from_config(
        {"model": "m2", "maxRounds": 7, "strategy": "plan", "temperature": 9, "apiKey": "x"}, env
    )
    assert (s.model, s.rounds, s.strategy, s.temperature) == ("m2", 7, "plan", 0.1)
    assert any("temperature" in p for p in problems) and any(
        "apiKey ignored" in p for p in problems
    )
    s, _ = from_env({})
    assert (
        not s.ready
        and "OPENAI_BASE_URL" in s.not_ready_message()
        and "PTXLS_MODEL" in s.not_ready_message()
    )


@pytest.mark.parametrize(
    "reply",
    [
        "```ptx\n{ptx}```",
        "Here you go:\n```\n{ptx}```\nLaunch with 256 threads.",
        "```cuda\n__global__ void vec_add() {{}}\n```\nand the PTX:\n~~~asm\n{ptx}~~~\n",
        "{ptx}\nThat is the whole module.",
    ],
)
def test_extraction_finds_the_ptx_block(reply):
    ext = extract_ptx(reply.format(ptx=GOOD_VEC_ADD), "vec_add")
    assert ext.ptx is not None and ext.ptx.strip() == GOOD_VEC_ADD.strip()


def test_extraction_prefers_the_block_with_the_named_entry_and_reports_absence():
    other = GOOD_VEC_ADD.replace("vec_add", "helper")
    ext = extract_ptx(
        f"```ptx\n{other}```\n```ptx\n{GOOD_VEC_ADD}```\n```ptx\n{other}```", "vec_add"
    )
    assert ".entry vec_add" in ext.ptx
    assert extract_ptx("```python\nprint(1)\n```").ptx is None
    assert "none declares" in extract_ptx("```python\nprint(1)\n```").problem
    cut = extract_ptx("```ptx\n" + GOOD_VEC_ADD[:300], finish_reason="length")
    assert cut.truncated and "maxTokens" in cut.problem


def test_lower_cli_nvcc_backend(work, capsys, monkeypatch):
    monkeypatch.chdir(work)
    assert ptxls_main(["lower", "vec_add.cu", "--backend", "nvcc", "-q"]) == 0
    text = (work / "vec_add.ptx").read_text()
    assert ".entry vec_add(" in text and "backend: nvcc" in text
    out = capsys.readouterr()
    assert "vec_add.ptx" in out.out.strip().splitlines()[-1]
    assert "nvcc -ptx" not in out.err  # said once, on stdout


def test_lower_cli_without_endpoint_explains_and_exits_2(work, capsys, monkeypatch):
    monkeypatch.chdir(work)
    for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "PTXLS_MODEL"):
        monkeypatch.delenv(var, raising=False)
    assert ptxls_main(["lower", "vec_add.cu", "--backend", "llm"]) == 2
    assert "OPENAI_BASE_URL" in capsys.readouterr().err
    assert not (work / "vec_add.ptx").exists()


def test_lower_cli_llm_backend_against_the_scripted_server(work, capsys, monkeypatch):
    monkeypatch.chdir(work)
    with ScriptedLLM([Step(fenced(BROKEN_VEC_ADD)), Step(fenced(GOOD_VEC_ADD))]) as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-cli-secret-123456")
        monkeypatch.setenv("PTXLS_MODEL", "scripted-model")
        monkeypatch.setenv("PTXLS_LLM_RETRY_BACKOFF", "0.01")
        rc = ptxls_main(
            ["lower", "vec_add.cu", "--kernel", "vec_add", "--candidates", "1", "--rounds", "3",
             "--device", "gpu"]  # no emulator fall-back (tests/test_lowering_emulated.py)
        )  # fmt: skip
    out = capsys.readouterr()
    # no GPU here: ptxas-clean but not GPU-tested is exit 4, and the last line says so
    assert rc == 4, out.err
    assert "NOT GPU-tested" in out.out.strip().splitlines()[-1]
    text = (work / "vec_add.ptx").read_text()
    assert "backend: llm, model: scripted-model" in text
    assert "// rounds: 2 (candidate 1 of 1" in text
    assert "gpu test: not GPU-tested" in text
    assert strip_header(text).strip() == GOOD_VEC_ADD.strip()
    transcripts = list((work / ".ptxls" / "transcripts").glob("*.jsonl"))
    assert len(transcripts) == 1
    assert "sk-cli-secret-123456" not in transcripts[0].read_text()
    assert read(transcripts[0])[-1]["ok"] is True
    assert "round 1: ptxas: 1 error" in out.out


def test_lower_cli_exits_1_when_nothing_passed(work, capsys, monkeypatch):
    monkeypatch.chdir(work)
    with ScriptedLLM([Step(fenced(BROKEN_VEC_ADD))] * 4) as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        monkeypatch.setenv("PTXLS_MODEL", "scripted-model")
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        rc = ptxls_main(["lower", "vec_add.cu", "--candidates", "1", "--rounds", "2", "-q"])
    assert rc == 1
    assert not (work / "vec_add.ptx").exists()
    out = capsys.readouterr().out
    assert "no candidate passed" in out.strip().splitlines()[-1]
    # the best attempt is kept and named
    attempts = list((work / ".ptxls" / "attempts").glob("*.attempt.ptx"))
    assert len(attempts) == 1 and str(attempts[0].name) in out
    assert "NOT A PASSING RESULT" in attempts[0].read_text()


def test_lower_cli_describe_mode(work, capsys, monkeypatch):
    monkeypatch.chdir(work)
    with ScriptedLLM([Step(fenced(GOOD_VEC_ADD))]) as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        monkeypatch.setenv("PTXLS_MODEL", "scripted-model")
        rc = ptxls_main(
            [
                "lower",
                "--describe",
                "vec_add(const float* a, const float* b, float* c, int n): c = a + b",
                "--candidates",
                "1",
                "-q",
            ]
        )
        prompt = llm.chat_requests[0].body["messages"][1]["content"]
    assert rc == 4, capsys.readouterr().err  # no @gputest lines: nothing to test against
    assert '<source lang="text">' in prompt and "c = a + b" in prompt
    assert (work / "vec_add.ptx").exists()


def test_demo_step_lowers_vec_add_offline_and_explains_the_llm_step(monkeypatch):
    import io

    from ptxls.cli.demo_steps import lowering_step

    for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "PTXLS_MODEL"):
        monkeypatch.delenv(var, raising=False)
    out = io.StringIO()
    assert lowering_step(ROOT / "examples", out) is True
    text = out.getvalue()
    assert ".visible .entry vec_add(" in text and "backend: nvcc" in text
    assert "skipped: LLM lowering is not configured" in text
    assert not (ROOT / "examples" / "vec_add.nvcc.ptx").exists()


def test_lower_cli_optimize_a_ptx_file_writes_beside_it(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "vec_add.ptx").write_text(GOOD_VEC_ADD)
    variant = GOOD_VEC_ADD.replace("// Launch:", "// faster? Launch:")
    with ScriptedLLM([Step(fenced(variant))]) as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        monkeypatch.setenv("PTXLS_MODEL", "scripted-model")
        rc = ptxls_main(["lower", "vec_add.ptx", "--optimize", "--candidates", "1", "-q"])
        prompt = llm.chat_requests[0].body["messages"][1]["content"]
    assert rc in (0, 4), capsys.readouterr().err
    assert "Make it faster" in prompt and '<source lang="ptx"' in prompt
    assert (tmp_path / "vec_add.ptx").read_text() == GOOD_VEC_ADD  # the source is never overwritten
    assert "faster?" in (tmp_path / "vec_add.llm.ptx").read_text()
