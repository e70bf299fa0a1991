"""Watch expressions and breakpoint conditions: a tiny parser of its own, never ``eval``.

Grammar (C-like precedence): ``||`` ``&&`` (also ``or``/``and``), comparisons
``== != < <= > >=``, ``| ^ &``, ``<< >>``, ``+ -``, ``* / %``, unary ``- ! ~ not``, and atoms:
numbers (``4097``, ``0x1f``, ``1.5``), registers (``%r5``, ``%f3``, ``%p1``), special registers
(``%tid.x``, ``%ctaid.y``, ``%laneid``), parameters and buffer elements by name (``n``,
``c[4097]``, ``c[%r5]``), parentheses.

An expression is parsed once into a tree of tuples; ``evaluate`` walks it with a ``lookup``
that gives a name's value — a scalar for the followed thread, or a numpy array over a group of
threads, so a condition is decided for every thread of a group in one pass.
"""

from __future__ import annotations

import re

import numpy as np


class ExpressionError(ValueError):
    pass


_TOKEN = re.compile(
    r"\s*(?:(?P<num>0[xX][0-9a-fA-F]+|\d+\.\d*(?:[eE][-+]?\d+)?|\d+(?:[eE][-+]?\d+)?)"
    r"|(?P<name>%?[A-Za-z_$][\w$]*(?:\.[xyz])?)"
    r"|(?P<op>==|!=|<=|>=|&&|\|\||<<|>>|[-+*/%<>!~&|^()\[\]]))"
)

_BINARY = [
    ("||", "or"),
    ("&&", "and"),
    ("|",),
    ("^",),
    ("&",),
    ("==", "!=", "<", "<=", ">", ">="),
    ("<<", ">>"),
    ("+", "-"),
    ("*", "/", "%"),
]


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise ExpressionError(f"cannot read '{text[pos : pos + 12]}' in '{text}'")
        out.append(m.group(m.lastgroup or 0))
        pos = m.end()
    return out


def parse(text: str):
    """The tree of ``text``: ("num", v) | ("name", n) | ("index", n, tree) | ("un", op, t) |
    ("bin", op, a, b). Raises ExpressionError with what could not be read."""
    toks = _tokens(text)
    if not toks:
        raise ExpressionError("empty expression")
    pos = 0

    def peek():
        return toks[pos] if pos < len(toks) else None

    def take(expected=None):
        nonlocal pos
        t = peek()
        if t is None or (expected is not None and t != expected):
            raise ExpressionError(f"expected '{expected or 'a value'}' in '{text}'")
        pos += 1
        return t

    def level(i):
        if i == len(_BINARY):
            return unary()
        left = level(i + 1)
        while peek() in _BINARY[i]:
            op = {"or": "||", "and": "&&"}.get(take(), toks[pos - 1])
            left = ("bin", op, left, level(i + 1))
        return left

    def unary():
        if peek() in ("-", "!", "~", "not", "+"):
            op = take()
            return ("un", "!" if op == "not" else op, unary())
        return atom()

    def atom():
        t = take()
        if t == "(":
            inner = level(0)
            take(")")
            return inner
        if t[0].isdigit():
            return ("num", int(t, 16) if t[:2].lower() == "0x" else (float(t) if any(
                c in t for c in ".eE") else int(t)))  # fmt: skip
        if t[0] in "%_$" or t[0].isalpha():
            if peek() == "[":
                take("[")
                index = level(0)
                take("]")
                return ("index", t, index)
            return ("name", t)
        raise ExpressionError(f"unexpected '{t}' in '{text}'")

    tree = level(0)
    if pos != len(toks):
        raise ExpressionError(f"unexpected '{toks[pos]}' in '{text}'")
    return tree


_OPS = {
    "+": np.add, "-": np.subtract, "*": np.multiply, "%": np.remainder,
    "==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
    ">": np.greater, ">=": np.greater_equal, "&": np.bitwise_and, "|": np.bitwise_or,
    "^": np.bitwise_xor, "<<": np.left_shift, ">>": np.right_shift,
}  # fmt: skip


def evaluate(tree, lookup, index_lookup):
    """Value of ``tree``: ``lookup(name)`` gives a name's value, ``index_lookup(name, i)`` an
    element (both scalars or arrays over threads)."""
    kind = tree[0]
    if kind == "num":
        return tree[1]
    if kind == "name":
        return lookup(tree[1])
    if kind == "index":
        return index_lookup(tree[1], evaluate(tree[2], lookup, index_lookup))
    if kind == "un":
        v = evaluate(tree[2], lookup, index_lookup)
        if tree[1] == "-":
            return np.negative(v)
        if tree[1] == "!":
            return np.logical_not(v)
        if tree[1] == "~":
            return np.invert(np.asarray(v).astype(np.int64))
        return v
    op, a, b = tree[1], tree[2], tree[3]
    x = evaluate(a, lookup, index_lookup)
    if op in ("&&", "||"):
        y = evaluate(b, lookup, index_lookup)
        return np.logical_and(x, y) if op == "&&" else np.logical_or(x, y)
    y = evaluate(b, lookup, index_lookup)
    with np.errstate(all="ignore"):
        if op == "/":
            if _integral(x) and _integral(y):
                return np.floor_divide(x, np.where(np.asarray(y) == 0, 1, y))
            return np.true_divide(x, y)
        if op in ("&", "|", "^", "<<", ">>"):
            x, y = np.asarray(x).astype(np.int64), np.asarray(y).astype(np.int64)
        return _OPS[op](x, y)


def _integral(v) -> bool:
    return np.issubdtype(np.asarray(v).dtype, np.integer) or np.asarray(v).dtype == bool


def names_in(tree) -> set[str]:
    if tree[0] == "name":
        return {tree[1]}
    if tree[0] == "index":
        return {tree[1]} | names_in(tree[2])
    if tree[0] == "un":
        return names_in(tree[2])
    if tree[0] == "bin":
        return names_in(tree[2]) | names_in(tree[3])
    return set()
