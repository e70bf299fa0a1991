"""Which of a reply's PTX blocks is the answer, and where a reply's turn ends.

``extract.py`` finds every block of PTX in a reply; this module decides which one the model
meant, in this order:

1. **What the prose says.** "use the first", "go with version 2" picks that block; "the second
   is wrong", "ignore the first one", "the first has no tail" rules it out; a line such as
   "Final version:" or "Corrected kernel:" points at the block after it. Ordinals count the
   reply's PTX blocks of the requested kernel, in order.
2. **What the PTX does.** Among the complete blocks left, the last one with no dataflow finding
   (``frontend/ptx_dataflow.py``: a register read that no write reaches, pointers never stored
   through …) is preferred to a later one that has findings.
3. Else the last complete block.

Two modules in one fence (a "before" and an "after", each with its own ``.version``) are two
blocks, never spliced into one (``split_modules``).

``first_turn`` cuts a reply at a chat template's end-of-turn token that leaked into the text
(ChatML's ``<|im_end|>``, Llama 3's ``<|eot_id|>``, Phi's ``<|end|>``, ``<|endoftext|>``, ``</s>``)
and drops the role headers (``<|im_start|>assistant``, ``<|start_header_id|>assistant
<|end_header_id|>``), so a second, invented turn is never read as part of the answer.

Everything here is bounded regular expressions over the prose lines: linear in the reply.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

# ---- turns

_END_OF_TURN = re.compile(r"<\|(?:im_end|eot_id|end|endoftext|eom_id|end_of_turn)\|>|</s>")
_ROLE_HEADER = re.compile(
    r"\A\s{0,20}(?:<\|im_start\|>[ \t]{0,4}([A-Za-z_]{1,20})[ \t]{0,4}\n?"
    r"|<\|start_header_id\|>[ \t]{0,4}([A-Za-z_]{1,20})[ \t]{0,4}<\|end_header_id\|>"
    r"|<\|(user|assistant|system|tool)\|>"
    r"|<start_of_turn>[ \t]{0,4}([A-Za-z_]{1,20})[ \t]{0,4}\n?)"
)
_ANY_CONTROL = re.compile(r"<\|(?:im_start|im_end|eot_id|start_header_id|end|endoftext|eom_id|"
                          r"user|assistant|system)\|>|</s>|<start_of_turn>|<end_of_turn>")  # fmt: skip
_NOT_ANSWER_ROLES = {"user", "system", "tool", "ipython"}


def first_turn(text: str) -> tuple[str, str]:
    """(the reply's own turn, a note when control tokens were found and cut)."""
    if not _ANY_CONTROL.search(text):
        return text, ""
    text = text.replace("<end_of_turn>", "<|end_of_turn|>")
    turns = _END_OF_TURN.split(text)
    for k, piece in enumerate(turns):
        role = ""
        while m := _ROLE_HEADER.match(piece):
            role = next((g for g in m.groups() if g), "").lower()
            piece = piece[m.end() :]
        if role in _NOT_ANSWER_ROLES or not piece.strip():
            continue
        later = sum(1 for t in turns[k + 1 :] if t.strip())
        note = "the reply held chat-template control tokens (<|im_end|>, <|eot_id|> …)"
        note += (
            f"; read up to the end of its own turn ({later} later turn{'s' * (later != 1)} ignored)"
            if later
            else "; removed"
        )
        return piece, note
    return "", "the reply held only chat-template control tokens and other roles' turns"


# ---- two modules in one fence

_VERSION_LINE = re.compile(r"(?m)^[ \t]*\.version[ \t]")
_FUNCTION = re.compile(r"\.(?:entry|func)\b")


def split_modules(text: str) -> list[tuple[int, str]]:
    """(line offset, text) of each module in ``text``: split before every ``.version`` line after
    the first (with the comment lines right above it), when each part declares a function."""
    starts = [m.start() for m in _VERSION_LINE.finditer(text)]
    if len(starts) < 2:
        return [(0, text)]
    cuts = [0]
    for at in starts[1:]:
        # the comment lines just above a module's .version belong to it
        begin = text.rfind("\n", 0, at) + 1
        while begin > 0:
            prev = text.rfind("\n", 0, begin - 1) + 1
            if text[prev:begin].lstrip().startswith("//"):
                begin = prev
            else:
                break
        cuts.append(begin)
    parts = [text[a:b] for a, b in zip(cuts, [*cuts[1:], len(text)], strict=True)]
    if not all(_FUNCTION.search(p) for p in parts):
        return [(0, text)]
    return [(text.count("\n", 0, a), p) for a, p in zip(cuts, parts, strict=True)]


# ---- which block: the prose first

_ORDINALS = {
    "first": 0, "1st": 0, "one": 0, "1": 0, "second": 1, "2nd": 1, "two": 1, "2": 1,
    "third": 2, "3rd": 2, "three": 2, "3": 2, "fourth": 3, "4th": 3, "four": 3, "4": 3,
    "last": -1, "final": -1,
}  # fmt: skip
_ORD = r"(first|second|third|fourth|last|1st|2nd|3rd|4th)"
_THING = r"(?:one|version|block|kernel|module|variant|option|listing|attempt|snippet|code)"
_NUMBERED = r"(?:version|option|block|variant|listing|attempt|snippet)\s{0,3}#?\s{0,3}(\d|one|two|three|four)\b"
_USE = re.compile(
    rf"(?i)\b(?:use|take|go with|pick|choose|prefer|keep|apply|go for)\s{{1,3}}(?:the\s{{1,3}})?"
    rf"(?:{_ORD}(?:\s{{1,3}}{_THING})?\b|{_NUMBERED})"
    rf"|\b(?:the\s{{1,3}})?(?:{_ORD}\s{{1,3}}{_THING}|{_NUMBERED})\s{{1,3}}is\s{{1,3}}(?:the\s{{1,3}})?"
    r"(?:correct|right|final|good|working|one to use|answer)\b"
)
_WRONG = re.compile(
    rf"(?i)\b(?:ignore|disregard|discard|skip|don'?t use|do not use|not)\s{{1,3}}(?:the\s{{1,3}})?"
    rf"(?:{_ORD}(?:\s{{1,3}}{_THING})?\b|{_NUMBERED})"
    rf"|\bthe\s{{1,3}}(?:{_ORD}(?:\s{{1,3}}{_THING})?|{_NUMBERED})\s{{1,3}}"
    r"(?:is|was|has|had|contains|misses|lacks|doesn'?t|does not|isn'?t|is not|won'?t|will not)\b"
    r"[^.\n;]{0,60}?\b(?:wrong|broken|incorrect|buggy|bug|incomplete|no tail|missing|invalid|"
    r"not work|fails?|mistake|errors?|outdated|old|bad|flawed|race)\b"
)
_FINAL_LINE = re.compile(
    r"(?i)^\W{0,6}(?:here\s{1,3}is\s{1,3}(?:the\s{1,3})?|here'?s\s{1,3}(?:the\s{1,3})?)?"
    r"(?:final|corrected|fixed|complete|full|updated|working|revised)\s{1,3}"
    r"(?:version|kernel|answer|ptx|code|module|listing|solution)\b[^\n]{0,60}$"
)


@dataclass(frozen=True)
class Choice:
    index: int  # into the blocks handed in
    why: str  # for the notes: "the reply says 'use the first'"


def _ordinal(m: re.Match[str]) -> int | None:
    word = next((g for g in m.groups() if g), None)
    return _ORDINALS.get(word.lower()) if word else None


def choose(
    blocks: list[tuple[int, int]],
    complete: list[bool],
    prose: list[tuple[int, str]],
    has_findings: Callable[[int], bool],
) -> Choice:
    """The block to take. ``blocks``: (first, last) line of each block of the requested kernel
    in the reply's answer; ``complete``: whether each one's entry body closes; ``prose``:
    (line, text) of the answer's lines outside every block; ``has_findings(i)``: whether block i
    has dataflow findings (asked lazily)."""
    n = len(blocks)
    done = [i for i in range(n) if complete[i]]
    if not done:
        return Choice(n - 1, "")
    wanted, ruled_out, quoted = None, set(), ""
    for _line, text in prose:
        for m in _WRONG.finditer(text):
            k = _ordinal(m)
            if k is not None and -n <= k < n:
                ruled_out.add(k % n)
                quoted = quoted or m.group(0)
        for m in _USE.finditer(text):
            k = _ordinal(m)
            if k is not None and -n <= k < n and complete[k % n]:
                wanted, quoted = k % n, m.group(0)
    if wanted is not None:
        return Choice(wanted, f"the reply says {quoted.strip()!r}")
    left = [i for i in done if i not in ruled_out] or done
    why_out = f"the reply says {quoted.strip()!r}" if ruled_out and left != done else ""
    for line, text in prose:
        if _FINAL_LINE.match(text.strip()):
            after = [i for i in left if blocks[i][0] > line]
            if after:
                return Choice(after[0], f"the reply points at it ({text.strip()[:60]!r})")
    last = left[-1]
    if len(left) > 1 and has_findings(last):
        clean = [i for i in left if not has_findings(i)]
        if clean:
            return Choice(
                clean[-1], "a later block has dataflow findings (code left out); this one has none"
            )
    return Choice(last, why_out)
