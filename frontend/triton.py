"""The Triton kernel reader: every ``@triton.jit`` function of a Python file, read with ``ast``.

Text in, dataclasses out; never raises on bad user text (a file that does not parse is a
``TritonFile`` with ``syntax_error`` set and the kernels a line scan finds, so the editor's
actions do not flicker while a person types).

For each kernel: its parameters (annotation text, ``tl.constexpr`` or not, literal defaults), its
line range, the decorators' literal options (``@triton.jit(do_not_specialize=[...])``,
``@triton.autotune(configs=[triton.Config({...}, num_warps=...)])``), the ``# ptxls: signature``
directive in the comment block above it, which pointer parameters it stores through, and the
names it reads from the module (so a builder can tell what the kernel needs besides its own
source). Module level: literal constants (``BLOCK = 128``, ``BLOCK = tl.constexpr(128)``), the
``import triton...`` statements, and every other module-level name with its line. What a build
of one kernel takes from this reading (its signature, the recipe) is ``triton_build.py``.

The directive (documented in README.md, "Triton"), in the comment block right above the
decorators; items are ``NAME=TYPE`` (a Triton type: ``*fp32``, ``i32``, ``fp16`` ...) or
``NAME=VALUE`` (a constexpr's literal value), plus the launch options ``num_warps`` and
``num_stages``; several lines add up::

    # ptxls: signature x_ptr=*fp32 y_ptr=*fp32 out_ptr=*fp32 n_elements=i32 BLOCK_SIZE=1024
    # ptxls: signature num_warps=4
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

# Triton's scalar type names (the spelling ASTSource's signature takes); a leading '*' makes a
# pointer to one.
TRITON_TYPES = (
    "i1", "i8", "i16", "i32", "i64", "u1", "u8", "u16", "u32", "u64",
    "fp8e4nv", "fp8e5", "fp8e4b15", "fp16", "bf16", "fp32", "fp64",
)  # fmt: skip
LAUNCH_OPTIONS = ("num_warps", "num_stages")
DIRECTIVE = re.compile(r"^\s*#\s*ptxls:\s*signature\b(?P<body>.*)$")
TRITON_TYPE = re.compile(r"^\*?(?:" + "|".join(TRITON_TYPES) + r")$")
_BUILTINS = frozenset(dir(builtins))
SIMPLE_VALUES = (bool, int, float, str, type(None))  # the constants a build may carry (JSON values)


@dataclass(frozen=True)
class Problem:
    """Something in the user's text that stops a build, pointing at its line (0-based)."""

    message: str
    line: int = -1


@dataclass(frozen=True)
class TritonParam:
    name: str
    annotation: str = ""  # the annotation's source text ("tl.constexpr", "int"), "" when none
    is_constexpr: bool = False
    has_default: bool = False
    default: object = None  # the default's literal value (has_default and literal)
    default_is_literal: bool = True


@dataclass
class Directive:
    """What the ``# ptxls: signature`` lines above a kernel say."""

    types: dict[str, str] = field(default_factory=dict)  # param -> "*fp32" / "i32"
    values: dict[str, object] = field(default_factory=dict)  # constexpr -> literal value
    options: dict[str, int] = field(default_factory=dict)  # num_warps, num_stages
    lines: list[int] = field(default_factory=list)  # where the directive lines are
    problems: list[Problem] = field(default_factory=list)


@dataclass
class AutotuneConfig:
    kwargs: dict[str, object]
    num_warps: int | None = None
    num_stages: int | None = None


@dataclass
class TritonKernel:
    name: str
    start_line: int  # the first decorator (0-based)
    def_line: int  # the 'def' line
    end_line: int  # the last line of the body (inclusive)
    params: list[TritonParam] = field(default_factory=list)
    decorators: list[str] = field(default_factory=list)  # source text of each decorator
    jit_options: dict[str, object] = field(default_factory=dict)  # literal @triton.jit(...) args
    autotune: list[AutotuneConfig] = field(default_factory=list)
    has_heuristics: bool = False  # @triton.heuristics: values computed by Python at launch
    directive: Directive = field(default_factory=Directive)
    nested: bool = False  # defined inside a class or a function (not buildable alone)
    free_names: dict[str, int] = field(default_factory=dict)  # module names read -> first line
    stored: set[str] = field(default_factory=set)  # parameters tl.store writes through
    loaded: set[str] = field(default_factory=set)  # parameters tl.load reads through
    problems: list[Problem] = field(default_factory=list)

    def contains(self, line: int) -> bool:
        return self.start_line <= line <= self.end_line

    def param(self, name: str) -> TritonParam | None:
        return next((p for p in self.params if p.name == name), None)


@dataclass
class TritonFile:
    kernels: list[TritonKernel] = field(default_factory=list)
    # module-level literal constants: name -> (value, wrapped in tl.constexpr(...), line)
    constants: dict[str, tuple[object, bool, int]] = field(default_factory=dict)
    # 'import triton...' bindings: local name -> (module, attribute or "") ("tl" ->
    # ("triton.language", ""), "libdevice" -> ("triton.language.extra", "libdevice"))
    triton_imports: dict[str, tuple[str, str]] = field(default_factory=dict)
    # every other module-level name (functions, classes, other imports, computed values)
    other_globals: dict[str, int] = field(default_factory=dict)
    syntax_error: str = ""

    def kernel(self, name: str) -> TritonKernel | None:
        return next((k for k in self.kernels if k.name == name), None)


def read_triton(text: str) -> TritonFile:
    """Every ``@triton.jit`` function of ``text``. Never raises."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        line = getattr(e, "lineno", None)
        where = f" (line {line})" if line else ""
        found = TritonFile(syntax_error=f"{type(e).__name__}: {getattr(e, 'msg', e)}{where}")
        found.kernels = _scan_lines(text)
        return found
    try:
        return _read_tree(tree, text)
    except (RecursionError, MemoryError) as e:  # a pathologically deep expression
        return TritonFile(syntax_error=f"{type(e).__name__}: the file is too deeply nested")


def _read_tree(tree: ast.Module, text: str) -> TritonFile:
    lines = text.splitlines()
    found = TritonFile()
    for stmt in tree.body:
        _read_module_statement(stmt, found)
    for node, nested in _functions(tree):
        if not _is_jit(node):
            continue
        found.kernels.append(_read_kernel(node, lines, nested))
    for k in found.kernels:
        found.other_globals.pop(k.name, None)
    return found


def _functions(tree: ast.Module) -> Iterator[tuple[ast.FunctionDef, bool]]:
    """(function node, nested?) for every function, module-level ones first in file order."""
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef):
            yield stmt, False
    for stmt in tree.body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.FunctionDef) and node is not stmt:
                yield node, True


def _decorator_name(d: ast.expr) -> str:
    """'triton.jit' for @triton.jit, @triton.jit(...); 'jit' for @jit."""
    target = d.func if isinstance(d, ast.Call) else d
    parts = []
    while isinstance(target, ast.Attribute):
        parts.append(target.attr)
        target = target.value
    if isinstance(target, ast.Name):
        parts.append(target.id)
    return ".".join(reversed(parts))


def _is_jit(node: ast.FunctionDef) -> bool:
    names = [_decorator_name(d) for d in node.decorator_list]
    return any(n in ("triton.jit", "jit", "tl.jit", "triton.language.jit") for n in names)


def _literal(node: ast.expr | None) -> tuple[bool, object]:
    if node is None:
        return False, None
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def _constexpr_call(node: ast.expr) -> ast.expr | None:
    """The argument of ``tl.constexpr(X)`` / ``triton.language.constexpr(X)`` / ``constexpr(X)``."""
    if (
        isinstance(node, ast.Call)
        and _decorator_name(node).endswith("constexpr")
        and len(node.args) == 1
        and not node.keywords
    ):
        return node.args[0]
    return None


def _read_module_statement(stmt: ast.stmt, found: TritonFile) -> None:
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        for alias in stmt.names:
            if isinstance(stmt, ast.Import):
                module, attr = alias.name, ""
                local = alias.asname or alias.name.split(".")[0]
                if not alias.asname:
                    module = alias.name.split(".")[0]
            else:
                module, attr = stmt.module or "", alias.name
                local = alias.asname or alias.name
            if stmt.__class__ is ast.ImportFrom and stmt.level:
                found.other_globals[local] = stmt.lineno - 1
            elif module == "triton" or module.startswith("triton."):
                found.triton_imports[local] = (module, attr)
            else:
                found.other_globals[local] = stmt.lineno - 1
        return
    targets: list[ast.expr] = []
    value = None
    if isinstance(stmt, ast.Assign):
        targets, value = stmt.targets, stmt.value
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        targets, value = [stmt.target], stmt.value
        if "constexpr" in ast.unparse(stmt.annotation):
            ok, v = _literal(value)
            if ok and isinstance(v, SIMPLE_VALUES) and isinstance(stmt.target, ast.Name):
                found.constants[stmt.target.id] = (v, True, stmt.lineno - 1)
                return
    if value is not None and len(targets) == 1 and isinstance(targets[0], ast.Name):
        name = targets[0].id
        inner = _constexpr_call(value)
        ok, v = _literal(inner if inner is not None else value)
        if ok and isinstance(v, SIMPLE_VALUES):
            found.constants[name] = (v, inner is not None, stmt.lineno - 1)
            found.other_globals.pop(name, None)
            return
    for node in ast.walk(stmt) if not isinstance(stmt, ast.FunctionDef | ast.ClassDef) else []:
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.other_globals.setdefault(node.id, stmt.lineno - 1)
            found.constants.pop(node.id, None)
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        found.other_globals[stmt.name] = stmt.lineno - 1


def _read_params(node: ast.FunctionDef) -> list[TritonParam]:
    args = node.args
    positional = args.posonlyargs + args.args
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
    defaults += list(args.defaults)
    pairs = list(zip(positional, defaults, strict=True))
    pairs += list(zip(args.kwonlyargs, args.kw_defaults, strict=True))
    params = []
    for arg, default in pairs:
        annotation = ast.unparse(arg.annotation) if arg.annotation is not None else ""
        is_literal, value = _literal(default)
        params.append(
            TritonParam(
                arg.arg,
                annotation,
                is_constexpr="constexpr" in annotation,
                has_default=default is not None,
                default=value if is_literal else None,
                default_is_literal=default is None or is_literal,
            )
        )
    return params


def _read_decorators(
    node: ast.FunctionDef, kernel: TritonKernel, text_of: Callable[[ast.AST], str]
) -> None:
    for d in node.decorator_list:
        kernel.decorators.append(text_of(d))
        name = _decorator_name(d)
        if name.endswith("heuristics"):
            kernel.has_heuristics = True
        if not isinstance(d, ast.Call):
            continue
        if name.endswith("jit"):
            for kw in d.keywords:
                ok, v = _literal(kw.value)
                if kw.arg and ok:
                    kernel.jit_options[kw.arg] = v
        elif name.endswith("autotune"):
            configs = next((kw.value for kw in d.keywords if kw.arg == "configs"), None)
            if configs is None and d.args:
                configs = d.args[0]
            if isinstance(configs, ast.List | ast.Tuple):
                kernel.autotune = [c for c in map(_autotune_config, configs.elts) if c]


def _autotune_config(node: ast.expr) -> AutotuneConfig | None:
    """``triton.Config({'BLOCK': 128}, num_warps=4, num_stages=2)`` when its parts are literal."""
    if not isinstance(node, ast.Call) or not _decorator_name(node).endswith("Config"):
        return None
    ok, kwargs = _literal(node.args[0]) if node.args else (True, {})
    if not ok or not isinstance(kwargs, dict):
        return None
    config = AutotuneConfig({str(k): v for k, v in kwargs.items()})
    for kw in node.keywords:
        ok, v = _literal(kw.value)
        if kw.arg == "kwargs" and ok and isinstance(v, dict):
            config.kwargs = {str(k): x for k, x in v.items()}
        elif kw.arg in LAUNCH_OPTIONS and ok and isinstance(v, int):
            setattr(config, kw.arg, v)
    return config


def _read_kernel(node: ast.FunctionDef, lines: list[str], nested: bool) -> TritonKernel:
    start = min([d.lineno for d in node.decorator_list] + [node.lineno]) - 1
    kernel = TritonKernel(
        name=node.name,
        start_line=start,
        def_line=node.lineno - 1,
        end_line=(node.end_lineno or node.lineno) - 1,
        params=_read_params(node),
        nested=nested,
    )
    text = "\n".join(lines)

    def text_of(n: ast.AST) -> str:
        return ast.get_source_segment(text, n) or ast.unparse(n)

    _read_decorators(node, kernel, text_of)
    kernel.directive = read_directive(lines, start, kernel)
    _read_body(node, kernel)
    return kernel


def _read_body(node: ast.FunctionDef, kernel: TritonKernel) -> None:
    """Free names (read in the body or a default but bound nowhere in the function: what the
    kernel needs from its module) and the pointers it stores/loads through."""
    bound = {p.name for p in kernel.params}
    loads: dict[str, int] = {}
    parts: list[ast.AST] = list(node.body) + list(node.args.defaults)
    parts += [d for d in node.args.kw_defaults if d is not None]
    for part in parts:
        for sub in ast.walk(part):
            if isinstance(sub, ast.Name):
                if isinstance(sub.ctx, ast.Store | ast.Del):
                    bound.add(sub.id)
                else:
                    loads.setdefault(sub.id, sub.lineno - 1)
            elif isinstance(sub, ast.arg):
                bound.add(sub.arg)
            elif isinstance(sub, ast.FunctionDef):
                bound.add(sub.name)
            elif isinstance(sub, ast.Call):
                _note_memory_access(sub, kernel)
    kernel.free_names = {
        name: line for name, line in loads.items() if name not in bound and name not in _BUILTINS
    }


def _root_name(node: ast.expr) -> str | None:
    """The parameter a pointer expression starts from: ``out_ptr + offs`` -> 'out_ptr'."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.BinOp):
            left = _root_name(node.left)
            node = node.right if left is None else node.left
            if left is not None:
                return left
            continue
        if isinstance(node, ast.Subscript | ast.Attribute | ast.Starred):
            node = node.value
            continue
        if isinstance(node, ast.Call) and node.args:
            node = node.args[0]  # tl.make_block_ptr(base, ...), tl.advance(ptr, ...)
            continue
        return None


def _note_memory_access(call: ast.Call, kernel: TritonKernel) -> None:
    name = _decorator_name(call)
    if not call.args:
        return
    leaf = name.rsplit(".", 1)[-1]
    root = _root_name(call.args[0])
    if root is None:
        return
    if leaf in ("store", "atomic_add", "atomic_max", "atomic_min", "atomic_xchg", "atomic_cas",
                "atomic_and", "atomic_or", "atomic_xor"):  # fmt: skip
        kernel.stored.add(root)
        if leaf.startswith("atomic"):
            kernel.loaded.add(root)
    elif leaf == "load":
        kernel.loaded.add(root)


def read_directive(lines: list[str], above: int, kernel: TritonKernel | None = None) -> Directive:
    """The ``# ptxls: signature`` lines in the comment block directly above line ``above``."""
    found = Directive()
    i = above - 1
    block = []
    while i >= 0 and lines[i].lstrip().startswith("#"):
        block.append(i)
        i -= 1
    names = {p.name for p in kernel.params} if kernel else None
    for ln in sorted(block):
        m = DIRECTIVE.match(lines[ln])
        if not m:
            continue
        found.lines.append(ln)
        for item in m.group("body").split():
            _directive_item(item, ln, found, names, kernel)
    return found


def _directive_item(
    item: str, ln: int, found: Directive, names: set[str] | None, kernel: TritonKernel | None
) -> None:
    name, eq, value = item.partition("=")
    if not eq or not name.isidentifier() or not value:
        found.problems.append(Problem(f"ptxls: signature: '{item}' is not NAME=TYPE", ln))
        return
    if name in LAUNCH_OPTIONS:
        if value.isdigit() and int(value) > 0:
            found.options[name] = int(value)
        else:
            found.problems.append(Problem(f"ptxls: signature: {name} must be a positive int", ln))
        return
    if names is not None and name not in names:
        known = ", ".join(sorted(names)) or "none"
        found.problems.append(
            Problem(f"ptxls: signature: '{name}' is not a parameter (parameters: {known})", ln)
        )
        return
    param = kernel.param(name) if kernel else None
    if TRITON_TYPE.match(value):
        if param is not None and param.is_constexpr:
            found.problems.append(
                Problem(f"ptxls: signature: '{name}' is a tl.constexpr: give its value", ln)
            )
            return
        found.types[name] = value
        return
    ok, v = _literal_text(value)
    if not ok:
        types = ", ".join(TRITON_TYPES)
        found.problems.append(
            Problem(
                f"ptxls: signature: '{value}' for '{name}' is neither a Triton type "
                f"({types}, '*' for a pointer) nor a literal constexpr value",
                ln,
            )
        )
        return
    found.values[name] = v


def _literal_text(value: str) -> tuple[bool, object]:
    if len(value) > 64:
        return False, None
    try:
        v = ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False, None
    return isinstance(v, bool | int | float | str), v


def _scan_lines(text: str) -> list[TritonKernel]:
    """A file that does not parse: ``@triton.jit`` / ``@jit`` followed by a ``def`` line."""
    lines = text.splitlines()
    found = []
    for i, line in enumerate(lines):
        if not re.match(r"\s*@(triton\.)?jit\b", line):
            continue
        j = i + 1
        while j < len(lines) and not re.match(r"\s*def\s+", lines[j]):
            j += 1
        if j >= len(lines):
            break
        m = re.match(r"(\s*)def\s+(\w+)", lines[j])
        if not m:
            continue
        indent = len(m.group(1))
        k = j + 1
        while k < len(lines) and (
            not lines[k].strip() or len(lines[k]) - len(lines[k].lstrip()) > indent
        ):
            k += 1
        found.append(TritonKernel(m.group(2), i, j, k - 1, nested=indent > 0))
    return found
