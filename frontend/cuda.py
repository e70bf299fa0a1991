"""The one reader of CUDA ``__global__`` kernel signatures, for the GPU tests (spec inference,
code lenses) and the lowering loop (what a PTX lowering must match).

Not a C++ parser: it finds each ``__global__`` and reads the declaration around it — the
``template<...>``/``extern "C"`` lines above, specifiers and attributes (``static``,
``__launch_bounds__(...)``, ``__attribute__((...))``, ``[[...]]``), the name, the parameters
(split at top-level commas, so ``Pair<int, float>`` and default arguments like ``f(1, 2)`` stay
whole) and the body's braces. Comments, strings and character literals are blanked first, so a
``'}'`` or a commented-out kernel changes nothing. Never raises; lines are 0-based.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

# Qualifiers that say nothing about the type's width or a pointer's constness.
_NOISE = {"__restrict__", "__restrict", "restrict", "__grid_constant__", "register"}
# Words that change the type but are not its base name.
_QUALIFIERS = {"const", "volatile", "struct", "class", "enum", "typename"} | _NOISE
# Words that can end a type, so a parameter made only of them has no name (``unsigned int``).
_TYPE_WORDS = {
    "void", "bool", "char", "short", "int", "long", "float", "double", "signed", "unsigned",
    "const", "volatile", "__restrict__", "__restrict", "restrict", "half", "__half",
}  # fmt: skip


@dataclass(slots=True)
class CudaParam:
    text: str  # as written (comments removed, spaces collapsed), for messages
    name: str  # "argN" when the declaration leaves it unnamed
    c_type: str  # "const float*", "unsigned int", "float* const" (restrict-like words dropped)
    base_type: str  # "float", "unsigned int": const/volatile/struct and the pointer removed
    is_pointer: bool  # a pointer or an array ``a[]``
    is_const: bool  # const data (for a pointer: const before the first '*')
    default: str = ""  # the default argument, as written


@dataclass(slots=True)
class CudaKernel:
    name: str
    line: int  # 0-based line of the name
    col: int
    decl_line: int  # where the declaration starts (template<...>/extern "C" lines included)
    end_line: int  # the closing brace of the body (or the ';' of a declaration)
    params: list[CudaParam] = field(default_factory=list)
    is_definition: bool = True  # has a body (a forward declaration has not)
    is_template: bool = False
    offsets: tuple[int, int] = (0, 0)  # [start of decl_line, just past the '}' or ';')


_BLANK_RE = re.compile(
    r"//[^\n]*|/\*.*?(?:\*/|\Z)|\"(?:[^\"\\\n]|\\.)*\"?|'(?:[^'\\\n]|\\.)*'?", re.DOTALL
)


def blank_comments_and_literals(text: str) -> str:
    """Comments, string and character literals (their quotes too) replaced by spaces, newlines
    kept, same length: C's lexical rules (``ptx.blank_comments`` keeps a PTX string's quotes and
    knows no character literals)."""
    return _BLANK_RE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


_GLOBAL_RE = re.compile(r"(?<![\w$])__global__(?![\w$])")
_WORD_RE = re.compile(r"[A-Za-z_]\w*")
_DECL_PREFIX_RE = re.compile(r"\s*(template\s*<|extern\b)")


def _closing(clean: str, i: int, open_ch: str, close_ch: str) -> int:
    """Offset of the bracket that closes the one at ``i`` (len(clean) when none does)."""
    depth = 0
    for j in range(i, len(clean)):
        c = clean[j]
        if c == open_ch:
            depth += 1
        elif c == close_ch:
            depth -= 1
            if depth == 0:
                return j
    return len(clean)


def _skip_space(clean: str, i: int) -> int:
    while i < len(clean) and clean[i].isspace():
        i += 1
    return i


def _read_name(clean: str, i: int) -> tuple[int, int, int] | None:
    """After ``__global__``: skip specifiers and attributes to the kernel's name. Returns
    (name start, name end, offset of its '('), or None when this is no declaration."""
    while i < len(clean):
        i = _skip_space(clean, i)
        if clean.startswith("[[", i):
            i = clean.find("]]", i)
            if i < 0:
                return None
            i += 2
            continue
        m = _WORD_RE.match(clean, i)
        if not m:
            return None
        after = _skip_space(clean, m.end())
        word = m.group(0)
        is_attribute = word.startswith("__") and word.endswith("__") or word == "alignas"
        if after < len(clean) and clean[after] == "(":
            if not is_attribute:
                return m.start(), m.end(), after
            i = _closing(clean, after, "(", ")") + 1
            continue
        if word == "__global__":
            return None  # two __global__ and no name between: not a declaration
        i = m.end()
    return None


def find_kernels(source: str) -> list[CudaKernel]:
    """Every ``__global__`` function, in file order. When a kernel is both declared and defined
    in the text, only the definition is listed."""
    code = blank_comments_and_literals(source)
    starts = [0] + [m.end() for m in re.finditer("\n", code)]
    lines: list[str] | None = None

    def line_of(offset: int) -> int:
        return bisect.bisect_right(starts, offset) - 1

    kernels: list[CudaKernel] = []
    for g in _GLOBAL_RE.finditer(code):
        if code[starts[line_of(g.start())] : g.start()].lstrip().startswith("#"):
            continue  # a macro's definition (#define KERNEL __global__ void), not a kernel
        found = _read_name(code, g.end())
        if found is None:
            continue
        name_start, name_end, open_paren = found
        close_paren = _closing(code, open_paren, "(", ")")
        j = close_paren + 1
        while j < len(code) and code[j] not in "{;":
            j += 1
        is_definition = j < len(code) and code[j] == "{"
        end = (_closing(code, j, "{", "}") if is_definition else j) + 1
        decl_line = line_of(g.start())
        if lines is None:
            lines = code.split("\n")
        while decl_line > 0 and _DECL_PREFIX_RE.match(lines[decl_line - 1]):
            decl_line -= 1
        name_line = line_of(name_start)
        kernels.append(
            CudaKernel(
                name=code[name_start:name_end],
                line=name_line,
                col=name_start - starts[name_line],
                decl_line=decl_line,
                end_line=line_of(min(end, len(code)) - 1) if code else 0,
                params=parse_params(code[open_paren + 1 : close_paren]),
                is_definition=is_definition,
                is_template="template" in code[starts[decl_line] : g.start()],
                offsets=(starts[decl_line], min(end, len(code))),
            )
        )
    defined = {k.name for k in kernels if k.is_definition}
    return [k for k in kernels if k.is_definition or k.name not in defined]


def _split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split at ``sep`` outside (), [], {} and <> (``Pair<int, float>``, ``f(1, 2)``)."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth = max(0, depth - 1)
        elif c == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def parse_params(text: str) -> list[CudaParam]:
    """The parameters of a signature's parentheses (``float* a, int n = 4``). ``void`` and an
    empty list give none; an unnamed parameter is named ``argN`` after its position."""
    params: list[CudaParam] = []
    for raw in _split_top_level(blank_comments_and_literals(text)):
        written = " ".join(raw.split())
        if not written or written == "void":
            continue
        decl, _, default = written.partition("=")
        params.append(_parse_param(written, decl.strip(), default.strip(), len(params)))
    return params


_PARAM_RE = re.compile(
    r"^(?P<type>.*?[\s*&])(?P<name>[A-Za-z_]\w*)\s*(?P<array>(?:\[[^\]]*\]\s*)*)$"
)


def _parse_param(written: str, decl: str, default: str, index: int) -> CudaParam:
    m = _PARAM_RE.match(decl)
    if m and m.group("name") not in _TYPE_WORDS and _has_type_word(m.group("type")):
        type_part, name, array = m.group("type"), m.group("name"), m.group("array")
    else:  # unnamed (``float*``, ``unsigned int``) or not understood
        type_part, name, array = decl, f"arg{index}", ""
    type_part = type_part.replace("&", " ")
    is_pointer = "*" in type_part or bool(array)
    before_star = type_part.split("*")[0]
    words = [w for w in re.findall(r"[\w:<>,]+", before_star) if w not in _NOISE]
    base = " ".join(w for w in words if w not in _QUALIFIERS)
    c_type = " ".join(w for w in type_part.replace("*", " * ").split() if w not in _NOISE)
    c_type = c_type.replace(" *", "*") + ("*" if array else "")
    return CudaParam(
        text=written,
        name=name,
        c_type=c_type,
        base_type=base,
        is_pointer=is_pointer,
        is_const="const" in words,
        default=default,
    )


def _has_type_word(type_part: str) -> bool:
    """A type part made only of qualifiers (``const n``) has no type: the last word is one."""
    return any(w not in _QUALIFIERS for w in re.findall(r"[\w:]+", type_part)) or "*" in type_part
