"""Readable names for CUDA kernels: ``_Z7vec_addPKfS0_Pfi`` → ``vec_add(const float*, const
float*, float*, int)``.

nvcc names a ``__global__`` function in its PTX by its Itanium C++ mangled name; a person reads
the name they wrote. c++filt is not everywhere (and the nvcc wheel has no cu++filt), and a
symbol comes from a user's file, so this is a small pure-Python reader of the part of the
grammar kernel signatures use: plain and nested names (``N...E``), template arguments
(``I...E``, literals ``L...E``), builtin types, ``const``/``volatile``, pointers and references,
substitutions (``S_``, ``S0_``) and template parameters (``T_``). Anything else (operators,
lambdas, ABI tags) gives up and the symbol is shown as it is: a name is never guessed.
"""

from __future__ import annotations

import re

_BUILTIN = {
    "v": "void", "w": "wchar_t", "b": "bool", "c": "char", "a": "signed char",
    "h": "unsigned char", "s": "short", "t": "unsigned short", "i": "int", "j": "unsigned int",
    "l": "long", "m": "unsigned long", "x": "long long", "y": "unsigned long long",
    "n": "__int128", "o": "unsigned __int128", "f": "float", "d": "double",
    "e": "long double", "g": "__float128", "z": "...",
}  # fmt: skip
_BUILTIN_D = {"Dh": "half", "Di": "char32_t", "Ds": "char16_t", "Du": "char8_t", "Dn": "nullptr_t"}
_MAX_LENGTH = 4096  # longer symbols are shown as they are


class _GiveUp(Exception):
    pass


class _Reader:
    def __init__(self, text: str) -> None:
        self.text, self.pos = text, 0
        self.subs: list[str] = []  # substitution candidates, in the order they appear
        self.template_args: list[str] = []  # of the outermost template name (T_, T0_, …)

    def peek(self, n: int = 1) -> str:
        return self.text[self.pos : self.pos + n]

    def take(self, s: str) -> bool:
        if self.text.startswith(s, self.pos):
            self.pos += len(s)
            return True
        return False

    def number(self) -> int:
        m = re.compile(r"\d+").match(self.text, self.pos)
        if not m:
            raise _GiveUp
        self.pos = m.end()
        return int(m.group())

    def seq_index(self, prefix: str) -> int:
        """S_ → 0, S0_ → 1, SA_ → 11 (base 36); the same for T."""
        m = re.compile(rf"{prefix}([0-9A-Z]*)_").match(self.text, self.pos)
        if not m:
            raise _GiveUp
        self.pos = m.end()
        return int(m.group(1), 36) + 1 if m.group(1) else 0

    # -- names --------------------------------------------------------------------------------

    def source_name(self) -> str:
        n = self.number()
        name = self.text[self.pos : self.pos + n]
        if len(name) != n:
            raise _GiveUp
        self.pos += n
        return "(anonymous namespace)" if name.startswith("_GLOBAL__N") else name

    def name(self) -> tuple[str, bool]:
        """(the name, whether it ends in template arguments)."""
        if self.take("N"):
            return self.nested_name()
        if self.take("St"):
            base = "std::" + self.source_name()
        elif self.peek() == "S" and self.peek(2) != "St":
            base = self.substitution()
        else:
            base = self.source_name()
        if self.peek() == "I":
            self.subs.append(base)
            args = self.template_args_list()
            self.template_args = args
            return f"{base}<{', '.join(args)}>", True
        return base, False

    def nested_name(self) -> tuple[str, bool]:
        while self.peek() in ("K", "V", "r"):  # a member function's qualifiers: not kernels
            self.pos += 1
        parts: list[str] = []
        templated = False
        while not self.take("E"):
            if self.peek() == "S":
                parts = [self.substitution()]
                templated = False
                continue
            if self.peek() == "I":
                if not parts:
                    raise _GiveUp
                args = self.template_args_list()
                self.template_args = args
                parts[-1] += f"<{', '.join(args)}>"
                self.subs.append("::".join(parts))
                templated = True
                continue
            if not self.peek().isdigit():
                raise _GiveUp  # constructors, operators, lambdas: not a kernel's name
            parts.append(self.source_name())
            templated = False
            if self.peek() != "E":
                self.subs.append("::".join(parts))
        if not parts:
            raise _GiveUp
        return "::".join(parts), templated

    def substitution(self) -> str:
        if self.take("St"):
            return "std::" + self.source_name()
        i = self.seq_index("S")
        if i >= len(self.subs):
            raise _GiveUp
        return self.subs[i]

    def template_args_list(self) -> list[str]:
        if not self.take("I"):
            raise _GiveUp
        args = []
        while not self.take("E"):
            if self.take("L"):
                args.append(self.literal())
            else:
                args.append(self.type())
        return args

    def literal(self) -> str:
        kind = self.type()
        m = re.compile(r"(n?)(\d+)E").match(self.text, self.pos)
        if not m:
            raise _GiveUp
        self.pos = m.end()
        value = ("-" if m.group(1) else "") + m.group(2)
        if kind == "bool":
            return "true" if value == "1" else "false"
        suffix = {"unsigned int": "u", "long": "l", "unsigned long": "ul"}.get(kind, "")
        return value + suffix

    # -- types ----------------------------------------------------------------------------------

    def type(self) -> str:
        c = self.peek()
        if c in _BUILTIN:
            self.pos += 1
            return _BUILTIN[c]
        if self.peek(2) in _BUILTIN_D:
            self.pos += 2
            return _BUILTIN_D[self.text[self.pos - 2 : self.pos]]
        if self.take("DF16_"):
            return "_Float16"
        if c in ("K", "V"):
            self.pos += 1
            inner = self.type()
            word = "const" if c == "K" else "volatile"
            made = f"{inner} {word}" if inner.endswith(("*", "&")) else f"{word} {inner}"
        elif c in ("P", "R", "O"):
            self.pos += 1
            made = self.type() + {"P": "*", "R": "&", "O": "&&"}[c]
        elif c == "T":
            i = self.seq_index("T")
            if i >= len(self.template_args):
                raise _GiveUp
            made = self.template_args[i]
        elif c == "S" and self.peek(2) != "St":
            made = self.substitution()
            if self.peek() == "I":
                made += f"<{', '.join(self.template_args_list())}>"
            else:
                return made  # already a candidate
        elif c == "N" or c.isdigit() or self.peek(2) == "St":
            made = self.name()[0]
        else:
            raise _GiveUp
        self.subs.append(made)
        return made


def _parse(symbol: str) -> tuple[str, str, list[str]] | None:
    """(return type or "", name, parameter types) of a mangled function name, else None."""
    if not symbol.startswith("_Z") or len(symbol) > _MAX_LENGTH:
        return None
    r = _Reader(symbol)
    r.pos = 2
    try:
        name, templated = r.name()
        params: list[str] = []
        returns = ""
        if templated and r.pos < len(symbol):
            returns = r.type()  # a function template's encoding starts with its return type
        while r.pos < len(symbol):
            if symbol.startswith(".", r.pos):  # a clone suffix (.constprop.0): not the name's
                break
            params.append(r.type())
    except (_GiveUp, IndexError, ValueError):
        return None
    return returns, name, [] if params == ["void"] else params


def demangle(symbol: str) -> str:
    """The C++ signature of an Itanium-mangled function name; any other name as it is."""
    parsed = _parse(symbol)
    if parsed is None:
        return symbol
    returns, name, params = parsed
    return f"{returns + ' ' if returns else ''}{name}({', '.join(params)})"


def short_name(symbol: str) -> str:
    """What a person calls the kernel: ``vec_add`` for ``_Z7vec_addPKfS0_Pfi``,
    ``scale<float>`` for a template instance, the symbol itself when it is not mangled."""
    parsed = _parse(symbol)
    return symbol if parsed is None else parsed[1]


def readable(symbol: str) -> str:
    """``vec_add(const float*, …) [_Z7vec_addPKfS0_Pfi]`` for a mangled name, else the name."""
    full = demangle(symbol)
    return symbol if full == symbol else f"{full} [{symbol}]"
