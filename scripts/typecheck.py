"""Type-check the ptxls package with mypy: no error in the strict rooms, no file worse than the
committed baseline elsewhere.

    .venv/bin/python scripts/typecheck.py            # check (what `make lint` and CI run)
    .venv/bin/python scripts/typecheck.py --update   # rewrite the baseline to today's counts

mypy runs as `mypy -p ptxls` with mypy_path = "src" ([tool.mypy] in pyproject.toml): src/ptxls/
links each room folder under its package name (src/ptxls/server -> ../../server), so each module
is seen once, under its real name. Given the room folders themselves mypy would name the
modules `server.app` and find no `ptxls`. Error paths are written back as repository paths
(server/app.py, not src/ptxls/server/app.py).

The baseline (scripts/typecheck_baseline.json) holds the error count of each file outside the
strict rooms. A file whose count rises fails the check; a file whose count falls is reported
so the baseline can be lowered with --update (the goal is an empty baseline).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / "scripts" / "typecheck_baseline.json"
# Rooms held to mypy's strict flags (the override in pyproject.toml): no baseline, no error.
STRICT_ROOMS = ("frontend", "toolchain")
ERROR = re.compile(r"^(?P<path>[^:\s]+\.py):(?P<line>\d+): error: ")


def run_mypy() -> tuple[list[str], int]:
    cmd = [sys.executable, "-m", "mypy", "--cache-dir", str(ROOT / "build" / "mypy-cache")]
    proc = subprocess.run(
        [*cmd, "-p", "ptxls"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    prefix = os.path.join("src", "ptxls", "")
    lines = []
    for line in (proc.stdout + proc.stderr).splitlines():
        if line.startswith(prefix):  # src/ptxls/<room>/x.py → <room>/x.py (the link's target)
            line = line[len(prefix) :]
        lines.append(line)
    return lines, proc.returncode


def counts_of(lines: list[str]) -> Counter[str]:
    found: Counter[str] = Counter()
    for line in lines:
        m = ERROR.match(line)
        if m:
            found[m["path"]] += 1
    return found


def is_strict(path: str) -> bool:
    return path.split("/", 1)[0] in STRICT_ROOMS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--update", action="store_true", help="rewrite the baseline")
    args = parser.parse_args(argv)

    lines, code = run_mypy()
    counts = counts_of(lines)
    if code not in (0, 1) or (code == 1 and not counts):  # mypy itself failed (config, crash)
        print("\n".join(lines))
        print(f"mypy did not run to the end (exit {code})", file=sys.stderr)
        return 2
    strict = {p: n for p, n in counts.items() if is_strict(p)}
    baseline = {p: n for p, n in counts.items() if not is_strict(p)}
    if args.update:
        BASELINE.write_text(json.dumps(dict(sorted(baseline.items())), indent=1) + "\n")
        print(
            f"{BASELINE.relative_to(ROOT)}: {sum(baseline.values())} errors in "
            f"{len(baseline)} files"
        )
        if strict:
            print("the strict rooms still have errors (not baselined):")
            print("\n".join(line for line in lines if is_strict(line.split(":", 1)[0])))
            return 1
        return 0

    allowed: dict[str, int] = json.loads(BASELINE.read_text()) if BASELINE.exists() else {}
    worse = {p: n for p, n in baseline.items() if n > allowed.get(p, 0)}
    better = {p: n for p in allowed if (n := baseline.get(p, 0)) < allowed[p]}
    failed = bool(strict or worse)
    if failed:
        bad = set(strict) | set(worse)
        print("\n".join(line for line in lines if line.split(":", 1)[0] in bad))
    for path, n in sorted(strict.items()):
        print(f"{path}: {n} mypy errors in a strict room ({'/'.join(STRICT_ROOMS)}): fix them")
    for path, n in sorted(worse.items()):
        print(
            f"{path}: {n} mypy errors, the baseline allows {allowed.get(path, 0)}: fix the new "
            "ones (errors above)"
        )
    for path, n in sorted(better.items()):
        print(
            f"{path}: {n} mypy errors, below the baseline's {allowed[path]}: lower it with "
            "`.venv/bin/python scripts/typecheck.py --update` and commit the file"
        )
    total = sum(counts.values())
    print(
        f"mypy: {total} errors ({sum(strict.values())} in strict rooms); baseline "
        f"{sum(allowed.values())} in {len(allowed)} files"
    )
    if worse and not strict:
        print(
            "if a rise is deliberate (a new check, a stub change), `scripts/typecheck.py "
            "--update` rewrites the baseline; say why in the commit body"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
