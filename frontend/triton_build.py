"""What a Triton build needs of one kernel, and nothing else from its file: the signature
resolved (the ``# ptxls: signature`` directive, the annotations, the test's types, the first
autotune config) and the ``TritonBuild`` recipe — the ``def`` text of the kernel and of the
``@triton.jit`` helpers it calls, the literal module constants and ``triton`` imports they read —
or the problems that stop it, each said so a person knows what to change.

The file is read by ``triton.py`` (``read_triton``); the recipe is compiled in a separate
process by ``toolchain/triton_compile.py``. Nothing here runs the user's file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .triton import LAUNCH_OPTIONS, SIMPLE_VALUES, TRITON_TYPE, Problem, TritonFile, TritonKernel

_ANNOTATION_TYPES = {"int": "i32", "float": "fp32", "bool": "i1"}
_TL_TYPES = {
    "float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "int1": "i1",
}  # fmt: skip


@dataclass
class TritonBuild:
    """Everything a separate process needs to compile one kernel, and nothing else from the file:
    the ``def`` text of the kernel and of the ``@triton.jit`` helpers it calls (decorators blanked,
    every line at its original number), the literal module constants and ``triton`` imports they
    read, and the signature, constexprs and launch options."""

    kernel: str
    file_name: str  # the name Triton's line info (.file) gives the source
    source: str
    functions: list[str]  # the @triton.jit functions defined by ``source``
    constants: dict[str, tuple[object, bool]]  # name -> (literal value, wrap in tl.constexpr)
    imports: dict[str, tuple[str, str]]  # local name -> (module, attribute)
    signature: dict[str, str]  # every parameter: "*fp32", "i32", or "constexpr"
    constexprs: dict[str, object]
    options: dict[str, int]  # num_warps, num_stages
    notes: list[str] = field(default_factory=list)  # where the signature came from

    def to_json(self) -> dict[str, object]:
        return {
            "kernel": self.kernel,
            "file_name": self.file_name,
            "source": self.source,
            "functions": self.functions,
            "constants": {k: [v, w] for k, (v, w) in self.constants.items()},
            "imports": {k: list(v) for k, v in self.imports.items()},
            "signature": self.signature,
            "constexprs": self.constexprs,
            "options": self.options,
        }


def _annotation_type(annotation: str) -> str | None:
    """``int`` -> i32, ``tl.pointer_type(tl.float32)`` -> *fp32, ``tl.float16`` -> fp16."""
    a = annotation.replace(" ", "")
    if a in _ANNOTATION_TYPES:
        return _ANNOTATION_TYPES[a]
    m = re.fullmatch(r"(?:triton\.language|tl)\.pointer_type\((?:triton\.language|tl)\.(\w+)\)", a)
    if m and m.group(1) in _TL_TYPES:
        return "*" + _TL_TYPES[m.group(1)]
    m = re.fullmatch(r"(?:triton\.language|tl)\.(\w+)", a)
    if m and m.group(1) in _TL_TYPES:
        return _TL_TYPES[m.group(1)]
    if TRITON_TYPE.match(a.strip("'\"")):
        return a.strip("'\"")
    return None


@dataclass
class Signature:
    types: dict[str, str] = field(default_factory=dict)
    constexprs: dict[str, object] = field(default_factory=dict)
    options: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # parameters nothing gives a type/value
    problems: list[Problem] = field(default_factory=list)


def resolve_signature(kernel: TritonKernel, spec_types: dict[str, str] | None = None) -> Signature:
    """Types and constexpr values, first found wins: the ``# ptxls: signature`` directive, the
    annotations (``int``, ``tl.pointer_type(tl.float32)``, ``BLOCK: tl.constexpr = 128``), the
    ``@gputest`` lines (``spec_types``: param -> Triton type), the first autotune config."""
    sig = Signature(problems=list(kernel.directive.problems))
    d = kernel.directive
    first = kernel.autotune[0] if kernel.autotune else None
    used_autotune = False
    for p in kernel.params:
        if p.is_constexpr:
            if p.name in d.values:
                sig.constexprs[p.name] = d.values[p.name]
            elif first is not None and p.name in first.kwargs:
                sig.constexprs[p.name] = first.kwargs[p.name]
                used_autotune = True
            elif p.has_default and p.default_is_literal:
                sig.constexprs[p.name] = p.default
            else:
                sig.missing.append(p.name)
            continue
        found = d.types.get(p.name) or _annotation_type(p.annotation)
        found = found or (spec_types or {}).get(p.name)
        if found is None and p.name in d.values:
            sig.constexprs[p.name] = d.values[p.name]  # a plain parameter fixed by the person
            continue
        if found is None and first is not None and p.name in first.kwargs:
            sig.constexprs[p.name] = first.kwargs[p.name]
            used_autotune = True
            continue
        if found is None:
            sig.missing.append(p.name)
        else:
            sig.types[p.name] = found
    sig.options = dict(d.options)
    if first is not None:
        for key in LAUNCH_OPTIONS:
            value = getattr(first, key)
            if key not in sig.options and value is not None:
                sig.options[key] = value
                used_autotune = True
    if used_autotune:
        sig.notes.append(
            f"autotuned kernel: built with its first config ({len(kernel.autotune)} in the list)"
        )
    if d.lines:
        sig.notes.append(f"signature from the '# ptxls: signature' line {d.lines[0] + 1}")
    return sig


def suggested_directive(kernel: TritonKernel, sig: Signature) -> str:
    """The ``# ptxls: signature`` line to add, with the known parts filled in and guesses for the
    rest (pointers *fp32, scalars i32, constexprs a power of two) for the person to correct."""
    items = []
    for p in kernel.params:
        if p.name in sig.types:
            items.append(f"{p.name}={sig.types[p.name]}")
        elif p.name in sig.constexprs:
            items.append(f"{p.name}={sig.constexprs[p.name]!r}")
        elif p.is_constexpr:
            items.append(f"{p.name}={1024 if 'BLOCK' in p.name.upper() else 1}")
        elif p.name in kernel.loaded | kernel.stored or p.name.lower().endswith("ptr"):
            items.append(f"{p.name}=*fp32")
        else:
            items.append(f"{p.name}=i32")
    return "# ptxls: signature " + " ".join(items)


def _helpers(found: TritonFile, kernel: TritonKernel) -> list[TritonKernel]:
    """The kernel and every module-level @triton.jit function it calls, directly or not."""
    by_name = {k.name: k for k in found.kernels if not k.nested}
    order, todo = [kernel], [kernel]
    while todo:
        for name in todo.pop().free_names:
            helper = by_name.get(name)
            if helper is not None and helper not in order:
                order.append(helper)
                todo.append(helper)
    return order


def build_recipe(
    found: TritonFile,
    text: str,
    kernel_name: str,
    *,
    file_name: str = "kernel.py",
    spec_types: dict[str, str] | None = None,
) -> tuple[TritonBuild | None, list[Problem]]:
    """The ``TritonBuild`` of ``kernel_name``, or the problems that stop it (each said so a
    person knows what to change)."""
    kernel = found.kernel(kernel_name)
    if kernel is None:
        names = ", ".join(k.name for k in found.kernels) or "none"
        return None, [Problem(f"no @triton.jit function '{kernel_name}' (found: {names})")]
    if found.syntax_error:
        return None, [Problem(f"the file does not parse: {found.syntax_error}", kernel.def_line)]
    if kernel.nested:
        return None, [
            Problem(
                f"'{kernel_name}' is defined inside a class or function: ptxls builds only "
                "module-level @triton.jit functions",
                kernel.def_line,
            )
        ]
    functions = _helpers(found, kernel)
    problems = _refusals(found, functions)
    sig = resolve_signature(kernel, spec_types)
    problems += sig.problems
    if sig.missing:
        computed = (
            " (@triton.heuristics computes values when Python launches the kernel; ptxls does "
            "not run it)"
            if kernel.has_heuristics
            else ""
        )
        problems.append(
            Problem(
                f"'{kernel_name}': Triton needs the type or value of "
                f"{', '.join(sig.missing)}, and the source does not say it{computed}. Add this "
                f"line right above @triton.jit (edit the guesses):\n"
                f"{suggested_directive(kernel, sig)}",
                kernel.start_line,
            )
        )
    if problems:
        return None, problems
    return _recipe(found, text, kernel, functions, sig, file_name), []


def _refusals(found: TritonFile, functions: list[TritonKernel]) -> list[Problem]:
    """What cannot be built without running the file: module-level objects that are not
    literals, defaults that are not literals, decorators that compute values at launch."""
    problems = []
    helper_names = {f.name for f in functions}
    for f in functions:
        for p in f.params:
            if not p.default_is_literal:
                problems.append(
                    Problem(
                        f"'{f.name}': the default of '{p.name}' is not a literal; ptxls does not "
                        "run the file to compute it (write the value, or give it with "
                        "'# ptxls: signature')",
                        f.def_line,
                    )
                )
        for name, line in f.free_names.items():
            if name in helper_names or name in found.constants or name in found.triton_imports:
                continue
            if name in found.other_globals:
                problems.append(
                    Problem(
                        f"'{f.name}' uses the module-level name '{name}' (line "
                        f"{found.other_globals[name] + 1}), which is not a literal or a triton "
                        "import: ptxls builds the kernel from its own source and never runs the "
                        f"file. Make '{name}' a literal constant ({name} = 128 or "
                        f"{name} = tl.constexpr(128)) or a parameter",
                        line,
                    )
                )
    return problems


def _recipe(
    found: TritonFile,
    text: str,
    kernel: TritonKernel,
    functions: list[TritonKernel],
    sig: Signature,
    file_name: str,
) -> TritonBuild:
    lines = text.splitlines()
    keep = [""] * len(lines)
    for f in functions:
        for i in range(f.def_line, f.end_line + 1):
            keep[i] = lines[i]
    needed = set().union(*(f.free_names for f in functions))
    signature = {
        p.name: ("constexpr" if p.name in sig.constexprs else sig.types[p.name])
        for p in kernel.params
    }
    return TritonBuild(
        kernel=kernel.name,
        file_name=file_name,
        source="\n".join(keep) + "\n",
        functions=[f.name for f in functions],
        constants={
            k: (v, wrapped)
            for k, (v, wrapped, _) in found.constants.items()
            if k in needed and isinstance(v, SIMPLE_VALUES)
        },
        imports={k: v for k, v in found.triton_imports.items() if k in needed},
        signature=signature,
        constexprs=dict(sig.constexprs),
        options=dict(sig.options),
        notes=list(sig.notes),
    )
