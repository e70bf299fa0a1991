"""``ptxls test FILE --sanitize [TOOL ...]``: the GPU test under compute-sanitizer.

    ptxls test kernel.ptx --sanitize                     # memcheck + racecheck
    ptxls test kernel.ptx --sanitize racecheck initcheck --kernel k
    ptxls test kernel.cu --sanitize all --json

Each tool runs the kernel's test once, at one size (the spec's smallest that launches two blocks,
or ``--sizes``), untimed, in a fresh worker under compute-sanitizer; every report is printed with
the line it points at: the PTX line of a .ptx, the .cu line of a CUDA kernel (its test is the one
``ptxls test FILE.cu`` runs, on nvcc -lineinfo's PTX, whose line info names the .cu lines). Exit 0 when every tool finds nothing, 1 on a finding or a test that
did not finish, 2 when it could not run (no file, no compute-sanitizer, a bad tool name), 3 when
there is no CUDA device.
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

EXIT_CLEAN, EXIT_FOUND, EXIT_CANNOT_RUN, EXIT_NO_GPU = 0, 1, 2, 3


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sanitize",
        nargs="*",
        metavar="TOOL",
        help="run the test under compute-sanitizer: memcheck, racecheck, synccheck, initcheck or "
        "all (default with no TOOL: memcheck racecheck); one size, untimed",
    )
    p.add_argument("--sanitizer", metavar="PATH", help="the compute-sanitizer binary to use")


def wanted(args: argparse.Namespace) -> bool:
    return getattr(args, "sanitize", None) is not None


async def _sanitize_one(args, name: str, text: str, ref: str | None, opts):
    if language_of(args.file) == CUDA:
        from ptxls.gputest.sanitize_cuda import sanitize_cuda

        return await sanitize_cuda(text, name, cuda_path=args.file, reference_cuda=ref,
                                   reference_path=args.ref, options=opts)  # fmt: skip
    from ptxls.gputest.sanitize import sanitize_ptx

    return await sanitize_ptx(text, name, ptx_path=args.file, reference_cuda=ref,
                              reference_path=args.ref, options=opts)  # fmt: skip


async def _run(args: argparse.Namespace, tools, sizes, names: list[str], text: str):
    from ptxls.gputest.sanitize import SanitizeOptions
    from ptxls.gputest.supervisor import shared_supervisor

    def progress(msg: str) -> None:
        if chosen_format(args) == "text":
            print(f"  … {short_tokens(msg)}", file=sys.stderr)

    opts = SanitizeOptions(
        tools=tools, sanitizer=args.sanitizer, sizes=sizes, ptxas=args.ptxas,
        nvcc=getattr(args, "nvcc", None), arch=args.arch,
        seed=args.seed, trusted=bool(getattr(args, "trust", False)),
        spec_path=getattr(args, "spec", None), on_progress=progress,
    )  # fmt: skip
    if args.timeout != 10.0:  # the person chose a step limit: keep it (default: the sanitizer's)
        opts.timeout_s = args.timeout
    ref = Path(args.ref).read_text(errors="replace") if args.ref else None
    results = []
    try:
        for name in names:
            result = await _sanitize_one(args, name, text, ref, opts)
            results.append(result)
            if result.status in ("no-gpu", "no-sanitizer"):
                break  # the same answer for every kernel: said once
        return results
    finally:
        await shared_supervisor().close()


def run(args: argparse.Namespace, sizes: list[int] | None) -> int:
    """Called by ``ptxls test`` after it checked the file, --ref, --spec and --sizes."""
    from ptxls.frontend.kernels import kernels_in
    from ptxls.gputest.sanitize import format_result, parse_tools

    try:
        tools = parse_tools(args.sanitize)
    except ValueError as e:
        print(f"ptxls test: --sanitize: {e}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    path = Path(args.file)
    language = language_of(str(path))
    if language not in (PTX, CUDA):
        print("ptxls test: --sanitize runs the kernels of a .ptx or a CUDA (.cu) file (for a "
              "Triton kernel, sanitize its PTX: ptxls lower FILE.py --backend triton)",
              file=sys.stderr)  # fmt: skip
        return EXIT_CANNOT_RUN
    text = path.read_text(errors="replace")
    names = [args.kernel] if args.kernel else [k for k, _, _ in kernels_in(text, language)]
    if not names:
        what = ".entry" if language == "ptx" else "__global__"
        print(f"ptxls test: no kernels ({what}) in {args.file}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    results = asyncio.run(_run(args, tools, sizes, names, text))
    fmt = chosen_format(args)
    if fmt == "json":
        print(json.dumps([r.to_dict() for r in results], indent=2, default=str))
    else:
        body = "\n\n".join(format_result(r) for r in results)
        print(short_tokens(body if fmt == "markdown" else markdown_to_text(body)))
    statuses = {r.status for r in results}
    if "no-sanitizer" in statuses:
        return EXIT_CANNOT_RUN
    if "no-gpu" in statuses:
        return EXIT_NO_GPU
    return EXIT_CLEAN if statuses == {"clean"} else EXIT_FOUND
