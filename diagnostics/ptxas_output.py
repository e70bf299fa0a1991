"""Parse what ptxas prints into messages, and place each on its token.

Two shapes carry a line number, the standalone tool's and the driver JIT's log (docs/gpu-facts.md):

    ptxas /tmp/k.ptx, line 7; error   : Unknown symbol '%p1'
    ptxas application ptx input, line 7; error   : Unknown symbol '%p1'

Others name no line (``ptxas fatal   : Unresolved extern function 'f'``); they belong to the
whole file, or to the entry they name. The closing ``Ptx assembly aborted due to errors`` only
repeats that errors happened and is dropped. Spacing before the colon varies between releases.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .model import Problem, Severity

_WITH_LINE = re.compile(
    r"^\s*ptxas\s+(?P<file>.+?),\s*line\s+(?P<line>\d+)\s*;\s*"
    r"(?P<sev>error|warning|fatal|info)\s*:\s*(?P<msg>.*?)\s*$",
    re.IGNORECASE,
)
_NO_LINE = re.compile(
    r"^\s*ptxas\s+(?P<sev>error|warning|fatal|info)\s*:\s*(?P<msg>.*?)\s*$", re.IGNORECASE
)
_ABORTED = re.compile(r"ptx assembly aborted due to errors", re.IGNORECASE)
_ON_LINE = re.compile(r"\bon line (\d+)\b")
_QUOTED = re.compile(r"'([^']+)'")
_FUNCTION_NAME = re.compile(r"\b(?:function|entry)\s+'?([A-Za-z_$][\w$]*)'?", re.IGNORECASE)


@dataclass(frozen=True)
class PtxasMessage:
    severity: Severity
    text: str
    line: int | None  # 1-based as ptxas prints it; None when the message names no line
    file: str | None = None


MAX_MESSAGE_CHARS = 2000


def _severity(word: str) -> Severity:
    word = word.lower()
    if word in ("error", "fatal"):
        return Severity.ERROR
    if word == "warning":
        return Severity.WARNING
    return Severity.INFO


def parse_ptxas_output(output: str) -> list[PtxasMessage]:
    """Every error/warning/fatal message, in order. ``info`` lines (from ``-v``) are left to
    the resource-usage parser."""
    messages: list[PtxasMessage] = []
    for raw in output.splitlines():
        if _ABORTED.search(raw):
            continue
        m = _WITH_LINE.match(raw)
        if m:
            if m.group("sev").lower() == "info":
                continue
            messages.append(
                PtxasMessage(
                    _severity(m.group("sev")), m.group("msg"), int(m.group("line")), m.group("file")
                )
            )
            continue
        m = _NO_LINE.match(raw)
        if m and m.group("sev").lower() != "info":
            # Some fatal messages carry the line in their text: "... encountered on line 2".
            on_line = _ON_LINE.search(m.group("msg"))
            line = int(on_line.group(1)) if on_line else None
            messages.append(PtxasMessage(_severity(m.group("sev")), m.group("msg"), line))
    return messages


def _code_part(line_text: str) -> tuple[int, int]:
    """Columns of the line's text without indentation and trailing // comment."""
    end = len(line_text)
    comment = line_text.find("//")
    if comment >= 0:
        end = comment
    stripped_end = len(line_text[:end].rstrip())
    start = len(line_text) - len(line_text.lstrip())
    if stripped_end <= start:
        return start, max(len(line_text.rstrip()), start)
    return start, stripped_end


def _token_span(line_text: str, token: str) -> tuple[int, int] | None:
    """Where ``token`` stands in the line as a whole token (``%r1`` must not match in ``%r10``)."""
    if not token:
        return None
    pattern = re.compile(r"(?<![\w%$.])" + re.escape(token) + r"(?![\w$])")
    m = pattern.search(line_text)
    if m:
        return m.start(), m.end()
    # Opcodes are quoted bare ('ld') but written with modifiers (ld.global.f32).
    m = re.compile(r"(?<![\w%$.])" + re.escape(token) + r"(?=\.)").search(line_text)
    if m:
        end = m.end()
        while end < len(line_text) and (line_text[end].isalnum() or line_text[end] in "._"):
            end += 1
        return m.start(), end
    return None


def place_messages(
    messages: list[PtxasMessage], lines: list[str], source: str = "ptxas"
) -> list[Problem]:
    """Turn messages into problems on the right token of the right line. Callers cap the number
    of messages first (a broken 100k-line file yields 100k messages; nobody reads past the
    first few hundred), and a message's text is cut at MAX_MESSAGE_CHARS (ptxas echoes names,
    and a name can be megabytes long)."""
    problems: list[Problem] = []
    function_lines: dict[str, int] = {}
    for msg in messages:
        if len(msg.text) > MAX_MESSAGE_CHARS:
            msg = PtxasMessage(msg.severity, msg.text[:MAX_MESSAGE_CHARS] + "…", msg.line, msg.file)
        line_no = _line_for(msg, lines, function_lines)
        text = lines[line_no] if 0 <= line_no < len(lines) else ""
        span = None
        for token in _QUOTED.findall(msg.text):
            span = _token_span(text, token)
            if span:
                break
        if span is None and "non-ascii" in msg.text.lower():
            bad = re.search(r"[^\x00-\x7f]", text)
            span = (bad.start(), bad.end()) if bad else None
        start, end = span or _code_part(text)
        problems.append(Problem(line_no, start, end, msg.severity, msg.text, source))
    return problems


def _line_for(msg: PtxasMessage, lines: list[str], seen: dict[str, int] | None = None) -> int:
    if msg.line is not None:
        return min(max(msg.line - 1, 0), max(len(lines) - 1, 0))
    # A message without a line that names a function goes on that function's .entry/.func line.
    m = _FUNCTION_NAME.search(msg.text)
    if m:
        if seen is not None and m.group(1) in seen:
            return seen[m.group(1)]
        found = 0
        name = re.compile(r"\.(?:entry|func)\b.*?\b" + re.escape(m.group(1)) + r"\b")
        for i, text in enumerate(lines):
            if (".entry" in text or ".func" in text) and name.search(text):
                found = i
                break
        if seen is not None:
            seen[m.group(1)] = found
        return found
    return 0
