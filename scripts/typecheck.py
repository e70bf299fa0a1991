"""Type-check the ptxls package with mypy: no error in the strict rooms, no file worse than the
committed baseline elsewhere.

    .venv/bin/python scripts/typecheck.py            # check (what `make lint` and CI run)
    .venv/bin/python scripts/typecheck.py --update   # rewrite the baseline to today's counts

mypy has no equivalent of setuptools' package-dir table (`ptxls.server` is the folder
`server/`): given the folders it would name the modules `server.app` and find no `ptxls`, and
the editable install's import hook is invisible to it. So this script builds a link tree,
build/typecheck/ptxls/<room> -> <room>/, from that table and runs `mypy -p ptxls` on it: each
module is seen once, under its real name, with the options of [tool.mypy] in pyproject.toml.
Error paths are written back as repository paths (server/app.py, not the link).

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
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINKS = ROOT / "build" / "typecheck"
BASELINE = ROOT / "scripts" / "typecheck_baseline.json"
# Rooms held to mypy's strict flags (the override in pyproject.toml): no baseline, no error.
STRICT_ROOMS = ("frontend", "toolchain")
ERROR = re.compile(r"^(?P<path>[^:\s]+\.py):(?P<line>\d+): error: ")


def package_dirs() -> dict[str, str]:
    """`ptxls.<room>` → folder, for each room pyproject's packages list (src/ptxls/<room> links
    to the folder of the same name)."""
    table = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    packages = table["tool"]["setuptools"]["packages"]
    return {pkg.split(".")[1]: pkg.split(".")[1] for pkg in packages if pkg.count(".") == 1}


def build_links() -> Path:
    """build/typecheck/ptxls/<room> → ../../../<room>, rebuilt each run (rooms come and go)."""
    pkg = LINKS / "ptxls"
    pkg.mkdir(parents=True, exist_ok=True)
    for old in pkg.iterdir():
        if old.is_symlink():
            old.unlink()
    for room, folder in package_dirs().items():
        os.symlink(os.path.relpath(ROOT / folder, pkg), pkg / room)
    return LINKS


def run_mypy() -> tuple[list[str], int]:
    links = build_links()
    env = {**os.environ, "MYPYPATH": str(links)}
    cmd = [sys.executable, "-m", "mypy", "--cache-dir", str(ROOT / "build" / "mypy-cache")]
    proc = subprocess.run(
        [*cmd, "-p", "ptxls"], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    prefix = os.path.relpath(links / "ptxls", ROOT) + os.sep
    dirs = package_dirs()
    lines = []
    for line in (proc.stdout + proc.stderr).splitlines():
        if line.startswith(prefix):  # build/typecheck/ptxls/<room>/x.py → <folder>/x.py
            room, _, rest = line[len(prefix) :].partition(os.sep)
            line = f"{dirs.get(room, room)}/{rest}"
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
