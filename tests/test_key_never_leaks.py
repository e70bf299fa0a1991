"""The API key stays with its endpoint. An endpoint that echoes the key in its error bodies
(401, 400, 500 — some proxies and self-hosted servers do) is driven through the real CLI process
and through the real server process (pytest-lsp, verbose logging on): the key appears in no
stdout, stderr, LSP message (showMessage, logMessage, progress, command result) and no file the
run leaves behind. ``scrub`` itself is tested on the shapes a key takes in text."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from ptxls.toolchain.secrets import REDACTED, public_url, scrub

from scripted_llm import ROOT, ScriptedLLM, Step

SECRET = "sk-proj-LEAKCHECK-0123456789abcdefghij"
ECHOES = {
    401: Step(status=401, error="Incorrect API key provided: {key}", echo_key=True),
    400: Step(status=400, error="Bad request from key {key}", echo_key=True),
    500: Step(status=500, error="upstream failed for Authorization: Bearer {key}", echo_key=True),
}


def _leaks(text: str) -> list[str]:
    """Pieces of the key found in ``text`` (the whole key, or a long part of it)."""
    return [p for p in (SECRET, SECRET[8:30], SECRET[-16:]) if p in text]


def _files_under(root: Path) -> str:
    out = []
    for p in root.rglob("*"):
        if p.is_file():
            out.append(p.read_text(encoding="utf-8", errors="replace"))
    return "\n".join(out)


# ---- scrub


@pytest.mark.parametrize(
    "text",
    [
        f"Incorrect API key provided: {SECRET}.",
        "Authorization: Bearer abcDEF123456789xyz",
        'headers: {"Authorization": "Bearer abcDEF123456789xyz"}',
        "authorization=Basic dXNlcjpwYXNzd29yZA==",
        "GET https://llm.example.com/v1/chat?api_key=abcDEF123456789xyz&x=1",
        "https://llm.example.com/v1?key=abcDEF123456789xyz",
        "base url https://bob:hunter2secretpw@llm.example.com/v1",
        '{"api_key": "abcDEF123456789xyz"}',
        "x-api-key: abcDEF123456789xyz",
        "an Anthropic key sk-ant-api03-abcDEF123456789xyz",
        "token ghp_abcdefghijklmnopqrstuvwxyz0123",
    ],
)
def test_scrub_removes_keys_in_every_shape(text):
    out = scrub(text)
    assert REDACTED in out
    for secret in ("abcDEF123456789xyz", SECRET, "hunter2secretpw", "dXNlcjpwYXNzd29yZA", "ghp_"):
        assert secret not in out, out


def test_scrub_removes_the_configured_key_whatever_its_shape(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "plainkey-without-any-prefix-42")
    assert "plainkey" not in scrub("the server said: plainkey-without-any-prefix-42 is bad")
    assert "zzzz" not in scrub("x zzzz-custom-key-value y", key="zzzz-custom-key-value")


@pytest.mark.parametrize(
    "pieces",
    [
        [
            "the key is ",
            "plainkey-with",
            "out-any-prefix-42",
            "\n",
        ],  # print(a, b) writes a, " ", b, "\n"
        ["plainkey-without-any-prefix-42"[:i] for i in (7,)]
        + ["plainkey-without-any-prefix-42"[7:], "\r"],
        ["Authorization: Bearer ", "sk-proj-abc", "DEF123456789xyz0", " tail"],  # ended by flush
    ],
)
def test_the_clis_stream_scrubs_a_key_written_in_pieces(monkeypatch, pieces):
    import io

    from ptxls.toolchain.secrets import ScrubbingStream

    monkeypatch.setenv("OPENAI_API_KEY", "plainkey-without-any-prefix-42")
    inner = io.StringIO()
    stream = ScrubbingStream(inner)
    for piece in pieces:
        assert stream.write(piece) == len(piece)
    stream.flush()
    out = inner.getvalue()
    assert REDACTED in out, out
    assert "prefix-42" not in out and "DEF123456789xyz0" not in out, out


def test_the_clis_stream_passes_whole_lines_at_once_and_holds_nothing_after_a_flush():
    import io

    from ptxls.toolchain.secrets import ScrubbingStream

    inner = io.StringIO()
    stream = ScrubbingStream(inner)
    stream.write("line one\nhalf")
    assert inner.getvalue() == "line one\n"
    stream.write(" a line\n")
    assert inner.getvalue() == "line one\nhalf a line\n"
    stream.write("prompt> ")
    stream.flush()
    assert inner.getvalue().endswith("prompt> ")


@pytest.mark.parametrize(
    "text",
    [
        "ptxas error at line 12: Arguments mismatch for instruction 'add'",
        "    add.f32             %f3, %f1, %f2;",
        ".visible .entry vec_add(\n    .param .u64 vec_add_param_a,",
        "the reply stopped at the token limit (finish_reason: length); raise ptxls.llm.maxTokens",
        "cannot reach http://localhost:11434/v1: connection refused",
        "max_tokens=8192 and a bearer of bad news",
    ],
)
def test_scrub_leaves_ordinary_text_alone(text):
    assert scrub(text) == text


def test_scrub_is_linear_on_hostile_text():
    for text in (
        "Bearer " * 700_000,
        "sk-" * 1_600_000,
        "http://a" * 600_000,
        "api_key=" * 600_000,
    ):
        started = time.perf_counter()
        scrub(text)
        assert time.perf_counter() - started < 3.0


def test_public_url_drops_credentials():
    assert public_url("https://bob:pw123456@h.example/v1?api_key=zzzzzzzz") == (
        f"https://{REDACTED}@h.example/v1?{REDACTED}"
    )
    assert public_url("http://localhost:11434/v1") == "http://localhost:11434/v1"


def test_doctor_shows_no_credentials_of_the_base_url():
    env = dict(
        os.environ,
        OPENAI_BASE_URL="https://bob:hunter2secretpw@llm.example.com/v1?api_key=qqqqqqqqqqqq",
        OPENAI_API_KEY=SECRET,
    )
    for args in (["doctor"], ["doctor", "--json"]):
        p = subprocess.run(
            [sys.executable, "-m", "ptxls.cli.main", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        both = p.stdout + p.stderr
        assert "llm.example.com" in both
        assert "hunter2secretpw" not in both and "qqqqqqqqqqqq" not in both and not _leaks(both)


# ---- the CLI


@pytest.mark.parametrize("status", sorted(ECHOES))
def test_cli_lower_never_prints_or_writes_an_echoed_key(tmp_path, status):
    (tmp_path / "vec_add.cu").write_text((ROOT / "examples" / "vec_add.cu").read_text())
    with ScriptedLLM([ECHOES[status]] * 10) as llm:
        env = dict(
            os.environ,
            OPENAI_BASE_URL=llm.base_url,
            OPENAI_API_KEY=SECRET,
            PTXLS_MODEL="scripted-model",
            PTXLS_LLM_RETRY_BACKOFF="0.01",
            PTXLS_LLM_RETRIES="1",
        )
        p = subprocess.run(
            [sys.executable, "-m", "ptxls.cli.main", "lower", "vec_add.cu", "--backend", "llm"],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
        )
        # the key did reach the endpoint, where it belongs
        assert llm.chat_requests[0].headers["authorization"] == f"Bearer {SECRET}"
    assert p.returncode != 0
    assert str(status) in p.stdout + p.stderr  # the error itself is reported
    assert not _leaks(p.stdout) and not _leaks(p.stderr), (p.stdout + p.stderr)[-2000:]
    written = _files_under(tmp_path)
    assert ".jsonl" in " ".join(str(x) for x in tmp_path.rglob("*.jsonl"))  # a transcript exists
    assert not _leaks(written)


# ---- the server


LLM = ScriptedLLM().start()
ENV = {
    **os.environ,
    "OPENAI_BASE_URL": LLM.base_url,
    "OPENAI_API_KEY": SECRET,
    "PTXLS_MODEL": "scripted-model",
    "PTXLS_LLM_RETRY_BACKOFF": "0.01",
    "PTXLS_LLM_RETRIES": "1",
}


@pytest.fixture(scope="module", autouse=True)
def _stop_llm():
    yield
    LLM.stop()


def _init(root: Path, options=None) -> types.InitializeParams:
    return types.InitializeParams(
        capabilities=types.ClientCapabilities(
            workspace=types.WorkspaceClientCapabilities(configuration=False, apply_edit=True),
            window=types.WindowClientCapabilities(work_done_progress=True),
        ),
        root_uri=root.as_uri(),
        initialization_options={"ptxls": {"llm": {"candidates": 1, "maxRounds": 2}}},
    )


# verbose: pygls logs every message, so a key in any message would reach stderr
pytestmark = pytest.mark.lsp(env=ENV, server_args=["-v"], init=_init)


async def test_server_messages_results_progress_and_log_never_carry_an_echoed_key(
    client: LanguageClient, tmp_path, capfd
):
    cu = tmp_path / "vec_add.cu"
    cu.write_text((ROOT / "examples" / "vec_add.cu").read_text())
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=cu.as_uri(), language_id="cuda", version=1, text=cu.read_text()
            )
        )
    )
    results = []
    for status in sorted(ECHOES):
        LLM.set_script([ECHOES[status]] * 10)
        results.append(
            await client.workspace_execute_command_async(
                types.ExecuteCommandParams(
                    command="ptxls.lowerToPtx", arguments=[cu.as_uri(), "vec_add", "llm"]
                )
            )
        )
    assert LLM.chat_requests[-1].headers["authorization"] == f"Bearer {SECRET}"
    assert all(not r["ok"] for r in results)
    # text from outside that the server repeats (here a kernel name in the command's
    # arguments) is scrubbed on the wire too, not only the LLM client's errors
    echoed = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="ptxls.lowerToPtx", arguments=[cu.as_uri(), f"no_such_{SECRET}", "nvcc"]
        )
    )
    assert not echoed["ok"] and "no_such_" in echoed["summary"], echoed
    assert REDACTED in echoed["summary"]
    results.append(echoed)
    said = "\n".join(
        [repr(r) for r in results]
        + [m.message for m in client.messages]
        + [m.message for m in client.log_messages]
        + [repr(r) for rs in client.progress_reports.values() for r in rs]
    )
    assert "401" in said and "500" in said  # the errors are reported ...
    assert not _leaks(said), said[-3000:]  # ... without the key
    assert not _leaks(_files_under(tmp_path))
    err = capfd.readouterr().err  # the server's stderr, forwarded by pytest-lsp
    assert "Sending data" in err  # verbose logging really was on
    assert not _leaks(err), err[-3000:]
