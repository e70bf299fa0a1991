"""What the tuning generators share (gen_scan.py, gen_hgemm.py, gen_histogram.py): each makes
its candidates' files as ``{name: text}`` and writes them into bench/tuning/, or, with
``--check``, says which committed file differs from what it would write (tests/
test_tuning_generated.py checks every one of them)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent


def differing(made: dict[str, str], folder: Path = HERE) -> list[str]:
    """The names in ``made`` whose file in ``folder`` is missing or not byte-identical."""
    return [
        name
        for name, text in made.items()
        if not (folder / name).is_file() or (folder / name).read_bytes() != text.encode()
    ]


def cli(make: Callable[[], dict[str, str]], what: str, argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=what)
    ap.add_argument("--out", type=Path, default=HERE, help="folder to write into (bench/tuning/)")
    ap.add_argument("--check", action="store_true", help="compare with the files, write nothing")
    args = ap.parse_args(argv)
    made = make()
    if args.check:
        stale = differing(made, args.out)
        for name in stale:
            print(f"{args.out / name}: not what the generator writes", file=sys.stderr)
        return 1 if stale else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in made.items():
        (args.out / name).write_text(text)
        print(args.out / name)
    return 0
