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

The reader has five stages, one module each: 1. ``reply_text.py`` normalises (line endings,
invisible characters, quotes, HTML, reasoning sections, a JSON wrapper, escaped line breaks); 2. ``reply_blocks.py`` finds the fenced
blocks and bare PTX (``Segment``); 3. ``frontend/ptx_scan.py`` says what a stretch of PTX
declares (``Function``/``Module``, a tolerant scan of text that may be cut off); 4.
``reply_clean.py`` cleans the answer; 5. this module chooses the answer (``_Candidates``, with
``reply_choice.py``) and is the one entry point, ``extract_ptx``, with the limits every stage
relies on.
"""

from __future__ import annotations

import dataclasses
import html
import re
from dataclasses import dataclass

from ptxls.frontend.ptx_dataflow import check_dataflow
from ptxls.frontend.ptx_scan import Module, analyse

from .reply_blocks import Segment, find_segments, ptx_like
from .reply_choice import choose, first_turn, split_modules
from .reply_clean import find_elision, keep_entry, strip_gputest, strip_non_ascii_comments
from .reply_text import (
    HTML_ENTITY,
    clean_invisible,
    decode_escapes,
    html_blocks_as_fences,
    normalise,
    split_reasoning,
    unquote,
    unwrap_json,
)

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
    named: bool = False  # every block of the pool declares the requested entry


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
    answer, unwrapped = unwrap_json(answer)
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
    segments, fences = find_segments(lines)
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
    return _Candidates(lines, quoted, segments, fences, named or with_entry, split, bool(named))


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
    decoded = decode_escapes(answer.text)
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
    in_reasoning = analyse(answer.reasoning) if answer.reasoning else None
    if in_reasoning is not None and in_reasoning.entries():
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
    covered: set[int] = set()
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
        if not ptx_like(line.strip()):
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
    ptx, dropped = strip_gputest(text)
    elided = find_elision(ptx)
    if elided is not None:
        no, line = elided
        return ptx, dropped, "", f"line {no} of the PTX says code was left out ({line[:120]!r})"
    return ptx, dropped, "", ""


def _keep_requested_entry(
    ptx: str, dropped: int, mod: Module, kernel: str | None, named: bool, notes: list[str]
) -> str:
    """Step 5: only the requested entry and the .funcs it uses, with a note of what went.
    ``named``: the block declares the entry (the scan said so when the pool was made)."""
    if not (kernel and named):
        return ptx
    kept, gone_entries, gone_funcs = keep_entry(analyse(ptx) if dropped else mod, kernel)
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
    if HTML_ENTITY.search(ptx):
        # PTX has no '&' at all: an entity is HTML escaping from a <pre><code> rendering
        ptx = html.unescape(ptx)
        notes.append("decoded HTML entities (&lt; &gt; &amp;) in the PTX")
    ptx, removed = strip_non_ascii_comments(ptx)
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
    ptx = _keep_requested_entry(ptx, dropped, mod, kernel, found.named, notes)
    ptx = _clean_ptx(ptx, answer, found.quoted, notes)
    problem = _cut_note(finish_reason) if truncated else ""
    return Extraction(ptx, problem, found.fences, truncated, bool(elision), tuple(notes),
                      reasoning, elision)  # fmt: skip
