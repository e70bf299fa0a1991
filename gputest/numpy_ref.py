"""The ``ref:`` language: a numpy reference written in a spec or a ``// @gputest ref:`` line,
run by a restricted evaluator, never by ``eval``.

A reference is text from whatever repository was cloned. ``eval`` with an emptied
``__builtins__`` is not a sandbox (``().__class__.__bases__[0].__subclasses__()`` reaches every
class in the process), so a reference is parsed with ``ast`` and walked over a whitelist:

- statements: ``y = EXPR``, ``y += EXPR`` (any augmented operator), ``y[i:j] = EXPR``;
  several, separated by ';' or new lines;
- numbers, short strings (dtype names, ``'ij'``), ``None``, ``True``/``False``, ``...``;
- the spec's names (parameters, ``n``, scalars) and names assigned earlier;
- ``+ - * / // % ** @ & | ^ << >>``, unary ``- + ~ not``, comparisons, ``and``/``or``,
  ``a if c else b``, tuples and lists, subscripts and slices;
- calls of the functions in ``FUNCTIONS`` (bare, or as ``np.NAME``), ``math.NAME`` for the
  ``MATH`` ones, and array methods in ``METHODS``; keyword arguments;
- array attributes in ``ATTRIBUTES`` (``.T``, ``.shape``, ``.size``, ``.ndim``) and numpy
  constants/dtypes in ``CONSTANTS`` (``np.pi``, ``np.float32``, ``np.newaxis``).

Nothing else: no other attribute, no name starting with '_', no lambda, comprehension, import,
def, or call of anything not listed. What is refused is named in the message.

Every step is bounded, because a reference can also be a denial of service: Python integers
stay under 2**128 (``9**9**9`` is refused before it runs); every call is bound to its
function's parameters and refused by what it would create and cost *before* numpy runs
(``ref_limits.py``: one rule per listed function and method, in every calling form), and so
is indexing: an array result may not exceed ``MAX_ELEMENTS``, a matrix product
``MAX_MATMUL_FLOPS`` multiply-adds (``MAX_LOOP_MACS`` where BLAS does not compute it), a sort,
``diff`` or ``roll`` ``MAX_WORK`` element operations; the deadline is checked between steps,
and each step is bounded to seconds. The reference runs in the GPU worker, a process the
supervisor kills when a request outlasts its timeout.

A person who trusts a workspace may run references the whitelist cannot express: ``run`` with
``trusted=True`` falls back to Python's ``eval`` over numpy for a program ``check`` refuses (the
trust gate is the caller's: VS Code's workspace trust, ``trustedWorkspace`` in initializationOptions, or
``ptxls test --trust``).

Why this module is long, and how it is read: the first half is the language — the limits, then
the whitelists (``FUNCTIONS``, ``MATH``, ``METHODS``, ``ATTRIBUTES``, ``CONSTANTS``) and the
operators — and ``parse``/``describe``, which refuse what is not in it; the second half
("running") is ``_Evaluator``, one method per ``ast`` node kind, with the per-call size and work
rules in ``ref_limits.py``. The whitelist and the evaluator have to be read together, which
is why they are one file.
"""

from __future__ import annotations

import ast
import math
import operator
import os
import sys
import time
import warnings

import numpy as np

from . import ref_limits

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


def _element_limit(budget: int) -> int:
    """Elements in one array result, checked before numpy allocates it: a quarter of the memory
    budget in float64 (the type a reference computes in), between 2^27 (1 GiB) and 2^29
    (4 GiB). The library's benchmarks need 2^28 floats (a sum of 1 GiB) and 2^29 bytes (a
    histogram) with room for an intermediate of n + a row (bias + GELU): a machine with
    128 GiB gets 2^29 (budget 16 GiB), one with 16 GiB 2^28, one with 8 GiB or less 2^27.
    The budget still bounds what all arrays hold together."""
    elements = max(1 << 27, min(1 << 29, budget // 4 // 8))
    return 1 << (elements.bit_length() - 1)  # a power of two: the message reads 2^k


MAX_ELEMENTS = _element_limit(MAX_MEMORY_GROWTH)

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


# numpy functions a reference may call, bare (``sqrt(x)``) or as ``np.sqrt(x)``.
FUNCTIONS = frozenset(
    [
        "abs",
        "absolute",
        "exp",
        "exp2",
        "expm1",
        "log",
        "log2",
        "log10",
        "log1p",
        "sqrt",
        "cbrt",
        "square",
        "reciprocal",
        "power",
        "float_power",
        "sin",
        "cos",
        "tan",
        "arcsin",
        "arccos",
        "arctan",
        "arctan2",
        "sinh",
        "cosh",
        "tanh",
        "arcsinh",
        "arccosh",
        "arctanh",
        "sign",
        "floor",
        "ceil",
        "trunc",
        "rint",
        "round",
        "around",
        "fix",
        "hypot",
        "copysign",
        "fmod",
        "remainder",
        "mod",
        "divmod",
        "maximum",
        "minimum",
        "fmax",
        "fmin",
        "where",
        "clip",
        "sum",
        "cumsum",
        "cumprod",
        "prod",
        "max",
        "min",
        "amax",
        "amin",
        "mean",
        "var",
        "std",
        "median",
        "argmax",
        "argmin",
        "argsort",
        "sort",
        "dot",
        "matmul",
        "vdot",
        "inner",
        "outer",
        "transpose",
        "reshape",
        "ravel",
        "concatenate",
        "stack",
        "hstack",
        "vstack",
        "zeros",
        "ones",
        "full",
        "zeros_like",
        "ones_like",
        "full_like",
        "arange",
        "linspace",
        "bincount",
        "flip",
        "roll",
        "pad",
        "tril",
        "triu",
        "diff",
        "isnan",
        "isinf",
        "isfinite",
        "nan_to_num",
        "logical_and",
        "logical_or",
        "logical_not",
        "logical_xor",
        "bitwise_and",
        "bitwise_or",
        "bitwise_xor",
        "bitwise_not",
        "invert",
        "left_shift",
        "right_shift",
        "asarray",
        "array",
        "copy",
        "broadcast_to",
        "expand_dims",
        "squeeze",
        "swapaxes",
        "moveaxis",
        "repeat",
        "tile",
        "count_nonzero",
        "all",
        "any",
        "allclose",
        "isclose",
        "float16",
        "float32",
        "float64",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "bool_",
    ]
)

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

# Array methods: ``x.reshape(n, k).sum(axis=1)``.
METHODS = frozenset(
    [
        "reshape",
        "astype",
        "sum",
        "cumsum",
        "cumprod",
        "prod",
        "max",
        "min",
        "mean",
        "var",
        "std",
        "argmax",
        "argmin",
        "transpose",
        "ravel",
        "flatten",
        "copy",
        "clip",
        "dot",
        "round",
        "squeeze",
        "swapaxes",
        "repeat",
        "any",
        "all",
        "sort",
        "argsort",
        "item",
    ]
)
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


_BINOPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow, ast.MatMult: operator.matmul, ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
}  # fmt: skip
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert,
          ast.Not: operator.not_}  # fmt: skip
_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
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
    *_BINOPS, *_UNARY, *_COMPARE,
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
        return f"the constant {_short(repr(node.value), 40)}"
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


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse(program: str) -> ast.Module:
    if len(program) > MAX_TEXT:
        raise RefError(f"the reference has {len(program)} characters (at most {MAX_TEXT})",
                       refused=True)  # fmt: skip
    try:
        return ast.parse(program.strip(), mode="exec")
    except SyntaxError as e:
        raise RefError(f"the reference '{_short(program)}' is not valid ({e.msg})",
                       refused=True) from None  # fmt: skip
    except (RecursionError, MemoryError, ValueError):
        raise RefError("the reference is nested too deeply", refused=True) from None


def _refuse(program: str, node: ast.AST, why: str = "") -> RefError:
    what = describe(node)
    return RefError(
        f"ref: {what} is not allowed{why} in '{_short(program)}' — a reference may use "
        "arithmetic, comparisons, subscripts, the spec's names and listed numpy functions "
        "and array methods (see SECURITY.md)",
        refused=True,
    )


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
                raise _refuse(program, stmt, " (one target per assignment)")
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AugAssign):
            if type(stmt.op) not in _BINOPS:
                raise _refuse(program, stmt)
            targets, value = [stmt.target], stmt.value
        else:
            raise _refuse(program, stmt)
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
        raise _refuse(program, t, " as an assignment target (assign to a name or a slice of one)")
    _check_name(program, base)
    return base.id


def _check_name(program: str, node: ast.Name) -> None:
    if node.id.startswith("_"):
        raise RefError(f"ref: the name '{node.id}' is not allowed (names starting with '_') in "
                       f"'{_short(program)}'", refused=True)  # fmt: skip


def _check_expr(program: str, root: ast.AST, known: set[str], store: bool = False) -> None:
    # Dunder names and attributes first: the message should name the escape attempt
    # ('.__class__'), not the call or subscript that wraps it.
    for node in ast.walk(root):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            raise _refuse(program, node)
        if isinstance(node, ast.Name):
            _check_name(program, node)
    for node in ast.walk(root):
        if not isinstance(node, _EXPR_NODES):
            raise _refuse(program, node)
        if isinstance(node, ast.Name):
            _check_name(program, node)
            if isinstance(node.ctx, ast.Load) and node.id not in known:
                raise RefError(
                    f"ref: unknown name '{node.id}' in '{_short(program)}' (the spec's names, "
                    "names assigned earlier, and the listed numpy functions)"
                )
        elif isinstance(node, ast.Attribute):
            if node.attr.startswith("_"):
                raise _refuse(program, node)
            if isinstance(node.value, ast.Name) and node.value.id in MODULES:
                allowed = (
                    MATH | {"pi", "e", "inf", "nan"}
                    if node.value.id == "math"
                    else FUNCTIONS | set(CONSTANTS)
                )
                if node.attr not in allowed:
                    raise _refuse(program, node, f" ({node.value.id}.{node.attr} is not listed)")
            elif node.attr not in METHODS | ATTRIBUTES:
                raise _refuse(program, node)
        elif isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name | ast.Attribute):
                raise _refuse(program, node.func, " as a function (call a listed function by name)")
            if isinstance(node.func, ast.Name) and node.func.id not in _CALLABLE_NAMES:
                raise RefError(f"ref: '{node.func.id}' is not a function a reference may "
                                   f"call, in '{_short(program)}'", refused=True)  # fmt: skip
            if isinstance(node.func, ast.Attribute) and node.func.attr in ATTRIBUTES:
                raise _refuse(program, node.func)
        elif isinstance(node, ast.keyword):
            if node.arg is None or node.arg.startswith("_"):
                raise _refuse(program, node, " (**keyword unpacking)")
        elif isinstance(node, ast.Starred) and not store:
            raise _refuse(program, node)
        elif isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, str | bytes) and len(v) > MAX_STRING:
                raise _refuse(program, node, f" (strings up to {MAX_STRING} characters)")
            if isinstance(v, complex | bytes):
                raise _refuse(program, node)


# -- running ------------------------------------------------------------------------------------


def run(
    program: str,
    names: dict,
    *,
    trusted: bool = False,
    deadline_s: float = DEFAULT_DEADLINE_S,
) -> dict:
    """Run the reference over ``names`` (float64 arrays and scalars); returns every name it
    assigned with its value. Raises RefError. With ``trusted``, a program outside the ref
    language runs as Python over numpy instead of being refused."""
    try:
        assigned = check(program, set(names))
    except RefError as e:
        if not (trusted and e.refused):
            raise
        return _run_trusted(program, names)
    tree = parse(program)
    ev = _Evaluator(program, dict(names), time.monotonic() + deadline_s)
    with np.errstate(all="ignore"):
        for stmt in tree.body:
            ev.statement(stmt)
    return {k: ev.ns[k] for k in assigned if k in ev.ns}


def _run_trusted(program: str, names: dict) -> dict:
    """The person trusts this workspace: its reference is their own Python over numpy."""
    import math as math_module

    ns: dict = {name: getattr(np, name) for name in dir(np) if not name.startswith("_")}
    ns.update({"np": np, "numpy": np, "math": math_module, **names})
    before = set(ns)
    with np.errstate(all="ignore"):
        exec(compile(program.strip(), "<ref>", "exec"), ns)  # trusted workspace only
    return {
        k: v
        for k, v in ns.items()
        if not k.startswith("_") and (k not in before or (k in names and v is not names[k]))
    }


class _Evaluator:
    def __init__(self, program: str, ns: dict, deadline: float):
        self.program, self.ns, self.deadline = program, ns, deadline
        self.rss_start = _resident_bytes()

    def fail(self, message: str) -> RefError:
        return RefError(f"ref '{_short(self.program)}': {message}")

    def statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Assign):
            self.store(stmt.targets[0], self.expr(stmt.value))
        else:  # AugAssign (check() let nothing else through)
            current = self.expr(_as_load(stmt.target))
            value = self.binop(stmt.op, current, self.expr(stmt.value))
            self.store(stmt.target, value)

    def store(self, target: ast.AST, value) -> None:
        if isinstance(target, ast.Name):
            self.ns[target.id] = value
            return
        # y[1:-1] = ...: only into an array the reference owns or was given (a float64 copy).
        obj = self.expr(target.value)
        if not isinstance(obj, np.ndarray):
            raise self.fail("only arrays can be assigned into")
        index = self.expr(target.slice)
        self.check_index(obj, index)
        try:
            obj[index] = value
        except (IndexError, ValueError, TypeError) as e:
            raise self.fail(str(e)) from None

    def expr(self, node: ast.AST):
        if time.monotonic() > self.deadline:
            raise self.fail("took longer than its time limit")
        method = getattr(self, "_" + type(node).__name__, None)
        if method is None:  # check() refuses these; kept as a second line of defence
            raise _refuse(self.program, node)
        try:
            value = method(node)
        except RefError:
            raise
        except RecursionError:
            raise self.fail("nested too deeply") from None
        except (
            ArithmeticError, ValueError, TypeError, IndexError, KeyError, MemoryError,
            AttributeError,
        ) as e:  # fmt: skip
            raise self.fail(f"{type(e).__name__}: {_short(str(e), 200)}") from None
        value = self.bounded(value)
        if isinstance(value, np.ndarray | list | tuple):
            self.check_memory()
        return value

    def check_memory(self) -> None:
        if self.rss_start is None:
            return
        now = _resident_bytes()
        if now is not None and now - self.rss_start > MAX_MEMORY_GROWTH:
            raise self.fail(
                f"it holds more than {MAX_MEMORY_GROWTH >> 20} MiB of arrays at once "
                "(a reference may hold a few copies of its inputs)"
            )

    def bounded(self, value):
        if isinstance(value, np.ndarray):
            if value.size > MAX_ELEMENTS:
                raise self.fail(f"an array of {value.size} elements (at most {MAX_ELEMENTS})")
            if value.dtype.kind not in "biufc" or value.dtype.itemsize > MAX_ITEMSIZE:
                # An array of Python objects would let numpy call what it holds; strings,
                # records, datetimes are no data a kernel is checked against.
                raise self.fail(f"an array of dtype {value.dtype} (numbers only)")
        if _pyint(value) and value.bit_length() > MAX_INT_BITS:
            raise self.fail(f"a number above 2**{MAX_INT_BITS}")
        if isinstance(value, str | bytes | tuple | list) and len(value) > MAX_ELEMENTS:
            raise self.fail("a value too large")
        return value

    # -- leaves
    def _Constant(self, node: ast.Constant):
        return node.value

    def _Name(self, node: ast.Name):
        if node.id in self.ns:
            return self.ns[node.id]
        if node.id in FUNCTIONS:
            return getattr(np, node.id)
        if node.id in BUILTINS:
            return BUILTINS[node.id]
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        if node.id in MODULES:
            return _Module(node.id)
        raise self.fail(f"unknown name '{node.id}'")

    def _Attribute(self, node: ast.Attribute):
        base = self.expr(node.value)
        if isinstance(base, _Module):
            # check() sees only 'np.NAME' written out; 'z = np; z.T' or '(np if c else x).item'
            # reaches here too, so the lists are applied again.
            if base.name == "math":
                if node.attr in MATH or node.attr in ("pi", "e", "inf", "nan"):
                    return getattr(math, node.attr)
            elif node.attr in CONSTANTS:
                return CONSTANTS[node.attr]
            elif node.attr in FUNCTIONS:
                return getattr(np, node.attr)
            raise self.fail(f"{base.name}.{node.attr} is not listed")
        if node.attr in ATTRIBUTES and isinstance(base, np.ndarray | np.generic):
            return getattr(base, node.attr)
        if node.attr in METHODS and isinstance(base, np.ndarray | np.generic):
            return _Method(base, node.attr)
        raise self.fail(f".{node.attr} of a {type(base).__name__} is not allowed")

    def _Tuple(self, node: ast.Tuple):
        return tuple(self._items(node.elts))

    def _List(self, node: ast.List):
        return list(self._items(node.elts))

    def _items(self, elts):
        out = []
        for e in elts:
            if isinstance(e, ast.Starred):
                raise _refuse(self.program, e)
            out.append(self.expr(e))
        return out

    def _Slice(self, node: ast.Slice):
        part = [
            self.expr(x) if x is not None else None for x in (node.lower, node.upper, node.step)
        ]
        return slice(*part)

    def _Subscript(self, node: ast.Subscript):
        base = self.expr(node.value)
        if not isinstance(base, np.ndarray | np.generic | tuple | list):
            raise self.fail(f"a {type(base).__name__} cannot be indexed")
        index = self.expr(node.slice)
        self.check_index(base, index)  # fancy indexing allocates the broadcast of its indices
        return base[index]

    # -- operators
    def _UnaryOp(self, node: ast.UnaryOp):
        v = self.expr(node.operand)
        _operand(self, v)
        return _UNARY[type(node.op)](v)

    def _BinOp(self, node: ast.BinOp):
        return self.binop(node.op, self.expr(node.left), self.expr(node.right))

    def binop(self, op: ast.operator, a, b):
        _operand(self, a)
        _operand(self, b)
        kind = type(op)
        if kind is ast.MatMult:
            self.check_matmul(a, b)
        elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            self.check_broadcast(a, b)
        if kind is ast.Pow and _pyint(a) and _pyint(b):
            if b < 0:
                return float(a) ** b
            if abs(a) > 1 and b * max(1, abs(a).bit_length() - 1) > MAX_INT_BITS:
                raise self.fail(f"{a}**{b} is too large (limited to 2**{MAX_INT_BITS})")
        shift = kind in (ast.LShift, ast.RShift) and _pyint(a) and _pyint(b)
        if shift and (b < 0 or (kind is ast.LShift and b + abs(a).bit_length() > MAX_INT_BITS)):
            raise self.fail(f"shift {a} by {b} is out of range")
        return _BINOPS[kind](a, b)

    def _Compare(self, node: ast.Compare):
        left = self.expr(node.left)
        result = None
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = self.expr(right_node)
            _operand(self, left)
            _operand(self, right)
            if isinstance(left, np.ndarray) or isinstance(right, np.ndarray):
                self.check_broadcast(left, right)
            part = _COMPARE[type(op)](left, right)
            result = part if result is None else np.logical_and(result, part)
            left = right
        return result

    def _BoolOp(self, node: ast.BoolOp):
        value = self.expr(node.values[0])
        for nxt in node.values[1:]:
            if isinstance(node.op, ast.And) and not value:
                return value
            if isinstance(node.op, ast.Or) and value:
                return value
            value = self.expr(nxt)
        return value

    def _IfExp(self, node: ast.IfExp):
        return self.expr(node.body) if self.expr(node.test) else self.expr(node.orelse)

    # -- calls
    def _Call(self, node: ast.Call):
        fn = self.expr(node.func)
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                raise _refuse(self.program, a)
            args.append(self.expr(a))
        kwargs = {k.arg: self.expr(k.value) for k in node.keywords}
        for value in [*args, *kwargs.values()]:
            self.check_argument(value)
        if isinstance(fn, _Method):
            bound = self.check_call(fn.name, [fn.obj, *args], kwargs, method=True)
            return getattr(fn.obj, fn.name)(*bound.call_args[1:], **bound.call_kwargs)
        listed = _NUMPY_NAMES.get(id(fn))
        if listed is not None:
            bound = self.check_call(listed, args, kwargs)
            return fn(*bound.call_args, **bound.call_kwargs)
        scalar_only = any(fn is v for v in BUILTINS.values()) or any(
            fn is getattr(math, f, None) for f in MATH
        )
        if not scalar_only:
            name = getattr(fn, "__name__", "") or type(fn).__name__
            raise self.fail(f"'{name}' is not a function a reference may call")
        # float/int/bool/len and math.NAME take scalars (an array of one element at most)
        for value in [*args, *kwargs.values()]:
            if isinstance(value, np.ndarray) and value.size > 1 and fn is not len:
                raise self.fail(f"{getattr(fn, '__name__', 'this')}() takes a number")
        return fn(*args, **kwargs)

    # -- size guards, before numpy allocates
    def check_argument(self, value, depth: int = 0) -> None:
        """What a call may be given: numbers, arrays, shapes, numeric type names and option
        words. Before the call, because after it is too late: dtype='O' makes numpy compute
        with Python integers (10**(10**9) for hours, where the deadline cannot interrupt),
        '(10000,10000)f8' or 'U1000' multiplies every element, and a Python integer beyond 64
        bits turns an operand into an object array."""
        if isinstance(value, str | type | np.dtype):
            dt = _as_dtype(value)
            if dt is None:
                if isinstance(value, str) and value in OPTION_WORDS:
                    return
                raise self.fail(f"{_short(repr(value), 40)} is neither a numeric type nor an "
                                "option word of a listed function")  # fmt: skip
            if not _plain(dt):
                raise self.fail(f"dtype {dt} (numbers only: int, uint, float, complex, bool)")
        elif _pyint(value):
            if not -(1 << 63) <= value < (1 << 64):
                raise self.fail(f"the whole number {_short(str(value), 40)} does not fit 64 bits")
        elif isinstance(value, tuple | list):
            if depth < 2 and any(isinstance(v, str | type | np.dtype) for v in value):
                dt = _as_dtype(value)  # ('f8', (1000, 1000)), [('a', 'f8')]
                if dt is not None and not _plain(dt):
                    raise self.fail(f"dtype {dt} (numbers only)")
            if depth < 2:
                for v in value:
                    self.check_argument(v, depth + 1)

    def check_size(self, count: int) -> None:
        if count > MAX_ELEMENTS:
            raise self.fail(f"an array of {count} elements (at most {MAX_ELEMENTS})")

    def check_broadcast(self, *values) -> None:
        shapes = [np.shape(v) for v in values if isinstance(v, np.ndarray | np.generic)]
        try:
            shape = np.broadcast_shapes(*shapes)
        except ValueError as e:
            raise self.fail(str(e)) from None
        self.check_size(math.prod(shape))

    def check_matmul(self, a, b) -> None:
        try:
            elements, macs, blas = ref_limits.product(a, b, "matmul")
        except ref_limits.LimitError as e:
            raise self.fail(f"@: {e}") from None
        self.check_size(elements)
        self.check_macs("@", macs, blas)

    def check_call(self, name: str, args: list, kwargs: dict, *, method: bool = False):
        """Bind the call to the function's parameters and refuse it by what it would create
        and cost (``ref_limits``: one rule per listed function and method), before numpy runs.
        Returns the binding: the call numpy gets is rebuilt from it."""
        try:
            cost, bound = ref_limits.call_cost(name, args, kwargs, method=method)
        except ref_limits.LimitError as e:
            raise self.fail(str(e)) from None
        except (TypeError, ValueError, OverflowError) as e:
            raise self.fail(f"{name}(): {e}") from None
        if cost.elements > MAX_ELEMENTS:
            raise self.fail(f"{name}() would create an array of {cost.elements} elements (at "
                            f"most {MAX_ELEMENTS})")  # fmt: skip
        if ref_limits.FUNCTION_RULES.get(name, ref_limits.METHOD_RULES.get(name)).matmul:
            self.check_macs(name, cost.work, cost.blas)
        elif cost.work > MAX_WORK:
            raise self.fail(f"{name}() would take {cost.work} element operations (at most "
                            f"{MAX_WORK})")  # fmt: skip
        for a in [*args, *kwargs.values()]:
            if isinstance(a, list | tuple) and len(a) > MAX_ELEMENTS:
                self.check_size(len(a))
        return bound

    def check_macs(self, what: str, macs: int, blas: bool) -> None:
        limit = MAX_MATMUL_FLOPS if blas else MAX_LOOP_MACS
        if macs > limit:
            kind = "" if blas else " in a type BLAS does not compute (integers, float16, bool)"
            raise self.fail(f"{what}: a product of {macs} multiply-adds{kind} (at most {limit})")

    def check_index(self, base, index) -> None:
        """``a[i, j]`` with index arrays: bounded by the broadcast of the index arrays' shapes,
        before numpy builds it."""
        if isinstance(base, np.ndarray | np.generic):
            try:
                elements = ref_limits.index_result(tuple(base.shape), index)
            except ref_limits.LimitError as e:
                raise self.fail(f"index: {e}") from None
            if elements > MAX_ELEMENTS:
                raise self.fail(f"indexing would create an array of {elements} elements (at "
                                f"most {MAX_ELEMENTS})")  # fmt: skip


def _as_dtype(value) -> np.dtype | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # 'a' and other deprecated aliases: refused anyway
            return np.dtype(value)
    except (TypeError, ValueError, SyntaxError, RecursionError):
        return None


def _plain(dt: np.dtype) -> bool:
    return (
        dt.kind in "biufc"
        and dt.shape == ()
        and dt.fields is None
        and not dt.hasobject
        and dt.itemsize <= MAX_ITEMSIZE
    )


def _resident_bytes() -> int | None:
    """The process's resident memory now (Linux); None where it cannot be read cheaply."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _pyint(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _operand(ev: _Evaluator, v) -> None:
    """Operators apply to numbers and arrays only: ``'a' * 10**9`` and ``[0] * 10**9`` are not
    arithmetic a reference needs, and would allocate without a size check."""
    if not isinstance(v, int | float | bool | np.ndarray | np.generic):
        raise ev.fail(f"operators apply to numbers and arrays, not to a {type(v).__name__}")


def _as_load(target: ast.AST) -> ast.AST:
    """The target of ``y += 1`` read as a value."""
    node = ast.parse(ast.unparse(target), mode="eval").body
    return node


class _AnyName(set):
    """The names check() accepts when the spec's names are not known yet: all of them."""

    def __contains__(self, name: object) -> bool:
        return True


class _Module:
    """``np`` / ``math`` as seen by a reference: only listed names can be read from it."""

    def __init__(self, name: str):
        self.name = name


class _Method:
    def __init__(self, obj, name: str):
        self.obj, self.name = obj, name


# Listed numpy functions by identity (np.abs is np.absolute; np.bool_.__name__ is 'bool').
_NUMPY_NAMES = {id(getattr(np, f)): f for f in sorted(FUNCTIONS) if hasattr(np, f)}
