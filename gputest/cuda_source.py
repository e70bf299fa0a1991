"""Find ``__global__`` kernels in CUDA source and infer a test spec from a signature.

Inference follows what the signature says and what kernel code conventionally means:
``const T*`` is an input, ``T*`` an output, an integer named n/N/size/count/len/... is the problem
size, other scalars need a value (floats get 1.25 and say so). The launch is the elementwise
default, 256 threads and ceil(n/256) blocks. Annotations override any of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import dtypes
from .spec import LaunchSpec, ParamSpec, SpecProblem, TestSpec

SIZE_NAMES = {
    "n", "N", "size", "count", "len", "length", "numel", "num_elements", "n_elements",
    "nelems", "num", "total", "num_items",
}  # fmt: skip
_QUALIFIERS = {"__restrict__", "__restrict", "restrict", "volatile", "struct"}


@dataclass
class CudaParam:
    text: str  # as written, for messages
    name: str
    base_type: str  # "float", "unsigned int" (qualifiers removed)
    is_pointer: bool
    is_const: bool  # const data (pointers: const before the '*')


@dataclass
class CudaKernel:
    name: str
    line: int  # 0-based line of the name
    col: int
    decl_line: int  # line where the declaration starts (__global__ or template/extern before it)
    params: list[CudaParam]


def strip_comments(source: str) -> str:
    """Blank out comments and string contents, keeping every offset and newline in place."""

    def blank(m: re.Match) -> str:
        return re.sub(r"[^\n]", " ", m.group(0))

    return re.sub(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', blank, source, flags=re.S)


_GLOBAL = re.compile(
    r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(?:static\s+|inline\s+)*void\s+"
    r"(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\(([^)]*)\)"
)


def find_kernels(source: str) -> list[CudaKernel]:
    code = strip_comments(source)
    kernels = []
    # Split once and count lines from the previous kernel on: per kernel from the start (and a
    # split per kernel) was quadratic, seconds of the event loop for a code-lens request.
    lines: list[str] | None = None
    counted_to, newlines = 0, 0

    def line_of(pos: int) -> int:
        nonlocal counted_to, newlines
        newlines += code.count("\n", counted_to, pos)
        counted_to = pos
        return newlines

    for m in _GLOBAL.finditer(code):
        name = m.group(1)
        decl_line = line_of(m.start())
        line = line_of(m.start(1))
        col = m.start(1) - (code.rfind("\n", 0, m.start(1)) + 1)
        # A template<...> or extern "C" on the line(s) just above belongs to the declaration.
        if lines is None:
            lines = code.split("\n")
        while decl_line > 0 and re.match(r"\s*(template\s*<|extern\b)", lines[decl_line - 1]):
            decl_line -= 1
        params = [_parse_param(p) for p in _split_params(source[m.start(2) : m.end(2)])]
        kernels.append(CudaKernel(name, line, col, decl_line, [p for p in params if p]))
    return kernels


def _split_params(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [re.sub(r"\s+", " ", strip_comments(p)).strip() for p in parts if p.strip()]


def _parse_param(text: str) -> CudaParam | None:
    if text == "void":
        return None
    text_nodefault = text.split("=")[0].strip()
    m = re.match(r"(.*?)(\w+)\s*(\[\s*\])?$", text_nodefault)
    if not m:
        return None
    type_part, name, array = m.group(1), m.group(2), m.group(3)
    is_pointer = "*" in type_part or bool(array)
    before_star = type_part.split("*")[0]
    words = [w for w in re.findall(r"\w+", before_star) if w not in _QUALIFIERS]
    is_const = "const" in words
    base = " ".join(w for w in words if w != "const")
    return CudaParam(text, name, base, is_pointer, is_const)


def infer_spec(kernel: CudaKernel) -> tuple[TestSpec, list[SpecProblem]]:
    """A spec from the signature alone; problems say what could not be inferred."""
    params: list[ParamSpec] = []
    problems: list[SpecProblem] = []
    origin = [f"roles and types from the CUDA signature of {kernel.name}"]
    size_seen = False
    for p in kernel.params:
        dt = dtypes.from_cuda(p.base_type)
        if dt is None:
            problems.append(
                SpecProblem(
                    f"parameter '{p.name}': cannot test type '{p.base_type}' "
                    f"(known: {', '.join(dtypes.DTYPES)}); annotate it",
                    kernel.line,
                )
            )
            params.append(ParamSpec(p.name, "in" if p.is_pointer else "scalar", "?"))
            continue
        if p.is_pointer:
            params.append(ParamSpec(p.name, "in" if p.is_const else "out", dt.name, "n"))
        elif not dt.is_float and p.name in SIZE_NAMES and not size_seen:
            size_seen = True
            params.append(ParamSpec(p.name, "size", dt.name))
        elif dt.is_float:
            params.append(ParamSpec(p.name, "scalar", dt.name, value="1.25"))
            origin.append(f"{p.name} = 1.25 (default for a float scalar)")
        else:
            params.append(ParamSpec(p.name, "scalar", dt.name, value=None))
    if not size_seen and any(p.is_pointer for p in params):
        origin.append("no size parameter: pointer lengths default to n, the case size")
    spec = TestSpec(kernel=kernel.name, params=params, launch=LaunchSpec(), origin=origin)
    return spec, problems
