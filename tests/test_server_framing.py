"""The server's message reader in this process (``server/framing.py``): messages cut at any byte,
blank lines and junk between messages, a body that is not JSON holding the next header. The
same reader behind the real process is tested byte by byte in test_hostile_protocol.py."""

from __future__ import annotations

import io
import json
import logging

from ptxls.server.framing import END, PARSE_FAILED, MessageReader, Parsed


def frame(obj) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class Trickle(io.RawIOBase):
    """A pipe that gives at most ``step`` bytes a read, as a slow client's does."""

    def __init__(self, data: bytes, step: int):
        self.data, self.step, self.at = data, step, 0

    def readable(self) -> bool:
        return True

    def read1(self, n: int = -1) -> bytes:
        piece = self.data[self.at : self.at + min(n if n > 0 else self.step, self.step)]
        self.at += len(piece)
        return piece

    read = read1

    def fileno(self) -> int:
        raise OSError("not a file")


def messages(data: bytes, step: int = 1 << 16) -> list:
    reader, out = MessageReader(Trickle(data, step)), []
    while (m := reader.next_message()) is not END:
        out.append(m.data if isinstance(m, Parsed) else m)
    return out


MSGS = [{"jsonrpc": "2.0", "id": i, "method": "m", "params": {"s": "é" * i}} for i in range(3)]


def test_messages_cut_at_every_byte_or_in_big_reads_are_the_same():
    data = b"".join(frame(m) for m in MSGS)
    for step in (1, 2, 7, 1 << 16):
        assert messages(data, step) == MSGS, step


def test_blank_lines_between_messages_are_skipped_silently(caplog):
    data = b"\r\n" * 1000 + frame(MSGS[0]) + b"\n" * (8 << 20) + frame(MSGS[1]) + b" \t\r\n"
    with caplog.at_level(logging.WARNING):
        assert messages(data) == MSGS[:2]
    assert not caplog.records


def test_a_run_of_junk_lines_is_said_once_with_its_size(caplog):
    junk = b"junk\n" * 50_000
    data = frame(MSGS[0]) + junk + frame(MSGS[1]) + b"x\n" + frame(MSGS[2]) + b"tail\n"
    with caplog.at_level(logging.WARNING):
        assert messages(data, step=4096) == MSGS
    said = [r.getMessage() for r in caplog.records]
    assert said == [
        f"ignored {len(junk)} bytes (50000 lines) of input that are not an LSP header",
        "ignored 2 bytes (1 line) of input that are not an LSP header",
        "ignored 5 bytes (1 line) of input that are not an LSP header",
    ]


def test_a_body_that_is_not_json_gives_way_to_the_header_inside_it():
    # a Content-Length that lies long swallows the next message's start: it is read again
    second = frame(MSGS[1])
    data = b"Content-Length: %d\r\n\r\n{not json" % (9 + 20) + second
    assert messages(data, step=5) == [PARSE_FAILED, MSGS[1]]


def test_a_pushed_back_body_of_junk_lines_is_read_through_to_the_next_message(caplog):
    # the resync pushes back everything from the first "Content-Length:" inside a bad body; the
    # lines after it are junk, and the message after the body is still read
    bad = b"{Content-Length: zz\n" + b"j\n" * 100_000
    data = b"Content-Length: %d\r\n\r\n" % len(bad) + bad + frame(MSGS[0])
    with caplog.at_level(logging.WARNING):
        assert messages(data) == [PARSE_FAILED, MSGS[0]]
    assert [r.getMessage() for r in caplog.records if "LSP header" in r.getMessage()] == [
        "ignored 200019 bytes (100001 lines) of input that are not an LSP header"
    ]
