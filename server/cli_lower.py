"""``ptxls lower``: the lowering engine from the terminal, the same one the code actions run.

    ptxls lower kernels.cu --kernel vec_add --backend nvcc
    ptxls lower kernels.cu --kernel vec_add --backend llm --candidates 2 --rounds 5
    ptxls lower --describe "relu(float* x, int n): x[i] = max(x[i], 0)" -o relu.ptx

Progress goes to stderr, the final report to stdout. Exit 0 when a lowering passed, 1 when
nothing passed, 2 when it could not run (no endpoint, no such file or kernel).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

EXIT_OK, EXIT_FAILED, EXIT_CANNOT_RUN = 0, 1, 2


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "lower",
        help="lower a CUDA/Triton kernel or a plain-language request to PTX (nvcc reference or the verified LLM loop)",
    )
    p.add_argument(
        "file", nargs="?", metavar="FILE", help=".cu, .py (Triton) or .ptx (optimize) file"
    )
    p.add_argument("--kernel", help="kernel name (needed when FILE has several)")
    p.add_argument("--backend", choices=("llm", "nvcc"), default="llm")
    p.add_argument(
        "-o",
        "--output",
        help="output .ptx (default: <kernel>.ptx beside FILE, never clobbering a hand-edited file)",
    )
    p.add_argument(
        "--describe", metavar="TEXT", help="a plain-language request instead of a kernel in FILE"
    )
    p.add_argument(
        "--optimize",
        action="store_true",
        help="for a .ptx FILE: verify and time all candidates, keep the fastest",
    )
    p.add_argument("--arch", help="sm_XX (default sm_90)")
    p.add_argument("--candidates", type=int, help="parallel candidates (default 2)")
    p.add_argument("--rounds", type=int, help="max rounds per candidate (default 5)")
    p.add_argument(
        "--strategy", choices=("direct", "plan"), help="'plan': ask for a step plan first"
    )
    p.add_argument("--model", help="model name (default: PTXLS_MODEL)")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint (default: OPENAI_BASE_URL)")
    p.add_argument("--ptxas", help="ptxas to verify with")
    p.add_argument("--dry-run", action="store_true", help="print the result instead of writing it")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")


def _settings(args):
    from ptxls.lowering.settings import from_config

    config = {
        k: v
        for k, v in {
            "model": args.model,
            "baseUrl": args.base_url,
            "candidates": args.candidates,
            "rounds": args.rounds,
            "strategy": args.strategy,
            "arch": args.arch,
        }.items()
        if v is not None
    }
    return from_config(config)


def run(args: argparse.Namespace) -> int:
    from ptxls.lowering.service import LowerJob, lower

    if not args.file and not args.describe:
        print(
            "ptxls lower: give a FILE, or --describe TEXT for a plain-language request",
            file=sys.stderr,
        )
        return EXIT_CANNOT_RUN
    if args.describe and args.backend == "nvcc":
        print(
            "ptxls lower: --describe needs the llm backend (nvcc compiles CUDA only)",
            file=sys.stderr,
        )
        return EXIT_CANNOT_RUN
    if args.file:
        path = Path(args.file)
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as e:
            print(f"ptxls lower: cannot read {path}: {e.strerror or e}", file=sys.stderr)
            return EXIT_CANNOT_RUN
    else:
        path, text = Path.cwd() / "request.txt", ""
    settings, problems = _settings(args)
    for p in problems:
        print(f"ptxls lower: {p}", file=sys.stderr)
    job = LowerJob(
        source_path=path,
        text=text,
        backend=args.backend,
        kernel=args.kernel,
        describe=args.describe,
        optimize=args.optimize,
        arch=args.arch,
        output=Path(args.output) if args.output else None,
        workspace=Path.cwd(),
        ptxas_path=args.ptxas,
    )

    def progress(msg: str) -> None:
        if not args.quiet:
            print(f"  {msg}", file=sys.stderr, flush=True)

    try:
        outcome = asyncio.run(lower(job, settings, progress=progress))
    except KeyboardInterrupt:
        print("ptxls lower: cancelled", file=sys.stderr)
        return 130
    if outcome.report:
        print(outcome.report)
    if not outcome.ok:
        print(f"ptxls lower: {outcome.message}", file=sys.stderr)
        ran = outcome.loop is not None
        return EXIT_FAILED if ran else EXIT_CANNOT_RUN
    if args.dry_run:
        print(outcome.ptx)
        return EXIT_OK
    plan = outcome.output
    if plan.action == "unchanged":
        print(f"{plan.path}: unchanged ({plan.reason})")
    else:
        plan.path.write_text(outcome.ptx, encoding="utf-8")
        print(f"wrote {plan.path} ({plan.reason})")
    if outcome.transcript:
        print(f"transcript: {outcome.transcript}")
    print(outcome.message)
    return EXIT_OK
