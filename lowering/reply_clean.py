"""Cleaning the PTX answer of a model's reply: an elision marker found (``// ...``, ``// rest
unchanged``), ``@gputest`` lines and non-ASCII comments removed, entries other than the
requested one and ``.func``s nothing kept calls dropped.

Stage 4 of reading a reply (``extract.py`` has the rules and runs the stages); each change is
reported back as a note.
"""

from __future__ import annotations

import re

from ptxls.frontend.ptx_scan import Module, blank_comments_and_strings

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


def strip_gputest(ptx: str) -> tuple[str, int]:
    if "@gputest" not in ptx:
        return ptx, 0
    kept, dropped = [], 0
    for line in ptx.split("\n"):
        if "@gputest" in line:
            dropped += 1
        else:
            kept.append(line)
    return "\n".join(kept), dropped


def strip_non_ascii_comments(ptx: str) -> tuple[str, int]:
    if ptx.isascii():
        return ptx, 0
    code = blank_comments_and_strings(ptx)
    out, removed = [], 0
    for ch, c in zip(ptx, code, strict=True):
        if ch != c and not ch.isascii():  # inside a comment or string: blanked in ``code``
            removed += 1
            continue
        out.append(ch)
    return "".join(out), removed


_WORD = re.compile(r"[A-Za-z_$%][\w$]{0,200}")


def keep_entry(module: Module, kernel: str) -> tuple[str, list[str], list[str]]:
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
