"""Print the size of each room (top-level package) and the import arrows between rooms.

Used for the before/after figures of a restructuring: `python bench/room_map.py [--json]`.
It reads the source with `ast` (nothing is imported), so it works on any checkout.
"""

from __future__ import annotations

import ast
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def rooms() -> dict[str, Path]:
    """Map each `ptxls.<room>` pyproject lists to its folder (src/ptxls/<room> links to it)."""
    import tomllib

    table = tomllib.loads((ROOT / "pyproject.toml").read_text())
    out = {}
    for package in table["tool"]["setuptools"]["packages"]:
        parts = package.split(".")
        if len(parts) == 2:
            out[parts[1]] = (ROOT / "src" / "ptxls" / parts[1]).resolve()
    return out


def imported_rooms(path: Path, known: set[str]) -> Counter:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: Counter = Counter()
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "ptxls" and len(parts) > 1 and parts[1] in known:
                found[parts[1]] += 1
    return found


def main() -> None:
    table = rooms()
    known = set(table)
    sizes = {}
    arrows: Counter = Counter()
    for room, folder in sorted(table.items()):
        files = [p for p in folder.rglob("*.py") if "node_modules" not in p.parts]
        lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in files)
        sizes[room] = {"files": len(files), "lines": lines}
        for path in files:
            for target, n in imported_rooms(path, known).items():
                if target != room:
                    arrows[(room, target)] += n
    if "--json" in sys.argv:
        out = {"rooms": sizes, "arrows": {f"{a} -> {b}": n for (a, b), n in sorted(arrows.items())}}
        print(json.dumps(out, indent=2))
        return
    print(f"{'room':<12} {'files':>5} {'lines':>6}")
    for room, s in sizes.items():
        print(f"{room:<12} {s['files']:>5} {s['lines']:>6}")
    print()
    for (a, b), n in sorted(arrows.items()):
        print(f"{a} -> {b}  ({n} imports)")


if __name__ == "__main__":
    main()
