"""Hostile input: the protocol is kept. Raw bytes to the real server process over stdio: broken
framing (a lying Content-Length either way, 10**12, garbage, a body that is not JSON, an endless
header line) is survived and the very next request is answered; every request gets a response
(-32602 for params that do not decode, -32600 for what is not JSON-RPC); the LSP lifecycle
(-32002 before initialize, -32600 after shutdown, exit code 1 for exit without shutdown)."""

from __future__ import annotations

import pytest
from raw_lsp import ROOT, RawServer, frame

PTX = ROOT / "examples" / "broken.ptx"
URI = PTX.as_uri()
TEXT = PTX.read_text()
LINE = next(i for i, line in enumerate(TEXT.splitlines()) if "mad.lo.s32" in line)
COL = TEXT.splitlines()[LINE].index("mad") + 1


def hover_ok(server: RawServer) -> None:
    reply = server.hover(URI, LINE, COL, timeout=10)
    assert "mad" in str(reply.get("result")), reply


@pytest.fixture(scope="module")
def server():
    """One server for the tests that damage the stream: each ends with two answered hovers,
    so the next starts on a stream in step (tests/test_probe_trust_protocol.py does the same)."""
    with RawServer() as s:
        s.initialize()
        s.open(URI, TEXT)
        hover_ok(s)
        yield s


def test_request_before_initialize_gets_32002():
    with RawServer() as s:
        rid = s.request("textDocument/hover", {
            "textDocument": {"uri": URI}, "position": {"line": 0, "character": 0}})  # fmt: skip
        assert s.wait_reply(rid)["error"]["code"] == -32002
        s.initialize()  # and the session still starts normally


@pytest.mark.parametrize(
    "params",
    [{"textDocument": 5}, {"textDocument": {"uri": URI}}, [1, 2], "x"],
    ids=["wrong-type", "missing-position", "array", "string"],
)
def test_params_that_do_not_decode_get_an_error_response(server, params):
    reply = server.wait_reply(server.request("textDocument/hover", params))
    assert reply["error"]["code"] == -32602, reply
    hover_ok(server)


def test_not_json_rpc_gets_32600(server):
    server.send(frame({"jsonrpc": "1.0", "id": 77, "method": "textDocument/hover"}))
    assert server.wait_reply(77)["error"]["code"] == -32600
    hover_ok(server)


@pytest.mark.parametrize(
    "junk",
    [
        b"garbage without a header\r\n\r\n",
        b"Content-Length: 1000000000000\r\n\r\n",  # 10**12: was a MemoryError
        b"Content-Length: 99999999999999999999999999\r\n\r\n",
        b"X" * 200_000 + b"\r\n\r\n",  # an endless header line
        frame(b"{not json at all"),
        frame({"jsonrpc": "2.0", "id": 5, "method": "textDocument/hover", "params": {}}, 20),
        frame({"jsonrpc": "2.0", "method": "$/nothing"}, 200),  # longer than the body
        b"\r\n\r\n\r\n",
    ],
    ids=[
        "garbage",
        "1e12",
        "26-digits",
        "long-line",
        "not-json",
        "short-length",
        "long-length",
        "blank-lines",
    ],  # fmt: skip
)
def test_framing_errors_resynchronise(server, junk):
    server.send(junk)
    hover_ok(server)  # the very next request is answered
    hover_ok(server)


def test_request_after_shutdown_gets_32600_and_exit_code_0():
    with RawServer() as s:
        s.initialize()
        assert s.wait_reply(s.request("shutdown"))["result"] is None
        rid = s.request("textDocument/hover", {
            "textDocument": {"uri": URI}, "position": {"line": 0, "character": 0}})  # fmt: skip
        assert s.wait_reply(rid)["error"]["code"] == -32600
        s.notify("exit")
        assert s.proc.wait(10) == 0


def test_exit_without_shutdown_exits_1():
    with RawServer() as s:
        s.initialize()
        s.notify("exit")
        assert s.proc.wait(10) == 1
