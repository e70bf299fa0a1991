"""Fuzzing one real server process: randomly damaged PTX buffers (didChange) and malformed LSP
messages (framing and params). After every batch the server must answer a hover, and at the
end every request that carried a usable id must have been answered. Used by
tests/test_fuzz_server.py (small counts, in CI) and bench/fuzz_server.py (the full counts)."""

from __future__ import annotations

import json
import random
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from raw_lsp import ROOT, RawServer, frame

SEED_TEXTS = [
    (ROOT / "examples" / "vec_add.ptx").read_text(),
    (ROOT / "examples" / "broken.ptx").read_text(),
]
HOVER_TIMEOUT_S = 10.0


@dataclass
class FuzzResult:
    buffers: int = 0
    messages: int = 0
    requests_sent: int = 0
    requests_answered: int = 0
    batches: int = 0
    hover_s: list[float] = field(default_factory=list)
    seconds: float = 0.0
    alive: bool = True
    rss_mb: float = 0.0
    failures: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        h = sorted(self.hover_s) or [0.0]
        return {
            "damaged_buffers": self.buffers,
            "malformed_messages": self.messages,
            "requests_with_id_sent": self.requests_sent,
            "requests_answered": self.requests_answered,
            "batches_each_followed_by_a_hover": self.batches,
            "hover_after_batch_median_ms": round(statistics.median(h) * 1000, 2),
            "hover_after_batch_max_ms": round(max(h) * 1000, 2),
            "seconds": round(self.seconds, 1),
            "server_alive_at_end": self.alive,
            "server_rss_mb_at_end": round(self.rss_mb, 1),
            "failures": self.failures[:20],
        }


# -- damaging PTX -------------------------------------------------------------------------------

_JUNK = [
    "\x00", "\ufeff", "é", "𝔁", "\r", "\r\n", "{", "}", ";", ".entry", ".reg .b32 %r<99999999>;",
    "%r", "@%p1 bra", "// @gputest sizes: 9**9**9", "/*", "*/", '"', "\t" * 50, "x" * 5000,
    ".version 99.9", ".target sm_1000", "ld.global.v4.f32", "\\", "\u202e",
]  # fmt: skip


def damage(text: str, rng: random.Random) -> str:
    """One to five random edits: delete a span, duplicate one, insert junk, flip bytes,
    truncate, or shuffle lines."""
    for _ in range(rng.randint(1, 5)):
        n = len(text)
        i, j = sorted(rng.randrange(n + 1) for _ in range(2)) if n else (0, 0)
        kind = rng.randrange(7)
        if kind == 0:
            text = text[:i] + text[j:]
        elif kind == 1:
            text = text[:j] + text[i:j] + text[j:]
        elif kind == 2:
            text = text[:i] + rng.choice(_JUNK) + text[i:]
        elif kind == 3 and n:
            chars = list(text)
            for _ in range(rng.randint(1, 10)):
                chars[rng.randrange(n)] = chr(rng.randrange(1, 0x3000))
            text = "".join(chars)
        elif kind == 4:
            text = text[:i]
        elif kind == 5:
            lines = text.split("\n")
            rng.shuffle(lines)
            text = "\n".join(lines)
        else:
            text = text + rng.choice(SEED_TEXTS)
        if len(text) > 200_000:
            text = text[:200_000]
    return text


# -- malformed messages --------------------------------------------------------------------------

_METHODS = [
    "textDocument/hover", "textDocument/codeLens", "textDocument/codeAction",
    "textDocument/completion", "textDocument/definition", "textDocument/references",
    "textDocument/documentSymbol", "workspace/executeCommand", "textDocument/didChange",
    "textDocument/didOpen", "textDocument/didClose", "textDocument/didSave",
    "workspace/didChangeConfiguration", "$/cancelRequest", "$/setTrace", "no/such/method",
    "initialize", "shutdown_not", "textDocument/semanticTokens/full",
]  # fmt: skip


def _value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(9 if depth < 3 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 1, 2**31, -(2**63), 2**64, 10**30])
    if kind == 3:
        return rng.choice([0.5, -1e308, 1e308, float("nan")]) if rng.random() < 0.5 else 3.0
    if kind == 4:
        return rng.choice(["", "x", "file:///", "file:///%ZZ", "\u0000", "a" * 10_000, "%r1"])
    if kind == 5:
        return rng.choice([[], {}, "file:///tmp/x.ptx"])
    if kind == 6:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    keys = ["textDocument", "position", "uri", "range", "line", "character", "contentChanges",
            "text", "command", "arguments", "settings", "context", "id", "version"]  # fmt: skip
    return {rng.choice(keys): _value(rng, depth + 1) for _ in range(rng.randint(0, 5))}


def _plausible_params(rng: random.Random, uri: str) -> dict:
    """Params shaped like the real thing, with one part wrong."""
    params = {
        "textDocument": {"uri": uri, "version": rng.randint(-5, 10**6)},
        "position": {"line": rng.randint(-3, 5000), "character": rng.randint(-3, 5000)},
        "range": {"start": {"line": rng.randint(-2, 99), "character": rng.randint(-2, 99)},
                  "end": {"line": rng.randint(-2, 99), "character": rng.randint(-2, 99)}},
        "context": {"diagnostics": []},
        "command": rng.choice(["ptxls.runGpuTest", "ptxls.showPtx", "ptxls.nope"]),
        "arguments": [uri, "k" * rng.randint(0, 300)],
        "contentChanges": [{"range": {"start": {"line": rng.randint(-2, 9999),
                                                "character": rng.randint(-2, 9999)},
                                      "end": {"line": rng.randint(-2, 9999),
                                              "character": rng.randint(-2, 9999)}},
                            "text": rng.choice(_JUNK)}],
    }  # fmt: skip
    key = rng.choice(list(params))
    params[key] = _value(rng)
    return params


def malformed(rng: random.Random, uri: str, next_id) -> tuple[bytes, object | None]:
    """(bytes to send, id of a request that must be answered or None)."""
    kind = rng.randrange(10)
    method = rng.choice(_METHODS)
    if method in ("initialize", "workspace/executeCommand") and rng.random() < 0.7:
        method = "textDocument/hover"  # keep the session and the GPU out of most of it
    if kind <= 3:  # a request with damaged params: must be answered
        msg_id = next_id()
        params = _plausible_params(rng, uri) if kind <= 1 else _value(rng)
        body = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
        if method == "workspace/executeCommand":
            body["params"] = {"command": "ptxls.nope", "arguments": [_value(rng)]}
        return frame(json.dumps(body, allow_nan=True).encode()), msg_id
    if kind == 4:  # a notification with damaged params
        body = {"jsonrpc": "2.0", "method": method, "params": _plausible_params(rng, uri)}
        return frame(json.dumps(body).encode()), None
    if kind == 5:  # not JSON
        raw = bytes(rng.randrange(256) for _ in range(rng.randint(0, 200)))
        return frame(raw), None
    if kind == 6:  # a lying Content-Length
        body = json.dumps({"jsonrpc": "2.0", "method": "$/x", "params": {}}).encode()
        return frame(body, max(0, len(body) + rng.randint(-len(body), 80))), None
    if kind == 7:  # garbage header lines, or an absurd length
        return rng.choice([
            b"Content-Length: 1000000000000\r\n\r\n", b"garbage\r\n\r\n",
            b"Content-Length: -5\r\n\r\n", b"Content-Type: x\r\n\r\n{}", b"\r\n" * 5,
            b"Content-Length: abc\r\n\r\n", b"Z" * rng.randint(1, 100_000) + b"\n",
        ]), None  # fmt: skip
    if kind == 8:  # JSON that is not JSON-RPC
        return frame(json.dumps(_value(rng)).encode()), None
    # a request with a bad id: answered with id null, nothing to wait for
    body = {"jsonrpc": "2.0", "id": _value(rng), "method": method}
    return frame(json.dumps(body).encode()), None


# -- the run -------------------------------------------------------------------------------------


def run_fuzz(
    *, buffers: int, messages: int, seed: int = 1, batch: int = 100, cwd: str | None = None
) -> FuzzResult:
    rng = random.Random(seed)
    res = FuzzResult()
    started = time.monotonic()
    ids = iter(range(10**6, 10**9))
    outstanding: list = []
    with RawServer(cwd=cwd) as server:
        server.initialize(cwd, {"ptxls": {"debounceMs": 50}})
        uri = Path(cwd or "/tmp").joinpath("fuzz me.ptx").as_uri()
        base = SEED_TEXTS[0]
        server.open(uri, base)
        version = 1

        def check_alive(label: str) -> None:
            t0 = time.monotonic()
            try:
                server.hover(uri, 0, 0, timeout=HOVER_TIMEOUT_S)
            except (TimeoutError, EOFError) as e:
                res.failures.append(f"{label}: no hover ({e})")
                raise
            res.hover_s.append(time.monotonic() - t0)
            res.batches += 1

        # 1. damaged buffers, full replacements and incremental edits with random ranges
        text = base
        for i in range(buffers):
            text = damage(rng.choice([text, base, SEED_TEXTS[1]]), rng)
            version += 1
            if rng.random() < 0.8:
                changes = [{"text": text}]
            else:
                changes = [{"range": {
                    "start": {"line": rng.randint(0, 60), "character": rng.randint(0, 80)},
                    "end": {"line": rng.randint(0, 60), "character": rng.randint(0, 80)}},
                    "text": rng.choice(_JUNK)}]  # fmt: skip
            server.notify("textDocument/didChange", {
                "textDocument": {"uri": uri, "version": version}, "contentChanges": changes})  # fmt: skip
            res.buffers += 1
            if (i + 1) % batch == 0:
                check_alive(f"after buffer {i + 1}")
        # a sane buffer again, then the broken messages
        version += 1
        server.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": base}]})  # fmt: skip
        for i in range(messages):
            data, msg_id = malformed(rng, uri, lambda: next(ids))
            server.send(data)
            res.messages += 1
            if msg_id is not None:
                outstanding.append(msg_id)
            if (i + 1) % batch == 0:
                # a framing error may have swallowed the last bytes; one blank frame flushes it
                server.send(b"\r\n")
                check_alive(f"after message {i + 1}")
        check_alive("at the end")
        res.requests_sent = len(outstanding)
        for msg_id in outstanding:
            try:
                server.wait_reply(msg_id, timeout=30)
                res.requests_answered += 1
            except TimeoutError:
                res.failures.append(f"request {msg_id} was never answered")
        res.alive = server.proc.poll() is None
        try:
            status = Path(f"/proc/{server.proc.pid}/status").read_text()
            res.rss_mb = next(
                int(line.split()[1]) / 1024 for line in status.splitlines()
                if line.startswith("VmRSS:")
            )  # fmt: skip
        except (OSError, StopIteration):
            pass
    res.seconds = time.monotonic() - started
    return res
