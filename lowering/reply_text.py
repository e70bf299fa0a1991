"""A model's reply made plain text: line endings normalised, invisible characters removed,
markdown block quotes and ``<pre><code>`` read as text and fences, and reasoning sections
(``<think>``, ``<thinking>``, ``<reasoning>``, Harmony's analysis channel) set aside; a reply
that is a JSON object (or a tool call) unwrapped to its PTX member, and line breaks written as
``\\n`` decoded.

Stage 1 of reading a reply (``extract.py`` has the rules and runs the stages). Linear in the
reply's size: each pass scans the text once with bounded patterns.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from .reply_blocks import starts_ptx

_THINK_TAGS = ("think", "thinking", "reasoning", "thought")


def normalise(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


# Characters a model (or the chat UI it learned from) puts into text that ptxas rejects and
# nobody can see: zero-width spaces and joiners, word joiners, the byte-order mark (also at
# the start of a reply), and Unicode spaces (no-break, thin, ideographic) used for
# indentation. The invisible ones are dropped, the spaces become ' '; both are safe anywhere
# in PTX, code or comment, and without this an otherwise right kernel fails a whole round on
# "Unexpected non-ASCII character".
_INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff\u00ad"
_UNICODE_SPACES = (
    "\u00a0\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000"
)
_INVISIBLE_TABLE = {
    **dict.fromkeys(map(ord, _INVISIBLE)),
    **dict.fromkeys(map(ord, _UNICODE_SPACES), " "),
}


def clean_invisible(text: str) -> tuple[str, int]:
    """(text without invisible characters and with Unicode spaces as ' ', how many changed)."""
    if text.isascii():
        return text, 0
    n = sum(map(text.count, _INVISIBLE + _UNICODE_SPACES))
    return (text.translate(_INVISIBLE_TABLE), n) if n else (text, 0)


_QUOTED = re.compile(r"[ \t]{0,3}(?:> ?){1,8}")


def unquote(lines: list[str]) -> tuple[list[str], int]:
    """Markdown block quotes ('> ' before every line) taken off every run of quoted lines
    that holds PTX or a fence: models quoting their answer, or a chat UI's quoting pasted
    back. No PTX line starts with '>', so a quoted run is never code. One pass."""
    if not any(line.lstrip(" \t").startswith(">") for line in lines):
        return lines, 0
    out = list(lines)
    unquoted = 0
    i, n = 0, len(lines)
    while i < n:
        m = _QUOTED.match(lines[i])
        if not m or not lines[i].lstrip(" \t").startswith(">"):
            i += 1
            continue
        j = i
        run: list[str] = []
        while j < n:
            m = _QUOTED.match(lines[j])
            if not (m and lines[j].lstrip(" \t").startswith(">")):
                break
            run.append(lines[j][m.end() :])
            j += 1
        if any(starts_ptx(r.strip()) or r.lstrip().startswith(("```", "~~~")) for r in run):
            out[i:j] = run
            unquoted += j - i
        i = j
    return out, unquoted


# only the <pre><code …> … </code></pre> pair (what HTML renderers emit): a bare "<pre>"
# mentioned in prose must not open a block that swallows the rest of the reply
_HTML_PRE = re.compile(r"(?i)<pre(?:[ \t][^<>\n]{0,200})?>[ \t]*<code(?:[ \t][^<>\n]{0,200})?>")
_HTML_PRE_END = re.compile(r"(?i)</code>[ \t]*</pre>")
HTML_ENTITY = re.compile(r"&(?:lt|gt|amp|quot|apos|#[0-9]{1,7}|#x[0-9a-fA-F]{1,6});")


def html_blocks_as_fences(answer: str) -> str:
    """``<pre><code>…</code></pre>`` (an HTML-rendering UI or a model trained on web pages)
    turned into a fenced block, so it is read like one."""
    if "<pre" not in answer and "<PRE" not in answer:
        return answer
    if answer.count("<pre") + answer.count("<PRE") > 200:
        return answer  # not a reply with a few code blocks: left as text (and bounded)
    opened, closed = len(_HTML_PRE.findall(answer)), len(_HTML_PRE_END.findall(answer))
    if not opened or opened != closed:
        return answer
    return _HTML_PRE_END.sub("\n```\n", _HTML_PRE.sub("\n```\n", answer))


_HARMONY_FINAL = "<|channel|>final<|message|>"
_HARMONY_TOKEN = re.compile(r"<\|[a-z_]{1,20}\|>")


def _split_harmony(text: str) -> tuple[str, str]:
    """gpt-oss's "harmony" format leaked as text (a server without its parser): the analysis
    channel is reasoning, the final channel the answer."""
    at = text.rfind(_HARMONY_FINAL)
    if at < 0:
        if text.lstrip().startswith(
            ("<|channel|>analysis", "<|start|>assistant<|channel|>analysis")
        ):
            return "", _HARMONY_TOKEN.sub("\n", text).strip()  # cut before the final channel
        return text, ""
    answer = text[at + len(_HARMONY_FINAL) :]
    for end in ("<|return|>", "<|end|>", "<|call|>"):
        cut = answer.find(end)
        if cut >= 0:
            answer = answer[:cut]
    return answer, _HARMONY_TOKEN.sub("\n", text[:at]).strip()


def split_reasoning(text: str) -> tuple[str, str]:
    """(answer, reasoning): reasoning sections cut out of the text, in one pass."""
    harmony = ""
    if "<|channel|>" in text:
        text, harmony = _split_harmony(text)
    answer, reasoning = _split_think(text)
    return answer, "\n\n".join(r for r in (harmony, reasoning) if r)


def _split_think(text: str) -> tuple[str, str]:
    low = text.lower()
    answer: list[str] = []
    reasoning: list[str] = []
    pos = 0
    nxt = {t: low.find(f"<{t}>") for t in _THINK_TAGS}
    first_open = min((i for i in nxt.values() if i >= 0), default=-1)
    # a "</think>" before any opening tag: the chat template opened the section for the model
    for t in _THINK_TAGS:
        close = low.find(f"</{t}>")
        if close >= 0 and (first_open < 0 or close < first_open):
            reasoning.append(text[:close])
            pos = close + len(t) + 3
            break
    while True:
        for t, i in nxt.items():
            if 0 <= i < pos:
                nxt[t] = low.find(f"<{t}>", pos)
        found = [(i, t) for t, i in nxt.items() if i >= 0]
        if not found:
            answer.append(text[pos:])
            break
        at, tag = min(found)
        body = at + len(tag) + 2
        close = low.find(f"</{tag}>", body)
        if close < 0:
            if not "".join(answer).strip() and not text[pos:at].strip():
                # unclosed at the start: all of it is reasoning (a reply cut off mid-thought)
                reasoning.append(text[body:])
            else:
                answer.append(text[pos:])  # a stray "<think>" in prose: leave it
            break
        answer.append(text[pos:at])
        reasoning.append(text[body:close])
        pos = close + len(tag) + 3
    return "".join(answer), "\n\n".join(r.strip("\n") for r in reasoning if r.strip())


def _ptx_member(value, path: str, depth: int = 0, reparsed: int = 0) -> tuple[str, str] | None:
    """The last string under ``value`` that declares an entry, with its path; a string that
    is itself a JSON object (a tool call's ``"arguments"``, which OpenAI-style tool calls
    encode as a string) is read too. Bounded: a hostile nesting cannot recurse far, and a
    string is parsed again at most twice."""
    if depth > 12:
        return None
    if isinstance(value, str):
        if ".entry" not in value:
            return None
        inner = value.strip()
        if reparsed < 2 and inner.startswith("{") and inner.endswith("}"):
            try:
                found = _ptx_member(json.loads(inner), path, depth + 1, reparsed + 1)
            except (ValueError, RecursionError):
                found = None
            if found is not None:
                return found
        return value, path
    items: Iterable[tuple[object, object]]
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    found = None
    for k, v in items:
        hit = _ptx_member(v, f"{path}.{k}" if path else str(k), depth + 1, reparsed)
        if hit is not None:
            found = hit
    return found


def unwrap_json(answer: str) -> tuple[str, str]:
    """A reply that is a JSON object (``{"ptx": "..."}``, bare or in a ```json fence; a tool
    call ``{"name": …, "arguments": "{\\"ptx\\": …}"}``), as models asked for structured
    output or trained on tool use write it: the last string member, at any depth, that
    declares an entry, and a note. Anything else: unchanged."""
    body = answer.strip()
    if body.startswith("```"):
        first_nl = body.find("\n")
        if first_nl < 0 or not body[:first_nl].lower().strip("`~ ").startswith("json"):
            return answer, ""
        body = body[first_nl + 1 :].rstrip().rstrip("`~").strip()
    if not (body.startswith("{") and body.endswith("}") and ".entry" in body):
        return answer, ""
    try:
        obj = json.loads(body)
    except (ValueError, RecursionError):  # deep nesting: the parser's recursion runs out
        return answer, ""
    if not isinstance(obj, dict):
        return answer, ""
    found = _ptx_member(obj, "")
    if found is None:
        return answer, ""
    value, key = found
    return value, f"the reply was a JSON object; took its {str(key)[:60]!r} member"


_ESCAPED = re.compile(r'\\([nrt"\\/])')
_ESCAPES = {"n": "\n", "r": "\n", "t": "\t", '"': '"', "\\": "\\", "/": "/"}


def decode_escapes(answer: str) -> str | None:
    """A reply whose PTX has its line breaks written as the two characters '\\n' (a model or
    a proxy that encoded the text twice): decoded, or None when the reply is not like that."""
    if ".entry" not in answer or answer.count("\\n") < 3:
        return None
    return _ESCAPED.sub(lambda m: _ESCAPES[m.group(1)], answer)
