"""Probe-trust, the key: an endpoint (or a proxy in front of it) may echo the key in other
forms than verbatim — URL-encoded (a key with '+', '/', '=' in a query), JSON-escaped, hex,
base64 (a Basic header, an encoded request dump), wrapped over two lines, upper-cased — and a
key may hold regex metacharacters. Through ``scrub`` and through the real CLI: no form of it
appears in stdout, stderr or any file the run leaves."""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

from ptxls.toolchain.secrets import REDACTED, scrub

from scripted_llm import ROOT, ScriptedLLM, Step

KEYS = [
    "sk-proj-LEAKCHECK-0123456789abcdefghij",
    "Pl41n+Key/with=Base64ish+chars0123",
    'k3y.*+?[](){}|^$\\ABCDEFGH"quote',
    "abcdefghijklmnopqrstuvwx",
]


def forms(key: str) -> dict[str, str]:
    raw = key.encode()
    return {
        "url-encoded": quote(key, safe=""),
        "url-encoded-lower-hex": re.sub(
            r"%[0-9A-F]{2}", lambda m: m.group().lower(), quote(key, safe="")
        ),  # fmt: skip
        "quote-plus": quote_plus(key),
        "json": json.dumps(key)[1:-1],
        "base64": base64.b64encode(raw).decode(),
        "base64url": base64.urlsafe_b64encode(raw).decode(),
        "basic-user-key": base64.b64encode(b"user:" + raw).decode(),
        "base64-in-blob": base64.b64encode(b'{"auth": "Bearer ' + raw + b'"}').decode(),
        "hex": raw.hex(),
        "split-newline": key[:12] + "\n" + key[12:],
        "split-crlf-indent": key[:10] + "\r\n    " + key[10:],
        "upper": key.upper(),
    }


def pieces(key: str) -> list[str]:
    """What counts as a leak: the key, or a long run of any of its forms."""
    out = [key]
    for form in forms(key).values():
        out += [form] if len(form) < 24 else [form[:20], form[-20:]]
    return out


@pytest.mark.parametrize("key", KEYS, ids=["sk-proj", "base64ish", "regex-meta", "plain"])
@pytest.mark.parametrize("form", list(forms(KEYS[0])))
def test_scrub_removes_every_form_of_the_key(monkeypatch, key, form):
    monkeypatch.setenv("OPENAI_API_KEY", key)
    text = f"upstream said: {forms(key)[form]} (request id 7)"
    out = scrub(text)
    assert forms(key)[form] not in out, out
    assert REDACTED in out and "request id 7" in out


def test_scrub_stays_fast_with_pieces_of_the_key_everywhere(monkeypatch):
    key = KEYS[0]
    monkeypatch.setenv("OPENAI_API_KEY", key)
    for text in [key[:16] * 300_000, (key[:8] + "\n") * 500_000, "x" * 5_000_000]:
        t = time.monotonic()
        scrub(text)
        assert time.monotonic() - t < 5.0


def _all_files(root: Path) -> str:
    return "\n".join(
        p.read_text(encoding="utf-8", errors="replace") for p in root.rglob("*") if p.is_file()
    )


def _env(llm: ScriptedLLM, key: str, base_url: str | None = None) -> dict:
    return dict(
        os.environ,
        OPENAI_BASE_URL=base_url or llm.base_url,
        OPENAI_API_KEY=key,
        PTXLS_MODEL="scripted-model",
        PTXLS_LLM_RETRY_BACKOFF="0.01",
        PTXLS_LLM_RETRIES="1",
    )


LOWER = [sys.executable, "-m", "ptxls.cli.main", "lower", "vec_add.cu", "--backend", "llm"]


@pytest.mark.parametrize("key", KEYS[:2], ids=["sk-proj", "base64ish"])
def test_cli_never_shows_an_encoded_echo_of_the_key(tmp_path, key):
    (tmp_path / "vec_add.cu").write_text((ROOT / "examples" / "vec_add.cu").read_text())
    echo = " | ".join(f"{name}={v}" for name, v in forms(key).items())
    with ScriptedLLM([Step(status=400, error=f"bad request: {echo}")] * 10) as llm:
        p = subprocess.run(LOWER, capture_output=True, text=True, env=_env(llm, key),
                           cwd=tmp_path, timeout=120)  # fmt: skip
    seen = p.stdout + p.stderr + _all_files(tmp_path)
    assert "400" in p.stdout + p.stderr
    leaked = [x for x in pieces(key) if x in seen]
    assert not leaked, (leaked, (p.stdout + p.stderr)[-1500:])


def test_cli_never_shows_credentials_of_the_base_url(tmp_path):
    (tmp_path / "vec_add.cu").write_text((ROOT / "examples" / "vec_add.cu").read_text())
    with ScriptedLLM([Step(status=500, error="upstream down")] * 10) as llm:
        url = llm.base_url.replace("://", "://bob:hunter2-userinfo-secret@")
        p = subprocess.run(LOWER, capture_output=True, text=True, env=_env(llm, KEYS[0], url),
                           cwd=tmp_path, timeout=120)  # fmt: skip
    seen = p.stdout + p.stderr + _all_files(tmp_path)
    assert "hunter2-userinfo-secret" not in seen, seen[-1500:]


def test_a_cancelled_run_leaves_no_key_in_its_transcript(tmp_path):
    key = KEYS[1]
    (tmp_path / "vec_add.cu").write_text((ROOT / "examples" / "vec_add.cu").read_text())
    steps = [Step(status=400, error=f"bad request {forms(key)['base64']}")] + [Step(delay=60)] * 5
    with ScriptedLLM(steps) as llm:
        env = _env(llm, key)
        env["PTXLS_LLM_RETRIES"] = "0"
        proc = subprocess.Popen(LOWER + ["--candidates", "2"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)  # fmt: skip
        deadline = time.monotonic() + 60
        while len(llm.chat_requests) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
    seen = out + err + _all_files(tmp_path)
    leaked = [x for x in pieces(key) if x in seen]
    assert not leaked, (leaked, seen[-1500:])


@pytest.mark.parametrize("key", KEYS, ids=["sk-proj", "base64ish", "regex-meta", "plain"])
def test_a_piece_of_the_key_cut_by_a_length_limit_is_removed(monkeypatch, key):
    # An error message shortened to N characters ends inside the key (or its base64): the
    # first 25 characters are most of it.
    monkeypatch.setenv("OPENAI_API_KEY", key)
    b64 = base64.b64encode(key.encode()).decode()
    for text in (f"said: {key[:20]}…", f"…{key[-20:]} end", f"base64={b64[:-6]}…"):
        out = scrub(text)
        assert key[:20] not in out and key[-20:] not in out and b64[:20] not in out, out
