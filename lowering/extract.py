"""Find the PTX in a model's reply. Nothing else from a reply is ever used, let alone run.

Real replies come in every shape: fenced blocks with any tag (```ptx, ```asm, ``` , ~~~, indented
inside a list, with extra info after the tag), bare PTX with prose before, after and between,
the CUDA echoed back in a ```cuda block first, a ``<think>`` section holding a draft, a model
that corrects itself ("wait, corrected version:"), CRLF line endings, a reply cut off at the
token limit. The rules:

1. Line endings are normalised (CRLF, lone CR), invisible characters removed (zero-width
   spaces, BOM), markdown block quotes and ``<pre><code>`` read as plain text and fences, and
   reasoning sections (``<think>``,
   ``<thinking>``, ``<reasoning>``; an unclosed one at the start; a ``</think>`` with no opening)
   are set aside as ``reasoning``: a draft in there is never the answer.
2. Every fenced block and every stretch of bare PTX in the prose is a candidate. Bare PTX ends
   where its own braces close and a line that is not PTX follows, so prose with ``{``/``}``
   after it cannot move the end.
3. The answer is the **last complete** candidate that declares the requested ``.entry`` (else
   any ``.entry``); complete means the entry's body closes. With none complete, the last cut-off
   one is returned with ``truncated`` set (ptxas then says what is missing).
4. In the answer: ``@gputest`` lines are removed (a candidate never sets its own test); an
   elision marker (``// ...``, ``// rest of the code unchanged``, ``...`` alone on a line) makes
   the reply ``incomplete`` — not a candidate; entries other than the requested one, and
   ``.func``s nothing kept calls, are dropped; non-ASCII characters in comments are removed
   (ptxas rejects any). Each change is a line in ``notes``.

Everything is linear in the reply's size: lines are scanned once, comments blanked once, and
the few regular expressions have bounded repetition, so a multi-megabyte hostile reply costs
milliseconds to seconds, never hours.

Why this module is long, and how it is read: it is one reader with five stages, each a
numbered section below — 1. normalising (line endings, invisible characters, reasoning
sections), 2. fenced blocks and bare PTX (``Segment``), 3. what a stretch of PTX declares
(``Function``/``Module``, a tolerant scan of text that may be cut off), 4. cleaning the answer,
5. choosing the answer (``_Candidates``). The stages share the ``Segment`` type and the limits;
split it along those sections (stage 3 belongs with frontend/ptx.py's reader).
"""

from __future__ import annotations

import bisect
import dataclasses
import html
import json
import re
from dataclasses import dataclass, field

from ptxls.frontend.ptx_dataflow import check_dataflow

from .reply_choice import choose, first_turn, split_modules

TOKEN_LIMIT_SETTING = "ptxls.llm.maxTokens (PTXLS_LLM_MAX_TOKENS)"

# Far beyond any real reply (a 400 KB PTX module has ~16k lines, a few thousand braces and
# comments); a reply past one of these is refused with a message, before any scanning. They
# bound the number of times the Python-level loops below run, on top of each scan being
# linear: a hostile multi-megabyte reply costs milliseconds.
LIMITS = {  # what is counted → (the strings counted, the most a reply may hold)
    "lines": (("\n",), 60_000),
    "braces and parentheses": (("{", "}", "(", ")"), 200_000),
    "comments and quotes": (("//", "/*", '"'), 200_000),
    "'.entry'/'.func' directives": ((".entry", ".func"), 5_000),
    "reasoning tags": (("<think", "<reason", "<thought"), 1_000),
}


@dataclass(frozen=True)
class Extraction:
    ptx: str | None
    # Why this is not a candidate, worded for the model (the loop sends it back); empty when
    # ``ptx`` is usable as it is.
    problem: str = ""
    blocks: int = 0  # fenced blocks seen
    truncated: bool = False  # the PTX stops before its entry's body closes (cut-off reply)
    incomplete: bool = False  # the PTX says it elides code ("// ... unchanged ...") or is a diff
    notes: tuple[str, ...] = ()  # what was changed or ignored, for the transcript and report
    reasoning: str = ""  # <think> sections found in the text
    # where the PTX says code was left out ("line 12: '// ... unchanged ...'"): a hint for the
    # feedback only; whether code is missing is decided by what the PTX does (ptx_dataflow)
    elision: str = ""

    @property
    def candidate(self) -> bool:
        """PTX worth giving to ptxas and the tests."""
        return self.ptx is not None and not self.problem


# ---- 1. normalising and reasoning sections

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
        if any(_starts_ptx(r.strip()) or r.lstrip().startswith(("```", "~~~")) for r in run):
            out[i:j] = run
            unquoted += j - i
        i = j
    return out, unquoted


# only the <pre><code …> … </code></pre> pair (what HTML renderers emit): a bare "<pre>"
# mentioned in prose must not open a block that swallows the rest of the reply
_HTML_PRE = re.compile(r"(?i)<pre(?:[ \t][^<>\n]{0,200})?>[ \t]*<code(?:[ \t][^<>\n]{0,200})?>")
_HTML_PRE_END = re.compile(r"(?i)</code>[ \t]*</pre>")
_HTML_ENTITY = re.compile(r"&(?:lt|gt|amp|quot|apos|#[0-9]{1,7}|#x[0-9a-fA-F]{1,6});")


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


# ---- 2. fenced blocks and bare PTX


@dataclass
class Segment:
    text: str
    fenced: bool
    tag: str = ""
    closed: bool = True  # the fence closed (always True for bare PTX)
    first_line: int = 0  # 0-based line of the reply's answer text where the PTX starts


def _fence_open(line: str) -> tuple[str, int, str] | None:
    """(fence, indent, tag) when the line opens a fenced block."""
    stripped = line.lstrip(" \t")
    if stripped[:3] not in ("```", "~~~"):
        return None
    ch = stripped[0]
    n = len(stripped) - len(stripped.lstrip(ch))
    info = stripped[n:].strip()
    if ch == "`" and "`" in info:
        return None  # inline code on one line, not a fence
    tag = info.split()[0].lower().strip("{}.") if info else ""
    return ch * n, len(line) - len(stripped), tag


def _fence_close(line: str, fence: str) -> tuple[bool, str]:
    """(closes, code before the fence): a line of only the fence char (at least as long), or
    code followed by the fence ("}```" — models do write that)."""
    ch = fence[0]
    rest = line.rstrip()
    code = rest.rstrip(ch)
    if len(rest) - len(code) < len(fence):
        return False, ""
    return True, code if code.strip() else ""


_DIRECTIVE_START = (
    ".version",
    ".target",
    ".address_size",
    ".visible",
    ".entry",
    ".func",
    ".weak",
    ".extern",
    ".global",
    ".const",
    ".shared",
    ".file",
    ".pragma",
)


def _starts_ptx(stripped: str) -> bool:
    return stripped.startswith(_DIRECTIVE_START)


def _ptx_like(stripped: str) -> bool:
    """A line that can stand between PTX statements at brace depth 0 (a directive, a comment,
    a brace, the ')' closing a parameter list); prose after the PTX is none of these."""
    if not stripped:
        return True
    if stripped.startswith(("//", "/*", "{", "}", ")")):
        return True
    # a directive: a lowercase word after the dot (".NET is ..." or ". Note" is prose)
    return stripped[0] == "." and stripped[1:2].islower()


_SPECIAL = re.compile(r'[{}()"]|//|/\*|\*/')


def _line_braces(line: str, state: list[int]) -> None:
    """Update [brace depth, paren depth, in block comment] for one line, ignoring comments and
    strings. Only the line's special characters are visited (found by the regex engine)."""
    depth, paren, in_comment = state
    in_string = False
    for m in _SPECIAL.finditer(line):
        tok = m.group()
        if in_comment:
            if tok == "*/":
                in_comment = 0
            continue
        if in_string:
            in_string = tok != '"'
            continue
        if tok == "//":
            break
        if tok == "/*":
            in_comment = 1
        elif tok == '"':
            in_string = True
        elif tok == "{":
            depth += 1
        elif tok == "}":
            depth = max(depth - 1, 0)
        elif tok == "(":
            paren += 1
        elif tok == ")":
            paren = max(paren - 1, 0)
    state[:] = [depth, paren, in_comment]


def _bare_segments(lines: list[str], start: int, end: int) -> list[Segment]:
    """Stretches of PTX in prose lines [start, end): from a directive (with the comment lines
    right above it) until its braces close and a line that is not PTX follows."""
    out: list[Segment] = []
    i = start
    comment_from = None
    while i < end:
        stripped = lines[i].strip()
        if stripped.startswith("//"):
            if comment_from is None:
                comment_from = i
            i += 1
            continue
        if not _starts_ptx(stripped):
            comment_from = None
            i += 1
            continue
        first = comment_from if comment_from is not None else i
        comment_from = None
        state = [0, 0, 0]
        j = i
        last_code = i
        while j < end:
            s = lines[j].strip()
            if state == [0, 0, 0] and j > i and not _ptx_like(s):
                break
            _line_braces(lines[j], state)
            if s:
                last_code = j
            j += 1
        out.append(Segment("\n".join(lines[first : last_code + 1]) + "\n", False, "", True, first))
        i = j
    return out


def _segments(lines: list[str], nested: bool = False) -> tuple[list[Segment], int]:
    """Fenced blocks and bare PTX stretches, in reply order; and the number of fences.

    A longer fence holding shorter ones (````` ````markdown ````` around prose and a
    ```` ```ptx ```` block, as models write when they quote a whole answer) is read for its
    inner blocks, one level deep, so each line is scanned at most twice."""
    out: list[Segment] = []
    fences = 0
    i, prose_from, n = 0, 0, len(lines)
    while i < n:
        opened = _fence_open(lines[i])
        if opened is None:
            i += 1
            continue
        out += _bare_segments(lines, prose_from, i)
        fence, indent, tag = opened
        fences += 1
        body: list[str] = []
        inner_fences = False
        j, closed = i + 1, False
        while j < n:
            closes, before = _fence_close(lines[j], fence)
            if closes:
                if before.strip():
                    body.append(before)
                closed = True
                break
            line = lines[j]
            if indent:  # a fence indented in a list: its body is indented as much
                k = len(line) - len(line.lstrip(" "))
                line = line[min(k, indent) :]
            if not nested and len(fence) > 3:
                inner = _fence_open(line)
                inner_fences = inner_fences or (
                    inner is not None and inner[0][0] == fence[0] and len(inner[0]) < len(fence)
                )
            body.append(line)
            j += 1
        if inner_fences:
            inner_segments, inner_count = _segments(body, nested=True)
            for seg in inner_segments:
                seg.first_line += i + 1
            out += inner_segments
            fences += inner_count
        else:
            out.append(Segment("\n".join(body).strip("\n") + "\n", True, tag, closed, i + 1))
        i = j + 1
        prose_from = i
    out += _bare_segments(lines, prose_from, n)
    return out, fences


# ---- 3. what a stretch of PTX declares

_FUNC_DIRECTIVE = re.compile(r"\.(entry|func)\b")
# after .func: an optional return-parameter list, then the name (bounded: no backtracking
# across the text)
_FUNC_NAME = re.compile(
    r"[ \t\n]{0,200}(?:\([^()]{0,4000}\)[ \t\n]{0,200})?([A-Za-z_$%][\w$]{0,200})"
)
_ENTRY_NAME = re.compile(r"[ \t\n]{0,200}([A-Za-z_$%][\w$]{0,200})")


_OPENER = re.compile(r'//|/\*|"')


def blank_comments(text: str) -> str:
    """The text with comments and string literals replaced by spaces (newlines kept), so that
    braces, names and directives can be searched for in code only. One pass: each search
    starts where the last comment or string ended."""
    out: list[str] = []
    i, n = 0, len(text)
    search = _OPENER.search
    while True:
        m = search(text, i)
        if m is None:
            out.append(text[i:])
            break
        j, tok = m.start(), m.group()
        out.append(text[i:j])
        if tok == "//":
            k = text.find("\n", j)
            k = n if k < 0 else k
        elif tok == "/*":
            k = text.find("*/", j + 2)
            k = n if k < 0 else k + 2
        else:  # a string ends at its quote, or at the line's end when unclosed
            nl = text.find("\n", j + 1)
            nl = n if nl < 0 else nl
            k = text.find('"', j + 1, nl)
            k = nl if k < 0 else k + 1
        span = text[j:k]
        out.append(re.sub(r"[^\n]", " ", span) if "\n" in span else " " * len(span))
        i = k
    return "".join(out)


@dataclass
class Function:
    kind: str  # "entry" | "func"
    name: str
    start: int  # offset of the line where its declaration starts
    end: int  # offset just past its closing brace (or its ';', or the end of the text)
    closed: bool  # a body that closes, or a prototype ending in ';'
    is_definition: bool


@dataclass
class Module:
    text: str
    code: str  # comments and strings blanked
    functions: list[Function] = field(default_factory=list)

    def entries(self) -> list[Function]:
        return [f for f in self.functions if f.kind == "entry"]

    def declares(self, kernel: str | None) -> bool:
        return any(f.name == kernel for f in self.entries()) if kernel else bool(self.entries())


# Not frontend/ptx.py's reader: a reply is not yet PTX (prose, unbalanced braces, several modules,
# a body cut off), and the verdict needs whether each body closed, which parse_ptx does not say.
def analyse(text: str) -> Module:
    """The top-level .entry/.func declarations of a stretch of PTX with their extents."""
    code = blank_comments(text)
    # top-level brace spans and ';' positions, in one pass
    spans: list[tuple[int, int]] = []  # (open, close+1) of bodies at depth 0
    semis: list[int] = []
    depth, opened = 0, -1
    directive_at: list[tuple[int, str]] = []
    for m in re.finditer(r"[{};]|\.(?:entry|func)\b", code):
        tok = m.group()
        if tok == "{":
            if depth == 0:
                opened = m.start()
            depth += 1
        elif tok == "}":
            if depth > 0:
                depth -= 1
                if depth == 0:
                    spans.append((opened, m.end()))
        elif tok == ";":
            if depth == 0:
                semis.append(m.start())
        elif depth == 0:
            directive_at.append((m.start(), tok[1:]))
    if depth > 0:
        spans.append((opened, -1))  # a body that never closes
    module = Module(text, code)
    span_starts = [s for s, _ in spans]
    newlines = [m.start() for m in re.finditer("\n", code)]
    for k, (at, kind) in enumerate(directive_at):
        after = at + len(kind) + 1
        m = (_FUNC_NAME if kind == "func" else _ENTRY_NAME).match(code, after)
        if not m:
            continue
        name = m.group(1)
        limit = directive_at[k + 1][0] if k + 1 < len(directive_at) else len(code)
        b = bisect.bisect_left(span_starts, m.end())
        body = spans[b] if b < len(spans) and span_starts[b] < limit else None
        s = bisect.bisect_left(semis, m.end())
        semi = semis[s] if s < len(semis) and semis[s] < limit else None
        nl = bisect.bisect_left(newlines, at)
        line_start = newlines[nl - 1] + 1 if nl > 0 else 0
        if semi is not None and (body is None or semi < body[0]):
            fn = Function(kind, name, line_start, semi + 1, True, False)
        elif body is not None:
            closed = body[1] >= 0
            fn = Function(kind, name, line_start, body[1] if closed else len(code), closed, True)
        else:
            fn = Function(kind, name, line_start, len(code), False, False)
        module.functions.append(fn)
    return module


# ---- 4. cleaning the answer

_ELLIPSIS = re.compile(r"(?:^|[\s(\[<{])(?:\.{3,}|…)(?=$|[\s)\]>}.,;:])")
_ELISION_PHRASES = re.compile(
    r"(?i)\b(?:rest of (?:the )?(?:code|kernel|function|module|body|file|ptx|instructions|"
    r"program|loop)|remaining (?:code|instructions|lines|body)|same as (?:before|above)|"
    r"as before|as above|(?:code|instructions) (?:continues|goes here|as before)|omitted|"
    r"elided|for brevity|not shown|previous version|snip(?:ped)?|and so on|etc\.?$|"
    # "TODO: fill in the loads", "(identical to above)", "[same code as in your kernel]",
    # "<existing code>", "as in the original": a pointer to code that is not there
    r"fill (?:in|this)|identical to (?:above|before|the|your)|as in (?:the |your )?"
    r"(?:original|previous|earlier|above|first))"
)
# "<existing code>", "// same loads as before", "(same body here)" point at code that is not
# there; "the same loads with .L1::no_allocate ran at 0.96x" is prose comparing two versions.
# So the phrase is an elision in a short comment, or when it points somewhere.
_SAME_CODE = re.compile(
    r"(?i)\b(?:existing|same) (?:code|instructions|loads|stores|body)\b(?P<rest>.*)"
)
_POINTS_ELSEWHERE = re.compile(r"(?i)^\s*(?:as|here|again|from|in|goes|continues)\b")
_MATH = re.compile(r"[-+*/=<>,\[\]^%]|\b(?:to|for|sum|from)\b")
_UNCHANGED = re.compile(r"(?i)\bunchanged\b")
# what is unchanged must be code ("rest unchanged", "loop body unchanged"): "n stays
# unchanged here" or "%r1 remains unchanged" describe a value, and are not elisions
_UNCHANGED_CONTEXT = re.compile(
    r"(?i)\b(?:code|rest|same|previous|above|before|as is|section|part|body|kernel|"
    r"block|lines|instructions|everything|else|other|loop)\b"
)
_REGISTER = re.compile(r"%[a-z]")


def find_elision(ptx: str) -> tuple[int, str] | None:
    """(1-based line, the line) of the first elision marker: a comment that says code was left
    out, or '...' standing alone."""
    in_block = False
    for no, line in enumerate(ptx.split("\n"), 1):
        stripped = line.strip()
        comment = ""
        if in_block:
            end = stripped.find("*/")
            comment, in_block = (stripped, True) if end < 0 else (stripped[:end], False)
            code = "" if end < 0 else stripped[end + 2 :]
        else:
            code = stripped
            for marker in ("//", "/*"):
                k = code.find(marker)
                if k >= 0:
                    comment = code[k + 2 :]
                    if marker == "/*":
                        e = comment.find("*/")
                        if e < 0:
                            in_block = True
                        else:
                            comment = comment[:e]
                    code = code[:k]
                    break
        comment = comment.strip()
        if code.strip() in ("...", "…", "[...]", "<...>", "(...)", "{...}"):
            return no, stripped
        if _ELLIPSIS.search(code):
            return no, stripped
        if not comment:
            continue
        if _ELISION_PHRASES.search(comment):
            return no, stripped
        same = _SAME_CODE.search(comment)
        if same and (len(comment.split()) <= 6 or _POINTS_ELSEWHERE.match(same.group("rest"))):
            return no, stripped
        if _ELLIPSIS.search(comment):
            # "// ..." or "// ... more loads" leaves code out; "x[0] + ... + x[i]" or
            # "j = tid, tid + ntid, ..." is mathematics
            rest = comment.replace("…", " ").replace("...", " ")
            if not _MATH.search(rest) and len(rest.split()) <= 3:
                return no, stripped
        if (
            _UNCHANGED.search(comment)
            and not _REGISTER.search(comment)
            and (len(comment.split()) <= 2 or _UNCHANGED_CONTEXT.search(comment))
        ):
            return no, stripped
    return None


def _strip_gputest(ptx: str) -> tuple[str, int]:
    if "@gputest" not in ptx:
        return ptx, 0
    kept, dropped = [], 0
    for line in ptx.split("\n"):
        if "@gputest" in line:
            dropped += 1
        else:
            kept.append(line)
    return "\n".join(kept), dropped


def _strip_non_ascii_comments(ptx: str) -> tuple[str, int]:
    if ptx.isascii():
        return ptx, 0
    code = blank_comments(ptx)
    out, removed = [], 0
    for ch, c in zip(ptx, code, strict=True):
        if ch != c and not ch.isascii():  # inside a comment or string: blanked in ``code``
            removed += 1
            continue
        out.append(ch)
    return "".join(out), removed


_WORD = re.compile(r"[A-Za-z_$%][\w$]{0,200}")


def _keep_entry(module: Module, kernel: str) -> tuple[str, list[str], list[str]]:
    """The module with only the last definition of ``kernel`` and the .funcs it uses,
    transitively (called, or taken the address of: any mention counts); and the names of the
    entries and .funcs dropped. Module-level variables and directives stay."""
    entries = [f for f in module.entries() if f.name == kernel and f.is_definition]
    if not entries:
        return module.text, [], []
    keep = entries[-1]
    funcs = {f.name: f for f in module.functions if f.kind == "func" and f.is_definition}
    used: set[str] = set()
    kept_funcs: set[str] = set()
    todo = [keep]
    while todo:
        fn = todo.pop()
        words = set(_WORD.findall(module.code[fn.start : fn.end]))
        used |= words
        for name in words:
            f = funcs.get(name)
            if f is not None and name not in kept_funcs and f is not fn:
                kept_funcs.add(name)
                todo.append(f)
    dropped_entries, dropped_funcs = [], []
    cuts: list[tuple[int, int]] = []
    for f in module.functions:
        if f is keep:
            continue
        if f.kind == "entry":
            if f.is_definition:
                dropped_entries.append(f.name)
            cuts.append((f.start, f.end))
        elif f.is_definition:
            if f is not funcs.get(f.name) or f.name not in kept_funcs:
                dropped_funcs.append(f.name)
                cuts.append((f.start, f.end))
        elif f.name not in used:  # a prototype of a .func nothing kept mentions
            cuts.append((f.start, f.end))
    if not cuts:
        return module.text, [], []
    text, pos, parts = module.text, 0, []
    for a, b in sorted(cuts):
        if a < pos:
            continue
        parts.append(text[pos:a])
        pos = b
        # the rest of the closing line (a trailing comment) goes with the function
        nl = text.find("\n", pos, pos + 400)
        if nl >= 0 and not module.code[pos:nl].strip():
            pos = nl + 1
    parts.append(text[pos:])
    cleaned = re.sub(r"\n{3,}", "\n\n", "".join(parts))
    return cleaned, dropped_entries, dropped_funcs


# ---- 5. the answer


def _merge_split_module(segments: list[tuple[Segment, Module]]) -> list[tuple[Segment, Module]]:
    """A header (.version/.target) in one block and the kernel in the next: one module."""
    out: list[tuple[Segment, Module]] = []
    for seg, mod in segments:
        if out:
            prev_seg, prev_mod = out[-1]
            if (
                not prev_mod.functions
                and ".version" in prev_mod.code
                and mod.functions
                and ".version" not in mod.code
            ):
                joined = prev_seg.text.rstrip("\n") + "\n\n" + seg.text
                out[-1] = (
                    Segment(joined, seg.fenced, seg.tag, seg.closed, prev_seg.first_line),
                    analyse(joined),
                )
                continue
        out.append((seg, mod))
    return out


def _cut_note(finish_reason: str | None) -> str:
    if finish_reason == "content_filter":
        return (
            "your reply was stopped by the endpoint's content filter (finish_reason: "
            "content_filter) inside the PTX, before the kernel's closing '}'"
        )
    why = "the token limit" if finish_reason == "length" else "its end"
    return f"your reply was cut off at {why} inside the PTX, before the kernel's closing '}}'" + (
        f"; raise {TOKEN_LIMIT_SETTING}" if finish_reason == "length" else ""
    )


def _over_limits(text: str) -> str:
    for what, (needles, most) in LIMITS.items():
        source = text.lower() if what == "reasoning tags" else text
        count = sum(map(source.count, needles))
        if count > most:
            return (
                f"the reply has {count} {what}, more than the {most} ptxls reads in one "
                "reply; answer with only the PTX module, in one ```ptx block"
            )
    return ""


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


def _unwrap_json(answer: str) -> tuple[str, str]:
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


def _decode_escapes(answer: str) -> str | None:
    """A reply whose PTX has its line breaks written as the two characters '\\n' (a model or
    a proxy that encoded the text twice): decoded, or None when the reply is not like that."""
    if ".entry" not in answer or answer.count("\\n") < 3:
        return None
    return _ESCAPED.sub(lambda m: _ESCAPES[m.group(1)], answer)


_REFUSAL = re.compile(
    r"(?i)\b(?:I(?:'|’)?m sorry|I am sorry|I (?:can(?:'|’)?t|cannot|won(?:'|’)?t|am unable to|"
    r"(?:'|’)m unable to|am not able to)|unable to (?:help|assist|comply)|as an AI)\b"
)


def _diff_line(seg: Segment, text: str) -> int:
    """The 1-based line where a block shows itself to be a diff (a ```diff block, a hunk
    header, or ---/+++ file lines); 0 when it is not one."""
    lines = text.split("\n")
    if seg.tag in ("diff", "patch", "udiff"):
        return 1
    for no, line in enumerate(lines, 1):
        if line.startswith("@@ ") and "@@" in line[3:]:
            return no
        if line.startswith("+++ ") and no > 1 and lines[no - 2].startswith("--- "):
            return no - 1
    return 0


# The steps of ``extract_ptx``, in the order it runs them: normalise and unwrap the reply
# (``_answer_text``), find the candidate blocks (``_candidates``), say why there is none
# (``_no_ptx_problem``), pick the block (``_pick_block``), judge it (``_judge_block``), and
# clean what is kept (``_keep_requested_entry``, ``_clean_ptx``). Each change is a note.


@dataclass(frozen=True)
class _Answer:
    """The reply's answer once normalised and unwrapped, and what was done to get it."""

    text: str
    reasoning: str
    invisible: int  # invisible or Unicode-space characters removed
    unwrapped: str  # the note when the answer was a JSON object's member, else ""
    turn: str = ""  # the note when chat-template control tokens were cut


@dataclass(frozen=True)
class _Candidates:
    """The answer's lines, its fenced blocks and bare PTX stretches, and the ones that can be
    the answer (those declaring the requested entry, else any entry)."""

    lines: list[str]
    quoted: int  # lines read without their '>' block-quote marks
    segments: list[Segment]
    fences: int
    pool: list[tuple[Segment, Module]]
    split: int = 0  # fences that held more than one module (each module is its own block)


def _answer_text(reply: str | None) -> _Answer | Extraction:
    """Step 1: line endings, the size limits, invisible characters, reasoning sections, a JSON
    wrapper, HTML code blocks. An Extraction with the problem when the reply is too big."""
    text = normalise(reply or "")
    too_much = _over_limits(text)
    if too_much:
        return Extraction(None, too_much)
    text, invisible = clean_invisible(text)
    turn = ""
    if "<|channel|>" not in text:  # harmony's own tokens are read by split_reasoning
        text, turn = first_turn(text)
    answer, reasoning = split_reasoning(text)
    answer, unwrapped = _unwrap_json(answer)
    if unwrapped:
        answer = normalise(answer)
        too_much = _over_limits(answer)
        if too_much:
            return Extraction(None, too_much, reasoning=reasoning)
    return _Answer(html_blocks_as_fences(answer), reasoning, invisible, unwrapped, turn)


def _empty_answer_problem(reasoning: str, finish_reason: str | None) -> str:
    if finish_reason == "content_filter":
        return (
            "the endpoint's content filter stopped the reply before any answer "
            "(finish_reason: content_filter)"
        )
    if finish_reason == "length":
        return (
            "the model spent its whole token budget"
            + (" on reasoning" if reasoning else " (reasoning?)")
            + f" before writing any answer — raise {TOKEN_LIMIT_SETTING}"
        )
    if reasoning:
        return (
            "your reply holds only reasoning (a <think> section) and no answer after it; "
            "write the PTX after the reasoning"
        )
    return "the reply was empty"


def _candidates(answer: str, kernel: str | None) -> _Candidates:
    """Step 2: every fenced block and bare PTX stretch, and those that declare an entry."""
    lines, quoted = unquote(answer.split("\n"))
    segments, fences = _segments(lines)
    segments, split = _one_module_each(segments)
    # only stretches that name a function need the full analysis; the rest are prose-like
    # blocks (CUDA, a plan, a header) and stay as text
    analysed = _merge_split_module(
        [
            (
                s,
                analyse(s.text)
                if ".entry" in s.text or ".func" in s.text
                else Module(s.text, s.text),
            )
            for s in segments
        ]
    )
    with_entry = [(s, m) for s, m in analysed if m.entries()]
    named = [(s, m) for s, m in with_entry if kernel and m.declares(kernel)]
    return _Candidates(lines, quoted, segments, fences, named or with_entry, split)


def _one_module_each(segments: list[Segment]) -> tuple[list[Segment], int]:
    """A block holding two modules (each with its .version: a "before" and an "after") is two
    blocks: splicing them would make one invalid module."""
    out, split = [], 0
    for seg in segments:
        parts = split_modules(seg.text) if seg.text.count(".version") > 1 else [(0, seg.text)]
        if len(parts) > 1:
            split += 1
        for offset, text in parts:
            out.append(Segment(text, seg.fenced, seg.tag, seg.closed, seg.first_line + offset))
    return out, split


def _reading_notes(
    unwrapped: str, lines: list[str], finish_reason: str | None, turn: str = "", split: int = 0
) -> list[str]:
    """The notes every outcome carries: a JSON wrapper, control tokens, modules in one block,
    @gputest lines, the token limit."""
    notes: list[str] = [x for x in (unwrapped, turn) if x]
    if split:
        notes.append(
            f"{split} code block{'s' if split > 1 else ''} held more than one module (each "
            "with its .version); read as separate blocks, never spliced"
        )
    gputest_lines = sum(1 for line in lines if "@gputest" in line)
    if gputest_lines:
        notes.append(
            f"ignored {gputest_lines} @gputest line{'s' if gputest_lines != 1 else ''} in the "
            "reply: a candidate never sets its own test"
        )
    if finish_reason == "length":
        notes.append(
            f"the reply stopped at the token limit (finish_reason: length); raise {TOKEN_LIMIT_SETTING}"
        )
    return notes


def _extract_decoded(
    answer: _Answer, kernel: str | None, finish_reason: str | None, notes: list[str]
) -> Extraction | None:
    """The answer read again with its '\\n' escapes decoded, when that finds PTX; else None."""
    decoded = _decode_escapes(answer.text)
    if decoded is None:
        return None
    again = extract_ptx(decoded, kernel, finish_reason=finish_reason, _decoded=True)
    if again.ptx is None:
        return None
    note = "the reply's line breaks were written as '\\n' (encoded twice); decoded"
    return dataclasses.replace(
        again,
        notes=(*notes, note, *again.notes),
        reasoning="\n\n".join(r for r in (answer.reasoning, again.reasoning) if r),
    )


def _no_ptx_problem(answer: _Answer, found: _Candidates, finish_reason: str | None) -> str:
    """Why no block can be the answer, worded for the model."""
    in_reasoning = "" if not answer.reasoning else analyse(answer.reasoning)
    if in_reasoning and in_reasoning.entries():
        problem = (
            "your reply has PTX only inside its reasoning (<think>) section; write the final "
            "PTX after it, in a ```ptx block"
        )
    elif finish_reason == "length":
        problem = (
            "your reply was cut off at the token limit before any PTX '.entry' was written; "
            f"raise {TOKEN_LIMIT_SETTING}, or answer with the PTX first and no explanation"
        )
    elif any(s.fenced and _diff_line(s, s.text) for s in found.segments):
        problem = (
            "your reply is a diff: send the complete PTX module, every line, not changes to it"
        )
    elif found.fences:
        tags = ", ".join(sorted({s.tag or "untagged" for s in found.segments if s.fenced}))
        problem = (
            f"the reply has {found.fences} code block(s) ({tags}) but none declares a PTX '.entry'"
        )
    elif _REFUSAL.search(answer.text[:2000]):
        said = " ".join(answer.text.split())[:160]
        problem = (
            f"the reply declines the task and contains no PTX ({said!r}); the task is "
            "to translate the given kernel into PTX, which is routine compiler work"
        )
    else:
        problem = "the reply contains no PTX (no code block, no '.entry')"
    if finish_reason == "content_filter":
        problem += "; the endpoint's content filter stopped it (finish_reason: content_filter)"
    return problem


def _pick_block(
    found: _Candidates, kernel: str | None, notes: list[str]
) -> tuple[Segment, Module, bool]:
    """Step 3: the block the prose points to, else the last complete one (one without dataflow
    findings preferred), else the last one, truncated (``reply_choice.choose``)."""
    pool = found.pool

    def complete(sm: tuple[Segment, Module]) -> bool:
        seg, mod = sm
        entries = [f for f in mod.entries() if not kernel or f.name == kernel] or mod.entries()
        return any(f.closed and f.is_definition for f in entries)

    flags = [complete(sm) for sm in pool]
    spans = [(seg.first_line, seg.first_line + seg.text.count("\n")) for seg, _ in pool]
    covered = set()
    for seg in found.segments:
        covered.update(range(seg.first_line - 1, seg.first_line + seg.text.count("\n") + 2))
    prose = [(i, line) for i, line in enumerate(found.lines) if i not in covered and line.strip()]
    findings: dict[int, bool] = {}

    def has_findings(i: int) -> bool:
        if i not in findings:
            findings[i] = bool(check_dataflow(pool[i][0].text, entry=kernel or None))
        return findings[i]

    choice = choose(spans, flags, prose, has_findings)
    seg, mod = pool[choice.index]
    truncated = not any(flags)
    if len(pool) > 1:
        which = (
            f"block {choice.index + 1}: {choice.why}"
            if choice.why
            else f"the last {'complete ' if not truncated else ''}one"
        )
        notes.append(
            f"the reply holds {len(pool)} PTX versions of the kernel; took {which} "
            f"(line {seg.first_line + 1} of the reply)"
        )
    if seg.fenced and not seg.closed and not truncated:
        notes.append("the reply was cut off after the PTX (its code block never closed)")
    return seg, mod, truncated


def _drop_prose_after(seg: Segment, mod: Module, notes: list[str]) -> str:
    """The block's text without prose written inside the code block after the module ("This
    kernel adds { a, b }."): from the first line after the last function that cannot be PTX
    at depth 0."""
    text = seg.text
    ends = [f.end for f in mod.functions if f.closed]
    if not (seg.fenced and ends and mod.text == text):
        return text
    tail_at = max(ends)
    tail = text[tail_at:].split("\n")
    for k, line in enumerate(tail[1:], 1):
        if not _ptx_like(line.strip()):
            kept = "\n".join(tail[:k])
            gone = sum(1 for x in tail[k:] if x.strip())
            notes.append(
                f"dropped {gone} line{'s' if gone != 1 else ''} of prose after the PTX "
                "inside its code block"
            )
            return text[:tail_at] + kept + "\n"
    return text


def _judge_block(seg: Segment, text: str) -> tuple[str, int, str, str]:
    """Step 4: (the PTX without @gputest lines, how many were dropped, the problem, the elision
    hint): a diff is not a candidate; a comment saying code was left out is only a hint —
    whether code is missing is decided by what the PTX does (the loop's dataflow check)."""
    diff_at = _diff_line(seg, text)
    if diff_at:
        # a repair sent as a patch: ptxas would only say "Missing .version directive"
        return (
            text,
            0,
            f"your reply is a diff (line {diff_at} of its block): send the complete PTX "
            "module, every line, not changes to it",
            "",
        )
    ptx, dropped = _strip_gputest(text)
    elided = find_elision(ptx)
    if elided is not None:
        no, line = elided
        return ptx, dropped, "", f"line {no} of the PTX says code was left out ({line[:120]!r})"
    return ptx, dropped, "", ""


def _keep_requested_entry(
    ptx: str, dropped: int, mod: Module, kernel: str | None, notes: list[str]
) -> str:
    """Step 5: only the requested entry and the .funcs it uses, with a note of what went."""
    if not (kernel and mod.declares(kernel)):
        return ptx
    kept, gone_entries, gone_funcs = _keep_entry(analyse(ptx) if dropped else mod, kernel)
    if not (gone_entries or gone_funcs):
        return ptx
    parts = []
    others = sorted(set(gone_entries) - {kernel})
    copies = gone_entries.count(kernel)
    if others:
        more = f" and {len(others) - 10} more" if len(others) > 10 else ""
        parts.append(f"entries other than '{kernel}': {', '.join(others[:10])}{more}")
    if copies:
        parts.append(f"{copies} earlier definition{'s' if copies > 1 else ''} of '{kernel}'")
    if gone_funcs:
        names = sorted(set(gone_funcs))
        more = f" and {len(names) - 10} more" if len(names) > 10 else ""
        parts.append(f".funcs '{kernel}' does not call: {', '.join(names[:10])}{more}")
    notes.append("dropped " + "; ".join(parts))
    return kept


def _clean_ptx(ptx: str, answer: _Answer, quoted: int, notes: list[str]) -> str:
    """Step 6: notes for what reading changed (quotes, invisible characters); HTML entities
    decoded; non-ASCII characters out of comments; one final newline."""
    if quoted:
        notes.append("the PTX was quoted with '>' (markdown block quote); read without it")
    if answer.invisible:
        notes.append(
            f"removed {answer.invisible} invisible or non-breaking space character"
            f"{'s' if answer.invisible != 1 else ''} (zero-width spaces, byte-order marks, "
            "U+00A0): ptxas rejects them and nobody can see them"
        )
    if _HTML_ENTITY.search(ptx):
        # PTX has no '&' at all: an entity is HTML escaping from a <pre><code> rendering
        ptx = html.unescape(ptx)
        notes.append("decoded HTML entities (&lt; &gt; &amp;) in the PTX")
    ptx, removed = _strip_non_ascii_comments(ptx)
    if removed:
        notes.append(
            f"removed {removed} non-ASCII character{'s' if removed != 1 else ''} from comments "
            "(ptxas rejects any)"
        )
    return ptx.strip("\n") + "\n"


def _from_reasoning(
    answer: _Answer, reasoning_field: str, kernel: str | None, finish_reason: str | None
) -> Extraction | None:
    """An empty answer whose reasoning holds a kernel (vLLM's reasoning parser when ``</think>``
    never comes, a model that wrote the PTX while thinking): the kernel taken from there, and
    said so. None when the reasoning has no PTX entry."""
    source = "\n\n".join(x for x in (reasoning_field, answer.reasoning) if x)
    if ".entry" not in source or not analyse(source).entries():
        return None
    again = extract_ptx(source, kernel, finish_reason=finish_reason, _decoded=True)
    if again.ptx is None:
        return None
    note = (
        "the answer was empty: the kernel was taken from the model's reasoning "
        f"({'reasoning_content' if reasoning_field else 'its <think> section'})"
    )
    return dataclasses.replace(
        again,
        notes=(note, *again.notes),
        reasoning=source if not again.reasoning else again.reasoning,
    )


def extract_ptx(
    reply: str | None,
    kernel: str | None = None,
    *,
    finish_reason: str | None = None,
    reasoning: str = "",
    _decoded: bool = False,
) -> Extraction:
    """The PTX answer in ``reply`` for the entry ``kernel`` (None: any entry). ``reasoning``:
    the reply's separate reasoning field (``reasoning_content``), read only when the answer is
    empty."""
    answer = _answer_text(reply)
    if isinstance(answer, Extraction):
        return answer
    if not answer.text.strip():
        taken = None if _decoded else _from_reasoning(answer, reasoning, kernel, finish_reason)
        if taken is not None:
            return taken
        return Extraction(
            None,
            _empty_answer_problem(answer.reasoning or reasoning, finish_reason),
            reasoning=answer.reasoning,
            notes=(answer.turn,) if answer.turn else (),
        )
    reasoning = answer.reasoning
    found = _candidates(answer.text, kernel)
    notes = _reading_notes(answer.unwrapped, found.lines, finish_reason, answer.turn, found.split)
    if not found.pool and not _decoded:
        again = _extract_decoded(answer, kernel, finish_reason, notes)
        if again is not None:
            return again
    if not found.pool:
        problem = _no_ptx_problem(answer, found, finish_reason)
        cut = finish_reason == "length"
        return Extraction(None, problem, found.fences, cut, notes=tuple(notes), reasoning=reasoning)
    seg, mod, truncated = _pick_block(found, kernel, notes)
    ptx, dropped, problem, elision = _judge_block(seg, _drop_prose_after(seg, mod, notes))
    if problem:
        return Extraction(None, problem, found.fences, truncated, True, tuple(notes), reasoning)
    ptx = _keep_requested_entry(ptx, dropped, mod, kernel, notes)
    ptx = _clean_ptx(ptx, answer, found.quoted, notes)
    problem = _cut_note(finish_reason) if truncated else ""
    return Extraction(ptx, problem, found.fences, truncated, bool(elision), tuple(notes),
                      reasoning, elision)  # fmt: skip
