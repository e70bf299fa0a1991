"""``ptxls sass FILE [--kernel K]``: what ptxas made of a kernel, SASS under the PTX line it came
from (Compiler Explorer style), with registers and instruction counts per function.

FILE is a .ptx (hand-written, nvcc's or Triton's), a .cu (nvcc -lineinfo -ptx first) or a .py
with @triton.jit kernels (Triton compiles the kernel's own source to PTX; the file never runs).
No GPU is needed: ptxas and nvdisasm (or cuobjdump) read and write files only.

Exit status: 0 printed, 1 ptxas (or nvcc) found errors in the file (printed like ptxls check),
2 cannot run (unreadable file, no ptxas/nvdisasm — the message says how to get them, a tool run
past --timeout, no kernel of that name).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from ptxls.frontend.languages import CUDA, PTX, PYTHON, extensions, language_of

from .grammar import ARCH_HELP, EXIT_CANNOT_RUN, EXIT_OK, EXIT_PROBLEMS, say
from .output_format import add_format_argument, chosen_format


def add_parser(subparsers) -> None:  # argparse's private subparsers type
    p = subparsers.add_parser(
        "sass",
        help="SASS of a .ptx/.cu kernel with each instruction under its PTX line (no GPU needed)",
        description="Assembles FILE with the configured ptxas (-lineinfo), disassembles the "
        "cubin with nvdisasm and prints each function's SASS under the PTX (and CUDA) line it "
        "came from, with its registers and instruction counts. Exit status: 0, 1 when ptxas/nvcc "
        "finds errors in the file, 2 cannot run (no nvdisasm: pip install nvidia-cuda-nvdisasm).",
    )
    p.add_argument("file", metavar="FILE", help="a .ptx, .cu, or .py file with @triton.jit kernels")
    p.add_argument("--kernel", help="only this function (PTX name or a CUDA kernel's plain name)")
    p.add_argument("--arch", help=ARCH_HELP)
    p.add_argument("--ptxas", help="path of the ptxas to use")
    p.add_argument("--nvdisasm", help="path of the nvdisasm to use")
    p.add_argument("--nvcc", help="path of the nvcc to use for a .cu file")
    p.add_argument(
        "--timeout",
        type=_seconds,
        default=60.0,
        metavar="SECONDS",
        help="stop a tool after this long and exit 2 (default: 60)",
    )
    add_format_argument(p, json_alias=False)


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < seconds < 1e6:  # NaN and inf too: a run that never ends is not a timeout
        raise argparse.ArgumentTypeError(f"must be between 0 and 1e6 seconds: {text}")
    return seconds


def run(args: argparse.Namespace) -> int:
    return asyncio.run(run_sass(args))


async def run_sass(args: argparse.Namespace) -> int:
    from ptxls.diagnostics.sass import SassOptions, sass_for_cuda, sass_for_ptx
    from ptxls.diagnostics.text_guard import decode_bytes
    from ptxls.frontend.ptx import ptx_target
    from ptxls.toolchain.arch import choose_arch
    from ptxls.toolchain.discovery import ToolNotFound

    path = Path(args.file)
    language = language_of(str(path))
    if language is None:
        readable = extensions(PTX, CUDA, PYTHON)
        return _cannot_run(f"{path}: not a PTX, CUDA or Triton file (sass reads {readable})")
    try:
        text = decode_bytes(path.read_bytes())
    except OSError as e:
        return _cannot_run(f"cannot read {path}: {e.strerror or e}")
    is_cuda = language == CUDA
    is_triton = language == PYTHON
    options = SassOptions(
        arch=choose_arch(args.arch, None if is_cuda or is_triton else ptx_target(text)),
        file_name=path.name,
        ptxas_path=args.ptxas,
        nvdisasm_path=args.nvdisasm,
        nvcc_path=args.nvcc,
        timeout=args.timeout,
    )
    try:
        if is_triton:
            kernel = _triton_kernel(text, args.kernel)
            if kernel.startswith("no "):
                return _cannot_run(f"{path.name}: {kernel}")
            from ptxls.lowering.triton_sass import sass_for_triton

            report = await sass_for_triton(text, kernel, options, file_path=str(path))
        elif is_cuda:
            report = await sass_for_cuda(text, options, file_path=str(path))
        else:
            report = await sass_for_ptx(text, options)
    except (ToolNotFound, OSError) as e:
        return _cannot_run(str(e))
    if not report.ok and not report.cannot_run and not is_triton and chosen_format(args) != "json":
        return await _refused(path, args)
    return _print(report, args)


async def _refused(path: Path, args: argparse.Namespace) -> int:
    """ptxas (or nvcc) found errors: said through ``ptxls check``'s engine and printer (the
    cascade folded into its cause, the fixes noted), never as the tool's raw text."""
    from .check import check_file, print_problems

    try:
        result = await check_file(
            path, arch=args.arch, ptxas=args.ptxas, nvcc=args.nvcc, timeout=args.timeout
        )
    except Exception as e:  # the check could not run either: say why
        return _cannot_run(str(e))
    code = print_problems("sass", str(path), path, result, args.arch, sys.stdout)
    if code == EXIT_PROBLEMS:
        say("sass", f"no SASS for {path}: {'ptxas' if language_of(str(path)) == PTX else 'nvcc'} "
                    "found errors in it")  # fmt: skip
    return code if code != EXIT_OK else EXIT_PROBLEMS


def _triton_kernel(text: str, asked: str | None) -> str:
    """The @triton.jit kernel to compile (Triton compiles one at a time), or why none."""
    from ptxls.frontend.triton import read_triton

    names = [k.name for k in read_triton(text).kernels]
    if asked:
        return (
            asked
            if asked in names
            else f"no @triton.jit kernel '{asked}' (has: {', '.join(names) or 'none'})"
        )
    if len(names) == 1:
        return names[0]
    if not names:
        return "no @triton.jit kernel"
    return f"no --kernel given, and there are several: {', '.join(names)}"


def _print(report, args: argparse.Namespace) -> int:  # a SassReport
    from ptxls.diagnostics.sass_view import render_markdown, render_text, to_json

    fmt = chosen_format(args)
    if not report.ok:
        if fmt == "json":
            print(json.dumps(to_json(report), indent=2))
        else:
            for line in report.errors:
                say("sass", line)
        return EXIT_CANNOT_RUN if report.cannot_run else EXIT_PROBLEMS
    kernel = None
    if args.kernel:
        entry = report.find(args.kernel)
        if entry is None:
            names = ", ".join(e.name for e in report.entries) or "none"
            return _cannot_run(f"no function '{args.kernel}' in {report.file_name} (has: {names})")
        kernel = entry.name
    if fmt == "json":
        print(json.dumps(to_json(report, kernel), indent=2))
    elif fmt == "markdown":
        print(render_markdown(report, kernel), end="")
    else:
        print(render_text(report, kernel), end="")
    return EXIT_OK


def _cannot_run(message: str) -> int:
    say("sass", message)
    return EXIT_CANNOT_RUN
