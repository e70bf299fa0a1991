"""Small arithmetic expressions from specs and annotations: lengths (``n``, ``2*n+1``), grids
(``ceil(n/256)``), scalar values. Evaluated over Python's AST with a whitelist, never ``eval``: an
annotation is user text and must not run code."""

from __future__ import annotations

import ast
import math


class ExprError(ValueError):
    pass


_FUNCS = {
    "ceil": lambda x: math.ceil(x),
    "floor": lambda x: math.floor(x),
    "cdiv": lambda a, b: -(-a // b),
    "min": min,
    "max": max,
    "abs": abs,
    "int": int,
}

_BINOPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
    ast.LShift: lambda a, b: a << b,
    ast.RShift: lambda a, b: a >> b,
}


def check(text: str, names: set[str]) -> None:
    """Raise ExprError when ``text`` is not an expression over ``names`` (and the functions)."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise ExprError(f"'{text}' is not an expression ({e.msg})") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id not in names and node.id not in _FUNCS:
            known = ", ".join(sorted(names)) or "none"
            raise ExprError(f"unknown name '{node.id}' in '{text}' (known: {known})")


def evaluate(text: str, env: dict[str, float | int]) -> float | int:
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise ExprError(f"'{text}' is not an expression ({e.msg})") from None
    return _eval(tree.body, env, text)


def _eval(node: ast.AST, env: dict, text: str):
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        raise ExprError(f"unknown name '{node.id}' in '{text}'")
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        try:
            return _BINOPS[type(node.op)](_eval(node.left, env, text), _eval(node.right, env, text))
        except (ZeroDivisionError, OverflowError, TypeError) as e:
            raise ExprError(f"'{text}': {e}") from None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        v = _eval(node.operand, env, text)
        return -v if isinstance(node.op, ast.USub) else v
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCS
        and not node.keywords
    ):
        args = [_eval(a, env, text) for a in node.args]
        try:
            return _FUNCS[node.func.id](*args)
        except (TypeError, ValueError, ZeroDivisionError) as e:
            raise ExprError(f"'{text}': {e}") from None
    raise ExprError(
        f"'{text}': only numbers, names, + - * / // % ** << >> and "
        f"{', '.join(_FUNCS)}() are allowed"
    )


def evaluate_int(text: str, env: dict[str, float | int]) -> int:
    v = evaluate(text, env)
    if isinstance(v, float):
        if not v.is_integer():
            raise ExprError(f"'{text}' is {v}, not a whole number")
        v = int(v)
    return v


def split_dims(text: str) -> list[str]:
    """'ceil(n/256), 4' → ['ceil(n/256)', '4']: commas outside parentheses separate x, y, z."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    parts.append(cur.strip())
    return [p for p in parts if p]
