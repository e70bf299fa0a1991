"""The ``ref:`` language itself: its limits, its whitelists (functions, math functions,
methods, attributes, constants, operators) and ``check``, which parses a reference with ``ast``
and refuses, with the reason, anything outside them. The numpy functions and array methods are
the keys of ``ref_limits.py``'s rule tables, so each is listed once, beside its cost rule.

What the language is and why it is restricted: ``numpy_ref.py``, which runs what ``check``
accepts. Nothing here runs a reference; the limits are read by the evaluator there and by
``ref_limits.py``.
"""

from __future__ import annotations

import ast
import operator
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from .ref_limits import FUNCTION_RULES, METHOD_RULES

MAX_TEXT = 20_000  # characters in one reference
MAX_MATMUL_FLOPS = 1 << 37  # ~137 G multiply-adds (a 4096³ GEMM is 69 G): seconds, not hours
# A product BLAS does not compute (integers, float16, bool) runs numpy's own loop at 0.1-0.8 G
# multiply-adds per second (int64 2048³ took 70 s): 2^30 is seconds.
MAX_LOOP_MACS = 1 << 30
# Element operations of one call beyond its result (a sort is n·log n, diff of order k is k
# passes, roll by k shifts k copies): 2^32 is seconds, the deadline is checked between calls.
MAX_WORK = 1 << 32
MAX_INT_BITS = 128
MAX_STRING = 32
DEFAULT_DEADLINE_S = 60.0
MAX_ITEMSIZE = 16  # bytes per element: complex128; a subarray or string dtype multiplies it


def _memory_budget() -> int:
    """How much a reference may add to the process's resident memory. Each array is bounded by
    MAX_ELEMENTS, but 'a = ones(N); b = ones(N); ...' (or a list of such) is not: without a
    total, 60 s of that fills any machine. Half the RAM, between 2 and 16 GiB."""
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        ram = 32 << 30
    return max(2 << 30, min(16 << 30, ram // 2))


MAX_MEMORY_GROWTH = _memory_budget()


def element_limit(budget: int) -> int:
    """Elements in one array result, checked before numpy allocates it: a quarter of the memory
    budget in float64 (the type a reference computes in), between 2^27 (1 GiB) and 2^29
    (4 GiB). The library's benchmarks need 2^28 floats (a sum of 1 GiB) and 2^29 bytes (a
    histogram) with room for an intermediate of n + a row (bias + GELU): a machine with
    128 GiB gets 2^29 (budget 16 GiB), one with 16 GiB 2^28, one with 8 GiB or less 2^27.
    The budget still bounds what all arrays hold together."""
    elements = max(1 << 27, min(1 << 29, budget // 4 // 8))
    return 1 << (elements.bit_length() - 1)  # a power of two: the message reads 2^k


MAX_ELEMENTS = element_limit(MAX_MEMORY_GROWTH)

# Strings a call may receive besides numeric type names ('float32', 'i4'): the option words of
# the listed functions (np.pad's mode, sort's kind, order, indexing, ...). Anything else would be
# data, and a string array is 4 bytes per character per element (np.full(N, 'x' * 32) is 16 GiB
# at the element limit): refused before numpy sees it.
OPTION_WORDS = frozenset(
    [
        "constant",
        "edge",
        "wrap",
        "reflect",
        "symmetric",
        "linear_ramp",
        "maximum",
        "minimum",
        "mean",
        "median",
        "empty",
        "valid",
        "same",
        "full",
        "clip",
        "raise",
        "quicksort",
        "mergesort",
        "heapsort",
        "stable",
        "quick",
        "heap",
        "merge",
        "C",
        "A",
        "K",
        "ij",
        "xy",
        "left",
        "right",
        "unsafe",
        "same_kind",
        "safe",
        "equiv",
        "no",
        "linear",
        "lower",
        "higher",
        "midpoint",
        "nearest",
    ]
)


class RefError(ValueError):
    """The reference cannot run: refused (``refused`` True: outside the ref language) or failed."""

    def __init__(self, message: str, *, refused: bool = False):
        super().__init__(message)
        self.refused = refused


# numpy functions a reference may call, bare (``sqrt(x)``) or as ``np.sqrt(x)``: exactly the
# functions ``ref_limits.py`` has a cost rule for (one table, so a function is added in one place).
FUNCTIONS = frozenset(FUNCTION_RULES)

# math functions for scalars (``math.erf`` is what a GELU reference needs; numpy has no erf).
MATH = frozenset(
    [
        "sqrt",
        "exp",
        "log",
        "log2",
        "log10",
        "erf",
        "erfc",
        "tanh",
        "sin",
        "cos",
        "tan",
        "floor",
        "ceil",
        "fabs",
        "pow",
        "hypot",
        "gamma",
        "lgamma",
        "isfinite",
        "isnan",
        "isinf",
    ]
)

# Python built-ins. ``min``, ``max``, ``abs`` and ``round`` are numpy's (as they always were in
# a reference); Python's ``round(5, -10**9)`` would compute 10**(10**9).
BUILTINS = {"float": float, "int": int, "bool": bool, "len": len}

# Array methods: ``x.reshape(n, k).sum(axis=1)``; exactly those with a rule in ``ref_limits.py``.
METHODS = frozenset(METHOD_RULES)
ATTRIBUTES = frozenset(["T", "shape", "size", "ndim", "real", "imag"])

# Module-level constants and dtypes: ``np.pi``, ``np.float32``, ``np.newaxis``; ``math.pi``.
CONSTANTS = {
    "pi": np.pi,
    "e": np.e,
    "inf": np.inf,
    "nan": np.nan,
    "newaxis": None,
    "float16": np.float16,
    "float32": np.float32,
    "float64": np.float64,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "uint8": np.uint8,
    "uint16": np.uint16,
    "uint32": np.uint32,
    "uint64": np.uint64,
    "bool_": np.bool_,
}
MODULES = ("np", "numpy", "math")
_CALLABLE_NAMES = FUNCTIONS | set(BUILTINS) | set(CONSTANTS)


# What each operator node computes (the evaluator in numpy_ref.py applies them).
BINOPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow, ast.MatMult: operator.matmul, ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
}  # fmt: skip
UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert,
          ast.Not: operator.not_}  # fmt: skip
COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
            ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge}  # fmt: skip
_OP_TEXT = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
    ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|",
    ast.BitXor: "^", ast.MatMult: "@",
}  # fmt: skip

# Node types that may appear at all; each is checked further where it matters.
_EXPR_NODES = (
    ast.Constant, ast.Name, ast.Load, ast.Store, ast.BinOp, ast.UnaryOp, ast.Compare,
    ast.BoolOp, ast.And, ast.Or, ast.IfExp, ast.Call, ast.keyword, ast.Attribute, ast.Subscript,
    ast.Slice, ast.Tuple, ast.List, ast.Starred,
    *BINOPS, *UNARY, *COMPARE,
)  # fmt: skip


def describe(node: ast.AST) -> str:
    """What a person calls the construct: 'attribute access (.__class__)', 'a lambda', ..."""
    if isinstance(node, ast.Attribute):
        return f"attribute access (.{node.attr})"
    if isinstance(node, ast.Lambda):
        return "a lambda"
    if isinstance(node, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
        return "a comprehension"
    if isinstance(node, ast.Import | ast.ImportFrom):
        return "an import"
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return "a definition"
    if isinstance(node, ast.Constant):
        return f"the constant {short_text(repr(node.value), 40)}"
    if isinstance(node, ast.NamedExpr):
        return "':=' (assignment inside an expression)"
    if isinstance(node, ast.Dict | ast.Set):
        return "a dict or set literal"
    if isinstance(node, ast.JoinedStr):
        return "an f-string"
    if isinstance(node, ast.For | ast.While):
        return "a loop"
    if isinstance(node, ast.Expr):
        return "a bare expression (write 'out = ...')"
    return f"{type(node).__name__} syntax"


def short_text(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse(program: str) -> ast.Module:
    if len(program) > MAX_TEXT:
        raise RefError(f"the reference has {len(program)} characters (at most {MAX_TEXT})",
                       refused=True)  # fmt: skip
    try:
        return ast.parse(program.strip(), mode="exec")
    except SyntaxError as e:
        raise RefError(f"the reference '{short_text(program)}' is not valid ({e.msg})",
                       refused=True) from None  # fmt: skip
    except (RecursionError, MemoryError, ValueError):
        raise RefError("the reference is nested too deeply", refused=True) from None


def refuse(program: str, node: ast.AST, why: str = "") -> RefError:
    what = describe(node)
    return RefError(
        f"ref: {what} is not allowed{why} in '{short_text(program)}' — a reference may use "
        "arithmetic, comparisons, subscripts, the spec's names and listed numpy functions "
        "and array methods (see SECURITY.md)",
        refused=True,
    )


class _AnyName(set):
    """The names check() accepts when the spec's names are not known yet: all of them."""

    def __contains__(self, name: object) -> bool:
        return True


def check(program: str, names: set[str] | None = None) -> list[str]:
    """Refuse (RefError, ``refused=True``) a reference outside the ref language, before any of
    it runs. Returns the names it assigns, in order. ``names``: the spec's names, when known,
    so an unknown one is reported here rather than halfway through a GPU test (None: any name)."""
    tree = parse(program)
    assigned: list[str] = []
    known = _AnyName() if names is None else set(names) | _CALLABLE_NAMES | set(MODULES)
    if not tree.body:
        raise RefError("the reference is empty", refused=True)
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            if len(stmt.targets) != 1:
                raise refuse(program, stmt, " (one target per assignment)")
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AugAssign):
            if type(stmt.op) not in BINOPS:
                raise refuse(program, stmt)
            targets, value = [stmt.target], stmt.value
        else:
            raise refuse(program, stmt)
        for t in targets:
            name = _target_name(program, t)
            _check_expr(program, t, known, store=True)
            if isinstance(t, ast.Name) and name not in assigned:
                assigned.append(name)
        _check_expr(program, value, known)
        for t in targets:
            known.add(_target_name(program, t))
    return assigned


def _target_name(program: str, t: ast.AST) -> str:
    base = t
    while isinstance(base, ast.Subscript):
        base = base.value
    if not isinstance(base, ast.Name):
        raise refuse(program, t, " as an assignment target (assign to a name or a slice of one)")
    _check_name(program, base)
    return base.id


def _check_name(program: str, node: ast.Name) -> None:
    if node.id.startswith("_"):
        raise RefError(f"ref: the name '{node.id}' is not allowed (names starting with '_') in "
                       f"'{short_text(program)}'", refused=True)  # fmt: skip


def _check_expr(program: str, root: ast.AST, known: set[str], store: bool = False) -> None:
    # Dunder names and attributes first: the message should name the escape attempt
    # ('.__class__'), not the call or subscript that wraps it.
    for node in ast.walk(root):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            raise refuse(program, node)
        if isinstance(node, ast.Name):
            _check_name(program, node)
    for node in ast.walk(root):
        if not isinstance(node, _EXPR_NODES):
            raise refuse(program, node)
        if isinstance(node, ast.Name):
            _check_name(program, node)
            if isinstance(node.ctx, ast.Load) and node.id not in known:
                raise RefError(
                    f"ref: unknown name '{node.id}' in '{short_text(program)}' (the spec's names, "
                    "names assigned earlier, and the listed numpy functions)"
                )
        elif isinstance(node, ast.Attribute):
            if node.attr.startswith("_"):
                raise refuse(program, node)
            if isinstance(node.value, ast.Name) and node.value.id in MODULES:
                allowed = (
                    MATH | {"pi", "e", "inf", "nan"}
                    if node.value.id == "math"
                    else FUNCTIONS | set(CONSTANTS)
                )
                if node.attr not in allowed:
                    raise refuse(program, node, f" ({node.value.id}.{node.attr} is not listed)")
            elif node.attr not in METHODS | ATTRIBUTES:
                raise refuse(program, node)
        elif isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name | ast.Attribute):
                raise refuse(program, node.func, " as a function (call a listed function by name)")
            if isinstance(node.func, ast.Name) and node.func.id not in _CALLABLE_NAMES:
                raise RefError(f"ref: '{node.func.id}' is not a function a reference may "
                                   f"call, in '{short_text(program)}'", refused=True)  # fmt: skip
            if isinstance(node.func, ast.Attribute) and node.func.attr in ATTRIBUTES:
                raise refuse(program, node.func)
        elif isinstance(node, ast.keyword):
            if node.arg is None or node.arg.startswith("_"):
                raise refuse(program, node, " (**keyword unpacking)")
        elif isinstance(node, ast.Starred) and not store:
            raise refuse(program, node)
        elif isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, str | bytes) and len(v) > MAX_STRING:
                raise refuse(program, node, f" (strings up to {MAX_STRING} characters)")
            if isinstance(v, complex | bytes):
                raise refuse(program, node)
