"""``ptxls bench``: the library's kernels (all, or the ones named) — or any ``FILE.ptx`` with
``--ref REF.cu`` / ``--spec SPEC.json`` — at their benchmark sizes, through the GPU test
harness: each timed launch verified and started from the verified launch's state, against the
nvcc -O3 build of the CUDA reference and PyTorch where torch is importable.

    ptxls bench                              # every kernel in fewshot/kernels/
    ptxls bench softmax_rows layernorm_rows --json
    ptxls bench my.ptx --ref my.cu --sizes 1<<26
    ptxls bench --out bench/results/library/h200-2026-12-03.md

Exit 0 when every kernel passed, 1 when one failed or was flagged, 2 when it could not run (no
such kernel or file), 3 when there is no CUDA device (the reason is printed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from ptxls.frontend.languages import PTX, language_of

EXIT_PASS, EXIT_FAIL, EXIT_CANNOT_RUN, EXIT_NO_GPU = 0, 1, 2, 3


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "bench",
        help="time library kernels (or FILE --ref REF) vs nvcc -O3 and PyTorch, verified",
    )
    p.add_argument(
        "targets",
        nargs="*",
        metavar="KERNEL|FILE.ptx",
        help="library kernel names or .ptx files (default: the whole library)",
    )
    p.add_argument("--kernel", help="in a FILE, bench only this .entry")
    p.add_argument("--ref", metavar="REF.cu", help="CUDA reference for a FILE (nvcc -O3 baseline)")
    p.add_argument("--spec", metavar="SPEC.json", help="spec file for a FILE")
    p.add_argument(
        "--sizes", nargs="+", metavar="N", help="sizes instead of the spec's bench sizes"
    )
    p.add_argument("--arch", help="sm_XX[a|f] to assemble for (default: the GPU's)")
    from .output_format import add_format_argument

    add_format_argument(p)  # --format {text,markdown,json}; --json: rows and machine facts
    p.add_argument("--out", metavar="FILE", help="also write the table (.md) or JSON (.json)")


def _targets(args) -> list[tuple[str, str | None]] | str:
    """(ptx path, kernel or None) per target, or the message for the first bad one."""
    from ptxls.gputest.bench import library_kernels

    lib = library_kernels()
    if not args.targets:
        return [(str(p), name) for name, p in lib.items()]
    found = []
    for t in args.targets:
        if t in lib:
            found.append((str(lib[t]), t))
        elif Path(t).is_file() and language_of(t) == PTX:
            found.append((t, args.kernel))
        else:
            known = ", ".join(lib) or "none"
            return f"no library kernel or .ptx file named '{t}' (library kernels: {known})"
    return found


async def _bench(args, targets, sizes):
    from ptxls.gputest.api import gpu_available
    from ptxls.gputest.bench import bench_file, prepare_library
    from ptxls.gputest.supervisor import shared_supervisor

    def progress(msg: str) -> None:
        if not args.json:
            print(f"  … {msg}", file=sys.stderr)

    try:
        ok, why = await gpu_available()
        if not ok:
            return None, why
        if len(targets) > 1:  # every ptxas and nvcc build at once, before the first kernel
            progress("building every kernel and its nvcc baseline")
            await prepare_library(sorted({path for path, _ in targets}), arch=args.arch)
        rows = []
        for path, kernel in targets:
            progress(f"{kernel or path}")
            rows += await bench_file(
                path, kernel, ref=args.ref, spec_path=args.spec, sizes=sizes, arch=args.arch,
                on_progress=progress,
            )  # fmt: skip
            if args.out:  # kept up to date, so a run cut short still leaves its finished rows
                _write(args, rows)
        return rows, ""
    finally:
        await shared_supervisor().close()


def _write(args, rows, facts: dict | None = None, text: str | None = None) -> None:
    """--out: JSON (rows and machine facts) for a .json name or with --json, else the table."""
    from ptxls.gputest.bench import format_bench, geomean, machine_facts

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    facts = facts if facts is not None else machine_facts(rows[0].device if rows else None)
    if out.suffix == ".json" or args.json:
        out.write_text(json.dumps(
            {"machine": facts, "geomean_vs_nvcc": geomean([r.vs_nvcc for r in rows]),
             "rows": [r.to_dict() for r in rows]}, indent=2, default=str) + "\n")  # fmt: skip
    else:
        out.write_text((text or format_bench(rows, facts)) + "\n")


def run(args: argparse.Namespace) -> int:
    from ptxls.gputest.bench import format_bench, geomean, machine_facts

    from .gpu_test import _sizes
    from .output_format import chosen_format, markdown_to_text

    fmt = chosen_format(args)
    args.json = fmt == "json"

    for f, what in ((args.ref, "reference"), (args.spec, "spec")):
        if f and not Path(f).is_file():
            print(f"ptxls bench: no such {what} file: {f}", file=sys.stderr)
            return EXIT_CANNOT_RUN
    targets = _targets(args)
    if isinstance(targets, str):
        print(f"ptxls bench: {targets}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    if not targets:
        print("ptxls bench: the library has no kernels", file=sys.stderr)
        return EXIT_CANNOT_RUN
    try:
        sizes = _sizes(args.sizes)
    except ValueError as e:
        print(f"ptxls bench: {e}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    rows, why = asyncio.run(_bench(args, targets, sizes))
    if rows is None:
        print(f"ptxls bench: no GPU to benchmark on: {why}", file=sys.stderr)
        return EXIT_NO_GPU
    facts = machine_facts(next((r.device for r in rows if r.device), None))
    if args.json:
        text = json.dumps(
            {"machine": facts, "geomean_vs_nvcc": geomean([r.vs_nvcc for r in rows]),
             "rows": [r.to_dict() for r in rows]}, indent=2, default=str)  # fmt: skip
    else:
        text = format_bench(rows, facts)
    print(markdown_to_text(text) if fmt == "text" else text)
    if args.out:
        _write(args, rows, facts, text)
    if any(r.status == "no-gpu" for r in rows):
        return EXIT_NO_GPU
    return EXIT_PASS if all(r.status == "pass" and not r.flags for r in rows) else EXIT_FAIL
