"""The reply corpus in tests/data/replies/: each ``NAME.txt`` is a reply as a model sent it
(bytes as sent: CRLF and lone CR kept), ``NAME.json`` says what it is and what extraction must
make of it, ``ptx/*.ptx`` are the reference modules the replies were written around."""

from __future__ import annotations

import json
from pathlib import Path

REPLIES = Path(__file__).resolve().parent / "data" / "replies"
CASES = sorted(p.stem for p in REPLIES.glob("*.json"))
REFERENCE = {p.stem: p.read_text() for p in (REPLIES / "ptx").glob("*.ptx")}


def load(name: str) -> tuple[str, dict]:
    """(the reply, its sidecar). Decoded by hand: read_text() would turn CRLF and CR into LF."""
    reply = (REPLIES / f"{name}.txt").read_bytes().decode("utf-8")
    return reply, json.loads((REPLIES / f"{name}.json").read_text())
