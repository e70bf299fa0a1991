"""Probe-trust, protocol: inputs the first hostile suite did not send, against the real server
process over raw stdio. Each must leave the server answering hovers on the document it had open."""

from __future__ import annotations

import json

import pytest
from raw_lsp import ROOT, RawServer, frame

PTX = ROOT / "examples" / "broken.ptx"
URI = PTX.as_uri()
TEXT = PTX.read_text()
LINE = next(i for i, line in enumerate(TEXT.splitlines()) if "mad.lo.s32" in line)
COL = TEXT.splitlines()[LINE].index("mad") + 1
HOVER = {
    "jsonrpc": "2.0",
    "id": 4242,
    "method": "textDocument/hover",
    "params": {"textDocument": {"uri": URI}, "position": {"line": LINE, "character": COL}},
}
BODY = json.dumps(HOVER).encode()


def hover_ok(server: RawServer) -> None:
    reply = server.hover(URI, LINE, COL, timeout=10)
    assert "mad" in str(reply.get("result")), reply


@pytest.fixture(scope="module")
def server():
    # One process for the whole module: what one input breaks shows up in the next one too.
    with RawServer() as s:
        s.initialize()
        s.open(URI, TEXT)
        hover_ok(s)
        yield s


def test_second_initialize_is_refused_and_keeps_the_open_documents(server):
    # pygls ran it again and replaced the workspace: every later hover answered null.
    reply = server.wait_reply(server.request("initialize", {"capabilities": {}}))
    assert reply["error"]["code"] == -32600, reply
    hover_ok(server)


@pytest.mark.parametrize(
    "data",
    [
        b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n",
        b"content-length: %d\r\n\r\n" % len(BODY) + BODY,
        b"Content-Length: 5\r\nContent-Length: %d\r\n\r\n" % len(BODY) + BODY,
        b"Content-Length: -5\r\n\r\n" + BODY,
        b"Content-Length: +%d\r\n\r\n" % len(BODY) + BODY,
        b"Content-Length: 0x10\r\n\r\n" + BODY,
        b"Content-Length: 0\r\n\r\n",
        b"\n" * (8 << 20),
        frame([{"jsonrpc": "2.0", "id": 3, "method": "textDocument/hover", "params": {}}]),
        frame(b"[]"),
        frame({"jsonrpc": "2.0", "id": {"a": 1}, "method": "shutdown"}),
        frame({"jsonrpc": "2.0", "id": 1.5, "method": "shutdown"}),
        frame({"jsonrpc": "2.0", "id": True, "method": "shutdown"}),
        frame({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 987654}}),
        frame({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": {"x": 1}}}),
        frame(b"[" * 100_000),
        frame(b"[" * 100_000 + b"]" * 100_000),
        frame(b'{"jsonrpc":"2.0","id":8,"method":"textDocument/hover","params":{"x":"\xff\xfe"}}'),
        frame(b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"shutdown"}'),
        frame({"jsonrpc": "2.0", "id": 424242, "result": {"x": 1}}),
        frame(
            {
                "jsonrpc": "2.0",
                "method": "textDocument/didChange",
                "params": {
                    "textDocument": {"uri": URI + "x", "version": 2},
                    "contentChanges": [
                        {
                            "range": {
                                "start": {"line": 10**9, "character": 10**9},
                                "end": {"line": -1, "character": -5},
                            },
                            "text": "x",
                        }
                    ],
                },
            }
        ),  # fmt: skip
    ],
    ids=[
        "content-type-only",
        "lowercase-length",
        "duplicate-length",
        "negative-length",
        "plus-length",
        "hex-length",
        "zero-length",
        "8MB-of-newlines",
        "batch-array",
        "empty-batch",
        "object-id",
        "float-id",
        "bool-id",
        "cancel-unknown-id",
        "cancel-object-id",
        "100k-open-brackets",
        "100k-nested-arrays",
        "invalid-utf8",
        "5000-digit-id",
        "response-to-nothing",
        "change-of-unknown-doc-bad-range",
    ],  # fmt: skip
)
def test_more_framing_and_message_edges(server, data):
    server.send(data)
    hover_ok(server)


def test_a_message_written_one_byte_at_a_time_is_answered(server):
    msg = frame(HOVER | {"id": 4243})
    for i in range(len(msg)):
        server.proc.stdin.write(msg[i : i + 1])
        server.proc.stdin.flush()
    assert "mad" in str(server.wait_reply(4243).get("result"))


@pytest.mark.parametrize("command", ["ptxls.showPtx", "ptxls.openLibraryKernel"])
def test_a_megabyte_kernel_name_is_not_echoed_back(server, command):
    # Both answered with the 5 MB name inside their summary (and Show PTX compiled for it).
    reply = server.wait_reply(
        server.request(
            "workspace/executeCommand",
            {"command": command, "arguments": [URI, "k" * 5_000_000, "x"]},
        ),
        timeout=60,
    )
    assert len(json.dumps(reply)) < 20_000, json.dumps(reply)[:300]
    hover_ok(server)
