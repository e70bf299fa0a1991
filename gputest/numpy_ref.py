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

How it is read: the language — the limits, the whitelists (``FUNCTIONS``, ``MATH``,
``METHODS``, ``ATTRIBUTES``, ``CONSTANTS``), the operators, and ``parse``/``check``, which
refuse what is not in it — is ``ref_language.py``; running it is this module: ``run`` and
``_Evaluator``, one method per ``ast`` node kind, with the per-call size and work rules in
``ref_limits.py`` (the binding of a call to its parameters in ``ref_binding.py``). The
evaluator checks again what ``check`` refused, as a second line of defence, so a change to the
whitelist is made in ``ref_language.py`` and read against ``_Evaluator`` here.
"""

from __future__ import annotations

import ast
import math
import os
import sys
import time
import warnings
from typing import Any

import numpy as np

from . import parallel, ref_limits
from .ref_language import (
    ATTRIBUTES,
    BINOPS,
    BUILTINS,
    COMPARE,
    CONSTANTS,
    DEFAULT_DEADLINE_S,
    FUNCTIONS,
    MATH,
    MAX_ELEMENTS,
    MAX_INT_BITS,
    MAX_ITEMSIZE,
    MAX_LOOP_MACS,
    MAX_MATMUL_FLOPS,
    MAX_MEMORY_GROWTH,
    MAX_WORK,
    METHODS,
    MODULES,
    OPTION_WORDS,
    UNARY,
    RefError,
    check,
    parse,
    refuse,
    short_text,
)


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
        return RefError(f"ref '{short_text(self.program)}': {message}")

    def statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Assign):
            self.store(stmt.targets[0], self.expr(stmt.value))
        elif isinstance(stmt, ast.AugAssign):
            current = self.expr(_as_load(stmt.target))
            value = self.binop(stmt.op, current, self.expr(stmt.value))
            self.store(stmt.target, value)
        else:  # check() lets nothing else through; kept as a second line of defence
            raise refuse(self.program, stmt)

    def store(self, target: ast.AST, value) -> None:
        if isinstance(target, ast.Name):
            self.ns[target.id] = value
            return
        if not isinstance(target, ast.Subscript):  # check() refuses these too
            raise refuse(self.program, target)
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
            raise refuse(self.program, node)
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
            raise self.fail(f"{type(e).__name__}: {short_text(str(e), 200)}") from None
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
                raise refuse(self.program, e)
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
        indexable: Any = base  # a numpy scalar indexes too (``x[()]``), which numpy's stubs omit
        return indexable[index]

    # -- operators
    def _UnaryOp(self, node: ast.UnaryOp):
        v = self.expr(node.operand)
        _operand(self, v)
        par = parallel.elementwise(UNARY[type(node.op)], v)  # a benchmark size: every core
        return par if par is not None else UNARY[type(node.op)](v)

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
        if kind is not ast.MatMult:  # element-wise: a benchmark size runs on every core
            par = parallel.elementwise(BINOPS[kind], a, b)
            if par is not None:
                return par
        return BINOPS[kind](a, b)

    def _Compare(self, node: ast.Compare):
        left = self.expr(node.left)
        result = None
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = self.expr(right_node)
            _operand(self, left)
            _operand(self, right)
            if isinstance(left, np.ndarray) or isinstance(right, np.ndarray):
                self.check_broadcast(left, right)
            part = COMPARE[type(op)](left, right)
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
                raise refuse(self.program, a)
            args.append(self.expr(a))
        kwargs: dict[str, Any] = {}
        for k in node.keywords:
            if k.arg is None:  # **mapping: check() refuses it; a second line of defence
                raise refuse(self.program, k)
            kwargs[k.arg] = self.expr(k.value)
        for value in [*args, *kwargs.values()]:
            self.check_argument(value)
        if isinstance(fn, _Method):
            bound = self.check_call(fn.name, [fn.obj, *args], kwargs, method=True)
            return getattr(fn.obj, fn.name)(*bound.call_args[1:], **bound.call_kwargs)
        listed = _NUMPY_NAMES.get(id(fn))
        if listed is not None:
            bound = self.check_call(listed, args, kwargs)
            if isinstance(fn, np.ufunc) and fn.nout == 1 and not bound.call_kwargs:
                par = parallel.elementwise(fn, *bound.call_args)  # element-wise, on every core
                if par is not None:
                    return par
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
                raise self.fail(f"{short_text(repr(value), 40)} is neither a numeric type nor an "
                                "option word of a listed function")  # fmt: skip
            if not _plain(dt):
                raise self.fail(f"dtype {dt} (numbers only: int, uint, float, complex, bool)")
        elif _pyint(value):
            if not -(1 << 63) <= value < (1 << 64):
                raise self.fail(
                    f"the whole number {short_text(str(value), 40)} does not fit 64 bits"
                )
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
        rule = ref_limits.FUNCTION_RULES.get(name) or ref_limits.METHOD_RULES.get(name)
        if rule is not None and rule.matmul:
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


class _Module:
    """``np`` / ``math`` as seen by a reference: only listed names can be read from it."""

    def __init__(self, name: str):
        self.name = name


class _Method:
    def __init__(self, obj, name: str):
        self.obj, self.name = obj, name


# Listed numpy functions by identity (np.abs is np.absolute; np.bool_.__name__ is 'bool').
_NUMPY_NAMES = {id(getattr(np, f)): f for f in sorted(FUNCTIONS) if hasattr(np, f)}
