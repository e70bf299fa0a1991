"""Is this buffer text at all? Binary or mis-decoded content gets one clear problem instead of
hundreds of ptxas complaints about garbage."""

from __future__ import annotations

import re

from .model import Problem, Severity

# NUL, other C0 controls except tab/newline/CR/form feed, and U+FFFD (what a non-UTF-8 byte
# becomes when an editor or our CLI decodes it with replacement).
_BAD = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\ufffd]")


def binary_problem(text: str, source: str = "ptxls") -> Problem | None:
    m = _BAD.search(text)
    if not m:
        return None
    line = text.count("\n", 0, m.start())
    col = m.start() - (text.rfind("\n", 0, m.start()) + 1)
    ch = m.group(0)
    what = (
        "a byte that is not valid UTF-8"
        if ch == "\ufffd"
        else f"a control character (U+{ord(ch):04X})"
    )
    return Problem(
        line,
        col,
        col + 1,
        Severity.ERROR,
        f"this file holds {what} here, so it is not PTX text; ptxas was not run "
        "(open the right file, or remove the binary content)",
        source,
        code="binary-content",
    )


def decode_bytes(data: bytes) -> str:
    """Bytes from disk as text: UTF-8 (with BOM) or, failing that, replacement characters that
    binary_problem() then points at."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return data.decode("utf-8", errors="replace")
