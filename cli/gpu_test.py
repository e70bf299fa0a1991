"""``ptxls test``: the GPU test harness from the terminal, the same one "Run GPU test" runs.

    ptxls test examples/vec_add.ptx                 # spec and reference from vec_add.cu beside it
    ptxls test kernel.ptx --kernel k --ref k.cu --sizes 0 1 1000 1048576
    ptxls test kernel.cu --json

Progress goes to stderr, the table to stdout. Exit 0 when every kernel passes, 1 when one fails
(wrong, faulted, hung, no spec, did not build), 3 when there is no CUDA device (the reason is
printed: no traceback), 2 when it could not run (no such file), 5 when every kernel passed on the
CPU emulator (``--device cpu``, or ``auto`` without a GPU): passed, but not on a GPU.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from ptxls.frontend.languages import CUDA, PTX, language_of
from ptxls.gputest.report import short_tokens

from .output_format import chosen_format, markdown_to_text

EXIT_PASS, EXIT_FAIL, EXIT_CANNOT_RUN, EXIT_NO_GPU = 0, 1, 2, 3
EXIT_PASSED_EMULATED = 5  # passed on the CPU emulator, not on a GPU


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "test", help="run a kernel's GPU test (cases, reference, timing) and print its table"
    )
    p.add_argument("file", metavar="FILE", help=".ptx or .cu file")
    p.add_argument("--kernel", help="test only this kernel (default: every kernel in FILE)")
    p.add_argument(
        "--ref", metavar="FILE.cu", help="CUDA reference (default: FILE's pair or annotation)"
    )
    p.add_argument(
        "--sizes",
        nargs="+",
        metavar="N",
        help="problem sizes to test (default: 0 1 255 257 3007 16777216)",
    )
    p.add_argument("--arch", help="sm_XX to assemble for (default: the GPU's)")
    p.add_argument("--ptxas", help="path of the ptxas to assemble with")
    p.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        help="seconds a step may take before the kernel counts as hung",
    )
    p.add_argument("--seed", type=int, help="replay a run: the seed its report showed")
    p.add_argument(
        "--device",
        choices=("auto", "gpu", "cpu"),
        default="auto",
        help="where the kernel runs: gpu, cpu (the PTX emulator: checked, not timed, never "
        "GPU-verified; exit 5 when it passes) or auto (the GPU when there is one, else the "
        "emulator; the default)",
    )
    p.add_argument(
        "--spec",
        metavar="SPEC.json",
        help="test spec file (the library's spec.json format; default: spec.json beside a .ptx)",
    )
    from .output_format import add_format_argument

    add_format_argument(p)  # --format {text,markdown,json}; --json = --format json
    from . import sanitize

    sanitize.add_arguments(p)  # --sanitize [TOOL ...], --sanitizer PATH
    p.add_argument(
        "--trust",
        action="store_true",
        help="run a numpy reference (ref:) that ptxls's restricted evaluator refuses as Python "
        "code: only for files you trust (see SECURITY.md)",
    )


def _sizes(raw: list[str] | None) -> list[int] | None:
    if not raw:
        return None
    from ptxls.gputest.exprs import ExprError, evaluate_int

    sizes = []
    for tok in " ".join(raw).replace(",", " ").split():
        try:
            n = evaluate_int(tok, {})
        except ExprError as e:
            raise ValueError(f"--sizes: {e}") from None
        if n < 0:
            raise ValueError(f"--sizes: {tok} is negative")
        sizes.append(n)
    return sizes


def _unknown_kernel(path: Path, kernel: str | None) -> str:
    """Why --kernel names no kernel of the file ("" when it does, or when none was asked)."""
    from ptxls.frontend.demangle import short_name
    from ptxls.frontend.kernels import kernels_in

    language = language_of(str(path))
    if not kernel or language not in (PTX, CUDA):
        return ""
    text = path.read_text(encoding="utf-8", errors="replace")
    names = [name for name, _, _ in kernels_in(text, "cuda" if language == CUDA else "ptx")]
    if kernel in names or kernel in {short_name(n) for n in names}:
        return ""
    return f"no kernel '{kernel}' in {path.name} (has: {', '.join(names) or 'none'})"


async def _run(args: argparse.Namespace, sizes: list[int] | None):
    from ptxls.gputest.api import run_gpu_test_file
    from ptxls.gputest.supervisor import close_shared

    def progress(msg: str) -> None:
        if chosen_format(args) == "text":
            print(f"  … {short_tokens(msg)}", file=sys.stderr)

    try:
        return await run_gpu_test_file(
            args.file, args.kernel, ref=args.ref, sizes=sizes, arch=args.arch, ptxas=args.ptxas,
            timeout_s=args.timeout, seed=args.seed, on_progress=progress,
            trusted=bool(getattr(args, "trust", False)), device=getattr(args, "device", "auto"),
            **({"spec_path": args.spec} if getattr(args, "spec", None) else {}),
        )  # fmt: skip
    finally:
        await close_shared()


def _debug_first_wrong(args: argparse.Namespace, reports) -> list[dict | None]:
    """Each report's "Debug first wrong element" launch configuration (None: it passed); the
    last failed one is left as the project's last failed test, the debugger's default start."""
    from ptxls.gputest.debug_launch import launch_config, record_failed_test

    configs = [launch_config(r, args.file, spec=getattr(args, "spec", None)) for r in reports]
    for r in reports:
        if r.failing_case is not None and not r.refused:
            record_failed_test(r, args.file)
    return configs


def run(args: argparse.Namespace) -> int:
    from ptxls.gputest.api import format_table
    from ptxls.gputest.debug_launch import report_text

    path = Path(args.file)
    if not path.is_file():
        print(f"ptxls test: no such file: {args.file}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    if args.ref and not Path(args.ref).is_file():
        print(f"ptxls test: no such reference file: {args.ref}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    if getattr(args, "spec", None):
        if not Path(args.spec).is_file():
            print(f"ptxls test: no such spec file: {args.spec}", file=sys.stderr)
            return EXIT_CANNOT_RUN
        if language_of(str(path)) != PTX:
            print("ptxls test: --spec applies to .ptx files", file=sys.stderr)
            return EXIT_CANNOT_RUN
    try:
        sizes = _sizes(args.sizes)
    except ValueError as e:
        print(f"ptxls test: {e}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    unknown = _unknown_kernel(path, args.kernel)
    if unknown:
        print(f"ptxls test: {unknown}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    if language_of(str(path)) == PTX and not args.ref:
        from ptxls.gputest.pairing import refused_companions

        # NAME.cu or a sidecar beside it that links out of the project or is no regular file
        if refused := refused_companions(str(path)):
            print("ptxls test: " + "; ".join(refused), file=sys.stderr)
            return EXIT_CANNOT_RUN
    from . import sanitize

    if sanitize.wanted(args):
        return sanitize.run(args, sizes)
    reports = asyncio.run(_run(args, sizes))
    debug = _debug_first_wrong(args, reports)
    fmt = chosen_format(args)
    if fmt == "json":
        print(json.dumps([{**r.to_dict(), "debug": d} for r, d in zip(reports, debug, strict=True)],
                         indent=2, default=str))  # fmt: skip
    elif fmt == "markdown":
        print(short_tokens("\n\n".join(format_table(r) for r in reports)))
    else:
        # a kernel name from the file can be megabytes: cut for the terminal (JSON keeps it)
        print(short_tokens("\n\n".join(markdown_to_text(format_table(r)) for r in reports)))
    if fmt != "json" and any(debug):
        print("\n".join(f"\n{report_text(d)}" for d in debug if d))
    if any(r.status == "no-gpu" for r in reports):
        return EXIT_NO_GPU
    if any(r.refused for r in reports) and all(r.passed or r.refused for r in reports):
        return EXIT_CANNOT_RUN  # the emulator lacks an instruction: the kernel was not tested
    if not all(r.passed for r in reports):
        return EXIT_FAIL
    return EXIT_PASSED_EMULATED if any(r.emulated for r in reports) else EXIT_PASS
