"""Triton as a compiler: a kernel from a user's .py file to PTX, in a separate killable process,
without running the user's file.

Why this is safe. Triton's front end needs a Python function object, and the usual way to get
one is to import the module, which runs everything at its top level. ptxls never does that.
``frontend/triton.py`` reads the file with ``ast`` and ``frontend/triton_build.py`` hands over a
``TritonBuild``: only the ``def`` text of the kernel and of the ``@triton.jit`` helpers it calls
(decorators blanked, every line at its original number so Triton's ``.loc`` line info points
into the user's file), the module constants ``ast.literal_eval`` could read, and the names of
the ``triton`` modules it imports. Here that text is parsed again and refused unless it holds nothing but undecorated
``def`` statements whose defaults are literals; it is compiled with ``from __future__ import
annotations`` (annotations stay strings) and executing it only *defines* the functions: no
decorator, default or annotation runs, and no function body runs either -- Triton's front end
reads the body's source and compiles it to GPU code; Python never calls it. The namespace holds
only ``triton``, ``triton.language`` (and the other ``triton.*`` imports the file names), the
literal constants and the helpers. It runs in its own process, killed on timeout
(``process.run_killable``), with a private cache folder.

Protocol: ``python -m ptxls.toolchain.triton_compile REQUEST.json RESULT.json``; the request is
``{"build": TritonBuild.to_json(), "arch": 90}``, the result ``{"ok", "ptx", "metadata",
"error", "triton"}``. ``build_functions`` is also what the GPU worker uses to launch the Triton
kernel as the reference of a GPU test.
"""

from __future__ import annotations
import __future__

import ast
import importlib
import json
import linecache
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .isolated import python_command
from .process import ProcessResult, run_killable, scratch_name

if TYPE_CHECKING:
    from ptxls.frontend.triton_build import TritonBuild


class UnsafeSource(Exception):
    """The text handed over holds something other than plain ``def`` statements."""


def check_definitions_only(source: str) -> ast.Module:
    """The build's source must be undecorated ``def`` statements with literal defaults."""
    tree = ast.parse(source)
    for stmt in tree.body:
        if not isinstance(stmt, ast.FunctionDef) or stmt.decorator_list:
            raise UnsafeSource(
                f"line {stmt.lineno}: only undecorated 'def' statements may be built"
            )
        for default in stmt.args.defaults + [d for d in stmt.args.kw_defaults if d]:
            try:
                ast.literal_eval(default)
            except ValueError:
                raise UnsafeSource(
                    f"line {default.lineno}: the default of a parameter is not a literal"
                ) from None
    return tree


def _namespace(build: dict[str, Any]) -> dict[str, Any]:
    import triton
    import triton.language as tl

    ns: dict[str, Any] = {"__name__": "ptxls_triton_kernel", "triton": triton, "tl": tl}
    for local, (module, attr) in build.get("imports", {}).items():
        if not (module == "triton" or module.startswith("triton.")):
            raise UnsafeSource(f"import of '{module}' refused: only triton modules are provided")
        mod = importlib.import_module(module)
        if attr:
            try:
                ns[local] = getattr(mod, attr)
            except AttributeError:
                ns[local] = importlib.import_module(f"{module}.{attr}")
        else:
            ns[local] = mod
    for name, (value, wrapped) in build.get("constants", {}).items():
        ns[name] = tl.constexpr(value) if wrapped else value
    return ns


def build_functions(build: dict[str, Any]) -> dict[str, Any]:
    """The ``@triton.jit`` functions of the build, made from its text alone (see the module
    docstring for why this runs no user code). Returns name -> JITFunction."""
    import triton

    source, file_name = build["source"], build["file_name"]
    check_definitions_only(source)
    # inspect.getsource (which Triton calls) reads the text from linecache; mtime None keeps
    # linecache from comparing it with a file of that name on disk.
    linecache.cache[file_name] = (len(source), None, source.splitlines(True), file_name)
    flags = __future__.annotations.compiler_flag
    code = compile(source, file_name, "exec", flags=flags, dont_inherit=True)
    ns = _namespace(build)
    exec(code, ns)  # defines the functions; their bodies are compiled by Triton, never called
    jitted = {}
    for name in build["functions"]:
        fn = triton.jit(ns[name])
        ns[name] = fn
        jitted[name] = fn
    return jitted


def target_arch(arch: str) -> int:
    """'sm_90' / 'sm_90a' / 'compute_90' -> 90."""
    digits = "".join(c for c in arch.split("_")[-1] if c.isdigit())
    return int(digits) if digits else 90


def compile_to_ptx(build: dict[str, Any], arch: int) -> dict[str, Any]:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    fn = build_functions(build)[build["kernel"]]
    src = ASTSource(fn, build["signature"], build["constexprs"])
    options = {
        k: v for k, v in build.get("options", {}).items() if k in ("num_warps", "num_stages")
    }
    compiled = triton.compile(src, target=GPUTarget("cuda", arch, 32), options=options)
    meta = compiled.metadata
    return {
        "ok": True,
        "ptx": compiled.asm["ptx"],
        "metadata": {
            "num_warps": meta.num_warps,
            "num_stages": meta.num_stages,
            "shared": meta.shared,
            "global_scratch_size": getattr(meta, "global_scratch_size", 0),
            "profile_scratch_size": getattr(meta, "profile_scratch_size", 0),
            "name": meta.name,
        },
        "triton": triton.__version__,
    }


def main(argv: list[str]) -> int:
    request_path, result_path = argv[1], argv[2]
    request = json.loads(Path(request_path).read_text())
    try:
        result = compile_to_ptx(request["build"], int(request.get("arch", 90)))
    except ImportError as e:
        result = {"ok": False, "error": f"triton is not installed here ({e})", "no_triton": True}
    except UnsafeSource as e:
        result = {"ok": False, "error": f"refused: {e}"}
    except Exception as e:  # Triton's compile errors (CompilationError, ...) are the message
        result = {"ok": False, "error": _compile_error(e, request["build"])}
    Path(result_path).write_text(json.dumps(result))
    return 0


def _compile_error(e: Exception, build: dict[str, Any]) -> str:
    """Triton's CompilationError carries the source line; keep its text, shortened."""
    text = str(e).strip() or type(e).__name__
    lines = text.splitlines()
    if len(lines) > 40:
        text = "\n".join(lines[:40] + [f"... ({len(lines) - 40} more lines)"])
    return f"Triton could not compile '{build['kernel']}': {type(e).__name__}: {text}"


# --- the parent side ---


def source_name(file_path: str | None) -> str:
    """The file name Triton's line info gives the source (messages and .file name it)."""
    name = Path(file_path).name if file_path and "\0" not in file_path else ""
    return scratch_name(name, "kernel.py")


def recipe_for(
    text: str, kernel: str, file_path: str | None, spec_types: dict[str, str] | None = None
) -> tuple[TritonBuild | None, str]:
    """The build of ``kernel`` from the source alone (``frontend/triton.py``), or the message
    that says why not (one problem per line, with its line number)."""
    from ptxls.frontend.triton import read_triton
    from ptxls.frontend.triton_build import build_recipe

    build, problems = build_recipe(
        read_triton(text), text, kernel, file_name=source_name(file_path), spec_types=spec_types
    )
    if build is None:
        return None, "\n".join(
            (f"line {p.line + 1}: " if p.line >= 0 else "") + p.message for p in problems
        )
    return build, ""


@dataclass
class TritonCompile:
    ok: bool
    ptx: str = ""
    message: str = ""
    metadata: dict[str, Any] | None = None
    version: str = ""  # triton's version
    no_triton: bool = False


def triton_python() -> str:
    """The interpreter that has triton: ``PTXLS_TRITON_PYTHON`` or our own."""
    return os.environ.get("PTXLS_TRITON_PYTHON") or sys.executable


async def triton_to_ptx(
    build: dict[str, Any], *, arch: str = "sm_90", timeout: float = 120.0
) -> TritonCompile:
    """Compile in a fresh killable process. Never raises for a bad kernel: the message says."""
    with tempfile.TemporaryDirectory(prefix="ptxls-triton-") as tmp:
        request, result_path = Path(tmp) / "request.json", Path(tmp) / "result.json"
        request.write_text(json.dumps({"build": build, "arch": target_arch(arch)}))
        env = dict(os.environ)
        env["TRITON_CACHE_DIR"] = str(Path(tmp) / "cache")
        env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # 3.9 warns when unset; 1 is its default
        # Isolated (toolchain/isolated.py); its working directory is the private scratch folder.
        args = python_command(
            "ptxls.toolchain.triton_compile", str(request), str(result_path), python=triton_python()
        )
        try:
            run: ProcessResult = await run_killable(args, timeout=timeout, cwd=tmp, env=env)
        except OSError as e:
            return TritonCompile(False, message=f"could not start {args[0]}: {e}")
        if run.timed_out:
            return TritonCompile(False, message=f"Triton did not finish within {timeout:g} s")
        try:
            data = json.loads(result_path.read_text())
        except (OSError, ValueError):
            tail = (run.stderr or run.stdout).strip().splitlines()[-12:]
            return TritonCompile(
                False, message="the Triton compile process failed:\n" + "\n".join(tail)
            )
    if not data.get("ok"):
        return TritonCompile(
            False, message=data.get("error", "unknown error"), no_triton=bool(data.get("no_triton"))
        )
    return TritonCompile(True, data["ptx"], "", data.get("metadata"), data.get("triton", ""))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
