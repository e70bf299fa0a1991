"""``ptxls replay TRANSCRIPT``: the checks of a recorded lowering run again, without a model.

Every recorded reply goes through today's extraction, ptxas (with the certain fixes the loop
applies), the dataflow completeness check and the forbidden-calls check; each round says what
was recorded and what happens now. Exit 0 when every round agrees with the record, 1 when one
differs (a newer ptxas, a stricter check), 2 when the transcript cannot be read or ptxas is
missing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

EXIT_AGREES, EXIT_DIFFERS, EXIT_CANNOT_RUN = 0, 1, 2


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "replay",
        help="re-run the checks of a recorded lowering (.ptxls/transcripts/*.jsonl), no model",
        description="Exit 0: every round agrees with the record; 1: a round differs; "
        "2: cannot read the transcript or run ptxas.",
    )
    p.add_argument(
        "transcript", metavar="TRANSCRIPT", help="a .jsonl file under .ptxls/transcripts/"
    )
    p.add_argument("--arch", help="target (default: the one the run used)")
    p.add_argument("--ptxas", help="ptxas to check with")
    p.add_argument("--format", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    from ptxls.diagnostics.engine import PtxasUnavailable
    from ptxls.lowering.replay import replay

    path = Path(args.transcript)
    if not path.is_file():
        print(f"ptxls replay: no such transcript: {path}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    try:
        result = asyncio.run(replay(path, arch=args.arch, ptxas_path=args.ptxas))
    except PtxasUnavailable as e:
        print(f"ptxls replay: {e}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    except (OSError, ValueError) as e:
        print(f"ptxls replay: cannot read {path}: {e}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    if not result.rounds and not result.kernel:
        print(f"ptxls replay: {path} holds no lowering run", file=sys.stderr)
        return EXIT_CANNOT_RUN
    if args.format == "json":
        print(json.dumps(result.as_dict(), indent=2))
    else:
        print(result.summary())
    return EXIT_AGREES if result.agrees else EXIT_DIFFERS
