"""Small arithmetic expressions from specs and annotations: lengths (``n``, ``2*n+1``), grids
(``ceil(n/256)``), sizes (``1<<24``), scalar values. Evaluated over Python's AST with a whitelist,
never ``eval``: an annotation is text from whatever repository was cloned and must not run code,
nor freeze the caller. So besides the whitelist every step is bounded: integers stay within
``MAX_INT_BITS`` (``9**9**9`` is refused before it is computed, not after hours), shifts and
exponents are checked before they run, and the text itself has a length limit.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from typing import Any

MAX_TEXT = 2000  # characters in one expression; a spec line is a few dozen
MAX_INT_BITS = 128  # |value| < 2**128: every real size, length or scalar fits many times over
MAX_FLOAT = 1e300


class ExprError(ValueError):
    pass


def _int_of_float(x):
    if isinstance(x, float) and not math.isfinite(x):
        raise ValueError(f"{x} is not a number that can be rounded")
    return x


_FUNCS: dict[str, Callable[..., Any]] = {
    "ceil": lambda x: math.ceil(_int_of_float(x)),
    "floor": lambda x: math.floor(_int_of_float(x)),
    "cdiv": lambda a, b: -(-a // b),
    "min": min,
    "max": max,
    "abs": abs,
    "int": lambda x: int(_int_of_float(x)),
}


def _pow(a, b):
    if isinstance(a, int) and isinstance(b, int):
        if b < 0:
            return float(a) ** b
        # Estimated size of the result, before computing it: bits(a) * b.
        if abs(a) > 1 and b * max(1, abs(a).bit_length() - 1) > MAX_INT_BITS:
            raise ExprError(f"{a}**{b} is too large (results are limited to 2**{MAX_INT_BITS})")
        return a**b
    return float(a) ** float(b)


def _shift(a, b, left: bool):
    if not isinstance(a, int) or not isinstance(b, int):
        raise ExprError("<< and >> need whole numbers")
    if b < 0:
        raise ExprError(f"negative shift count {b}")
    if left and b + abs(a).bit_length() > MAX_INT_BITS:
        raise ExprError(f"{a}<<{b} is too large (results are limited to 2**{MAX_INT_BITS})")
    return a << b if left else a >> min(b, MAX_INT_BITS + 1)


_BINOPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: _pow,
    ast.LShift: lambda a, b: _shift(a, b, True),
    ast.RShift: lambda a, b: _shift(a, b, False),
}

_OP_TEXT = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
    ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|",
    ast.BitXor: "^", ast.MatMult: "@",
}  # fmt: skip


def construct_name(node: ast.AST) -> str:
    """What a person calls the construct: 'attribute access (.__class__)', 'a lambda', ..."""
    if isinstance(node, ast.Attribute):
        return f"attribute access (.{node.attr})"
    if isinstance(node, ast.Lambda):
        return "a lambda"
    if isinstance(node, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
        return "a comprehension"
    if isinstance(node, ast.Call):
        return "a call of something that is not an allowed function"
    if isinstance(node, ast.Constant):
        return f"the constant {node.value!r:.40}"
    if isinstance(node, ast.BinOp | ast.AugAssign):
        return f"the operator {_OP_TEXT.get(type(node.op), type(node.op).__name__)}"
    if isinstance(node, ast.NamedExpr):
        return "':=' (assignment inside an expression)"
    return f"{type(node).__name__} syntax"


def _parse(text: str) -> ast.Expression:
    if len(text) > MAX_TEXT:
        raise ExprError(f"expression of {len(text)} characters (at most {MAX_TEXT})")
    try:
        return ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise ExprError(f"'{_short(text)}' is not an expression ({e.msg})") from None
    except (RecursionError, MemoryError, ValueError):
        raise ExprError(f"'{_short(text)}' is nested too deeply") from None


def _short(text: str, limit: int = 80) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def check(text: str, names: set[str]) -> None:
    """Raise ExprError when ``text`` is not an expression over ``names`` (and the functions),
    naming the construct that is not allowed."""
    tree = _parse(text)
    for node in ast.walk(tree.body):
        if isinstance(node, ast.Name) and node.id not in names and node.id not in _FUNCS:
            known = ", ".join(sorted(names)) or "none"
            raise ExprError(f"unknown name '{node.id}' in '{_short(text)}' (known: {known})")
    for node in ast.walk(tree.body):
        if isinstance(node, ast.Name):
            continue
        if isinstance(node, ast.Call):
            if not (isinstance(node.func, ast.Name) and node.func.id in _FUNCS) or node.keywords:
                raise ExprError(_not_allowed(text, node))
        elif (
            not isinstance(node, _ALLOWED_NODES)
            or (isinstance(node, ast.BinOp) and type(node.op) not in _BINOPS)
            or (isinstance(node, ast.Constant) and not _number(node.value))
        ):
            raise ExprError(_not_allowed(text, node))


_ALLOWED_NODES = (
    ast.Constant, ast.Name, ast.Load, ast.BinOp, ast.UnaryOp, ast.UAdd, ast.USub, ast.Call,
    *_BINOPS,
)  # fmt: skip


def _number(v) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _not_allowed(text: str, node: ast.AST) -> str:
    return (
        f"'{_short(text)}': {construct_name(node)} is not allowed here — only numbers, names, "
        f"+ - * / // % ** << >> and {', '.join(_FUNCS)}()"
    )


def evaluate(text: str, env: dict[str, float | int]) -> float | int:
    tree = _parse(text)
    try:
        return _eval(tree.body, env, text)
    except RecursionError:
        raise ExprError(f"'{_short(text)}' is nested too deeply") from None


def _bounded(v, text: str):
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int) and v.bit_length() > MAX_INT_BITS:
        raise ExprError(f"'{_short(text)}' is too large (limited to 2**{MAX_INT_BITS})")
    if isinstance(v, complex):
        # (-8)**(1/3) is complex: no size, length or tolerance; later code would fail on it
        # with a TypeError nobody catches.
        raise ExprError(f"'{_short(text)}' is not a real number")
    if isinstance(v, float) and not math.isfinite(v):
        # 1/2**-1074 is inf, inf-inf is NaN: a NaN tolerance passes every element (err > NaN
        # is never true), an infinite one anything.
        raise ExprError(f"'{_short(text)}' is not a finite number")
    if isinstance(v, float) and abs(v) > MAX_FLOAT:
        raise ExprError(f"'{_short(text)}' is too large")
    return v


def _eval(node: ast.AST, env: dict, text: str):
    if isinstance(node, ast.Constant) and _number(node.value):
        return _bounded(node.value, text)
    if isinstance(node, ast.Name):
        if node.id in env:
            return _bounded(env[node.id], text)
        raise ExprError(f"unknown name '{node.id}' in '{_short(text)}'")
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        a, b = _eval(node.left, env, text), _eval(node.right, env, text)
        try:
            return _bounded(_BINOPS[type(node.op)](a, b), text)
        except ExprError as e:
            raise ExprError(f"'{_short(text)}': {e}") from None
        except (ZeroDivisionError, OverflowError, TypeError, ValueError) as e:
            raise ExprError(f"'{_short(text)}': {e}") from None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        v = _eval(node.operand, env, text)
        return _bounded(-v if isinstance(node.op, ast.USub) else v, text)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCS
        and not node.keywords
        and len(node.args) <= 8
    ):
        args = [_eval(a, env, text) for a in node.args]
        try:
            return _bounded(_FUNCS[node.func.id](*args), text)
        except (TypeError, ValueError, ZeroDivisionError, OverflowError) as e:
            raise ExprError(f"'{_short(text)}': {e}") from None
    raise ExprError(_not_allowed(text, node))


def evaluate_int(text: str, env: dict[str, float | int]) -> int:
    v = evaluate(text, env)
    if isinstance(v, float):
        if not v.is_integer():
            raise ExprError(f"'{_short(text)}' is {v}, not a whole number")
        v = int(v)
    return v


def split_dims(text: str) -> list[str]:
    """'ceil(n/256), 4' → ['ceil(n/256)', '4']: commas outside parentheses separate x, y, z."""
    parts: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur).strip())
    return [p for p in parts if p]
