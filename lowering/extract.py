"""Find the PTX in a model's reply. Nothing else from a reply is ever used, let alone run.

Replies come as fenced blocks with or without a language tag (```ptx, ```asm, ``` or ~~~),
several blocks (a plan, then the kernel; or the CUDA echoed back, then the PTX), prose around
them, or bare PTX. The block that declares an ``.entry`` wins (the one naming the expected
kernel first); an unterminated fence (a reply cut off at max tokens) still yields its text, with
a note, so ptxas can say what is missing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE = re.compile(r"^(?P<fence>```+|~~~+)[ \t]*(?P<tag>[\w+.-]*)[^\n]*\n", re.MULTILINE)
_ENTRY = re.compile(r"\.entry\s+([A-Za-z_$][\w$]*)")
_PTX_START = re.compile(
    r"^\s*(//[^\n]*\n\s*)*\.(version|target|address_size|visible|entry)\b", re.MULTILINE
)


@dataclass(frozen=True)
class Extraction:
    ptx: str | None
    problem: str = ""  # why there is no PTX, or a note about what was taken
    blocks: int = 0  # fenced blocks seen
    truncated: bool = False


def _blocks(reply: str) -> tuple[list[tuple[str, str]], bool]:
    """(tag, body) of each fenced block, and whether the last one never closed."""
    blocks, pos, truncated = [], 0, False
    while True:
        m = _FENCE.search(reply, pos)
        if not m:
            break
        fence = m.group("fence")
        close = re.compile(
            rf"^[ \t]*{re.escape(fence[0]) * len(fence)}[{re.escape(fence[0])}]*[ \t]*$",
            re.MULTILINE,
        )
        c = close.search(reply, m.end())
        if c is None:
            blocks.append((m.group("tag").lower(), reply[m.end() :]))
            truncated = True
            break
        blocks.append((m.group("tag").lower(), reply[m.end() : c.start()]))
        pos = c.end()
    return blocks, truncated


def _bare_ptx(reply: str) -> str | None:
    """PTX written without fences: from the first directive to the last closing brace."""
    m = _PTX_START.search(reply)
    if not m or not _ENTRY.search(reply, m.start()):
        return None
    end = reply.rfind("}")
    if end < m.start():
        return reply[m.start() :].strip() + "\n"
    return reply[m.start() : end + 1].strip() + "\n"


def extract_ptx(reply: str | None, kernel: str | None = None) -> Extraction:
    if not reply or not reply.strip():
        return Extraction(None, "the reply was empty")
    blocks, truncated = _blocks(reply)
    with_entry = [(tag, body) for tag, body in blocks if _ENTRY.search(body)]
    if with_entry:
        if kernel:
            named = [b for b in with_entry if kernel in _ENTRY.findall(b[1])]
            with_entry = named or with_entry
        # a block tagged as PTX beats an untagged one; among equals, the last (the final answer)
        ptx_tagged = [b for b in with_entry if b[0] in ("ptx", "nvptx", "asm")]
        tag, body = (ptx_tagged or with_entry)[-1]
        cut = truncated and body is blocks[-1][1]
        note = "the reply was cut off inside the PTX block (max tokens?)" if cut else ""
        return Extraction(body.strip() + "\n", note, len(blocks), cut)
    bare = _bare_ptx(reply)
    if bare:
        return Extraction(bare, "", len(blocks))
    if blocks:
        tags = ", ".join(sorted({t or "untagged" for t, _ in blocks}))
        return Extraction(
            None,
            f"the reply has {len(blocks)} code block(s) ({tags}) but none declares a PTX '.entry'",
            len(blocks),
            truncated,
        )
    return Extraction(None, "the reply contains no PTX (no code block, no '.entry')")
