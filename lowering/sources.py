"""Find what can be lowered in a buffer: CUDA ``__global__`` kernels, ``@triton.jit``
functions, natural-language requests in comments, and PTX entries (for "Optimize").

Plain text scanning that never raises: code actions ask on every cursor move, so this must be
cheap and tolerant of half-typed code. Lines are 0-based, end inclusive.

Natural-language syntax (documented in lowering/README.md): a comment line starting with
``@ptx:`` — ``// @ptx: <request>`` in .cu/.ptx (``# @ptx:`` in .py) — continued by following
comment lines that are not blank, e.g.::

    // @ptx: relu_inplace(float* x, int n): x[i] = max(x[i], 0) for i < n
    //       one element per thread
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from .ptx_check import ExpectedParam


@dataclass
class SourceKernel:
    kind: str  # "cuda", "triton", "request", "ptx"
    name: str  # kernel name ("" for a request that names none)
    text: str  # the kernel's source text (or the request)
    start_line: int
    end_line: int
    params: list[ExpectedParam] | None = None  # None when unknown (requests, Triton)
    notes: list[str] = field(default_factory=list)

    def contains(self, line: int) -> bool:
        return self.start_line <= line <= self.end_line


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset)


def _blank_comments(text: str) -> str:
    """Comments and strings replaced by spaces (newlines kept) so braces in them don't count."""

    def repl(m: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", m.group(0))

    return re.sub(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', repl, text, flags=re.DOTALL)


def _matching_brace(clean: str, open_at: int) -> int:
    depth = 0
    for i in range(open_at, len(clean)):
        if clean[i] == "{":
            depth += 1
        elif clean[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    return len(clean) - 1


_GLOBAL = re.compile(
    r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(?:static\s+)?void\s+"
    r"(?:__launch_bounds__\s*\([^)]*\)\s*)?(?P<name>[A-Za-z_]\w*)\s*\((?P<params>[^)]*)\)"
)


def _split_params(params: str) -> list[ExpectedParam]:
    out = []
    for raw in params.split(","):
        p = " ".join(raw.replace("__restrict__", " ").split())
        if not p or p == "void":
            continue
        p = p.split("=")[0].strip()  # default arguments
        m = re.match(r"(?P<type>.*?[\s*&])(?P<name>[A-Za-z_]\w*)\s*(?P<arr>\[[^\]]*\])?$", p)
        if not m:
            out.append(ExpectedParam(f"arg{len(out)}", p))
            continue
        ctype = " ".join(m.group("type").replace("*", " * ").split()).replace(" *", "*")
        if m.group("arr"):
            ctype += "*"
        out.append(ExpectedParam(m.group("name"), ctype))
    return out


def cuda_kernels(text: str) -> list[SourceKernel]:
    clean = _blank_comments(text)
    found = []
    for m in _GLOBAL.finditer(clean):
        start = clean.rfind("\n", 0, m.start()) + 1
        # template<...> / extern "C" on the line(s) above belong to the kernel
        prev = clean.rfind("\n", 0, max(start - 1, 0)) + 1
        if start > 0 and re.match(r"\s*(template\s*<|extern\s+\"C\")", text[prev:start]):
            start = prev
        brace = clean.find("{", m.end())
        semicolon = clean.find(";", m.end())
        if brace < 0 or (0 <= semicolon < brace):
            continue  # a declaration, not a definition
        end = _matching_brace(clean, brace)
        notes = []
        if "template" in text[start : m.start()]:
            notes.append("templated kernel: the PTX must be for one instantiation")
        found.append(
            SourceKernel(
                kind="cuda",
                name=m.group("name"),
                text=text[start : end + 1],
                start_line=_line_of(text, start),
                end_line=_line_of(text, end),
                params=_split_params(m.group("params")),
                notes=notes,
            )
        )
    return found


def triton_kernels(text: str) -> list[SourceKernel]:
    """``@triton.jit`` (or ``@jit`` from triton) functions. Falls back to a regex scan when the
    file does not parse (mid-edit), so the action does not flicker while typing."""
    found = []
    lines = text.splitlines()
    try:
        tree = ast.parse(text)
    except SyntaxError:
        tree = None
    if tree is not None:
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef):
                continue
            decos = [ast.get_source_segment(text, d) or "" for d in node.decorator_list]
            if not any(re.search(r"(^|\.)jit\b|autotune|heuristics", d) for d in decos):
                continue
            if not any("triton" in d or d.startswith("jit") for d in decos):
                continue
            start = min([d.lineno for d in node.decorator_list] + [node.lineno]) - 1
            end = (node.end_lineno or node.lineno) - 1
            found.append(
                SourceKernel("triton", node.name, "\n".join(lines[start : end + 1]), start, end)
            )
        return found
    for i, line in enumerate(lines):
        if re.match(r"\s*@(triton\.)?jit\b", line):
            j = i + 1
            while j < len(lines) and not re.match(r"\s*def\s+", lines[j]):
                j += 1
            if j >= len(lines):
                break
            m = re.match(r"(\s*)def\s+(\w+)", lines[j])
            indent = len(m.group(1))
            k = j + 1
            while k < len(lines) and (
                not lines[k].strip() or len(lines[k]) - len(lines[k].lstrip()) > indent
            ):
                k += 1
            found.append(SourceKernel("triton", m.group(2), "\n".join(lines[i:k]), i, k - 1))
    return found


_REQUEST = re.compile(r"^\s*(?://|#|;)\s*@ptx:\s*(?P<req>.*)$")
_COMMENT = re.compile(r"^\s*(?://|#|;)\s?(?P<body>.*)$")
_NAME_IN_REQUEST = re.compile(r"^\s*(?:kernel\s+)?(?P<name>[A-Za-z_]\w*)\s*(?:\(|:)")


def requests(text: str) -> list[SourceKernel]:
    lines = text.splitlines()
    found = []
    i = 0
    while i < len(lines):
        m = _REQUEST.match(lines[i])
        if not m:
            i += 1
            continue
        parts = [m.group("req").strip()]
        j = i + 1
        while j < len(lines):
            c = _COMMENT.match(lines[j])
            if not c or not c.group("body").strip() or _REQUEST.match(lines[j]):
                break
            # "@gputest ..." lines in the block say how to test the result (a numpy reference);
            # they belong to the request's block but not to what the model is asked for.
            if not c.group("body").lstrip().startswith("@gputest"):
                parts.append(c.group("body").strip())
            j += 1
        req = " ".join(p for p in parts if p)
        name = _NAME_IN_REQUEST.match(req)
        params = None
        sig = re.match(r"^\s*(?:kernel\s+)?([A-Za-z_]\w*)\s*\(([^)]*)\)", req)
        if sig:
            params = _split_params(sig.group(2))
        found.append(
            SourceKernel(
                "request", name.group("name") if name else "", req, i, j - 1, params=params
            )
        )
        i = j
    return found


def ptx_entries(text: str) -> list[SourceKernel]:
    from ptxls.frontend.ptx import parse_ptx

    module, _ = parse_ptx(text)
    return [
        SourceKernel(
            "ptx",
            f.name,
            text,
            f.span.start.line,
            f.span.end.line,
        )
        for f in module.entries
    ]


def kernels_in(text: str, language: str) -> list[SourceKernel]:
    """Everything lowerable in a buffer of ``language`` ("cuda", "python", "ptx")."""
    if language == "cuda":
        return cuda_kernels(text) + requests(text)
    if language == "python":
        return triton_kernels(text) + requests(text)
    if language == "ptx":
        return ptx_entries(text) + requests(text)
    return []


def language_of(path: str) -> str | None:
    p = path.lower()
    if p.endswith((".cu", ".cuh")):
        return "cuda"
    if p.endswith(".py"):
        return "python"
    if p.endswith(".ptx"):
        return "ptx"
    return None
