"""Walk the lowering path: the static call graph from ``lowering.service.lower_llm``, and how
often it changes room (top-level package) on the way.

    .venv/bin/python bench/lowering_walk.py [--root CHECKOUT] [--start MODULE:FUNCTION] [--save PART]

Reads the source with ``ast`` (nothing is imported), so it runs on any checkout: ``--root`` a
``git worktree`` of an older commit gives the "before". ``--save PART`` writes
bench/results/rooms/<machine>-<date>-PART.json.

The graph: a function calls what its body names and ptxls defines — a function or class of its
own module, one it imports (at any depth: a deferred import counts, re-exports are followed),
``module.name`` through an imported module, ``self.m``/``cls.m`` in its class, ``Class.m``; a
class named is its ``__init__``/``__post_init__``. A name passed on (a verifier, a callback)
counts as a call: the walk reaches it as the code does. A method called on an object
(``client.chat(...)``) is resolved only where the object's class is written down: there is no type information
here beyond what is written down — a parameter's annotation, a local assigned a constructor
call (``run = CandidateRun(...)``) — so the walk is a lower bound of what runs.

The walk is a depth-first visit of that graph from the start, each function once, callees in
the order they appear in the source. Its figures:

- ``files``, ``rooms``: distinct ones the walk visits;
- ``file_visits``: how many times the walk enters each file (consecutive functions of one file
  are one visit), the most visited first;
- ``room_trail``: the rooms in visiting order, consecutive repeats merged;
  ``returns_to_a_room_left`` is its length minus the rooms, the number of times the walk
  comes back to a room it had left (either down a call or back up from one);
- ``hops``: calls of the walk (each function reached once, by its first caller) from one room
  into another, by pair of rooms;
- ``reentries_on_the_way_down``: calls from one room into a room that is already on the
  caller's path (``lowering → gputest → lowering``): what "visits each room once on the way
  down" counts, 0 when every path from the start crosses each room once.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_START = "ptxls.lowering.service:lower_llm"


@dataclass
class Module:
    name: str  # ptxls.<room>.<...>
    path: Path
    rel: str  # <room>/<...>.py
    tree: ast.Module
    functions: dict[str, ast.AST] = field(default_factory=dict)  # qualname → def
    classes: dict[str, dict[str, ast.AST]] = field(default_factory=dict)  # class → methods
    aliases: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # local → (mod, attr)

    @property
    def room(self) -> str:
        return self.name.split(".")[1]


def load(root: Path) -> dict[str, Module]:
    table = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    src = root / table["tool"]["setuptools"].get("package-dir", {}).get("", "src")
    modules: dict[str, Module] = {}
    for package in table["tool"]["setuptools"]["packages"]:
        parts = package.split(".")
        if len(parts) != 2:
            continue
        folder = src.joinpath(*parts)
        if not folder.is_dir():  # an older layout: the room's folder at the top
            folder = root / parts[1]
        for path in sorted(folder.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            rel_parts = path.relative_to(folder).with_suffix("").parts
            if rel_parts[-1] == "__init__":
                rel_parts = rel_parts[:-1]
            name = ".".join(("ptxls", parts[1], *rel_parts))
            rel = "/".join((parts[1], *path.relative_to(folder).parts))
            tree = ast.parse(path.read_text(encoding="utf-8"))
            modules[name] = Module(name, path, rel, tree)
    for mod in modules.values():
        _index(mod, modules)
    return modules


def _index(mod: Module, modules: dict[str, Module]) -> None:
    is_package = mod.path.name == "__init__.py"
    package = mod.name if is_package else mod.name.rsplit(".", 1)[0]
    for node in mod.tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            mod.functions[node.name] = node
        elif isinstance(node, ast.ClassDef):
            mod.classes[node.name] = {
                n.name: n
                for n in node.body
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            }
    for node in ast.walk(mod.tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("ptxls.") and a.asname:
                    mod.aliases[a.asname] = (a.name, None)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if not base.startswith("ptxls"):
                continue
            for a in node.names:
                local = a.asname or a.name
                sub = f"{base}.{a.name}"
                mod.aliases[local] = (sub, None) if sub in modules else (base, a.name)


Fn = tuple[str, str]  # (module, qualname): "f", "Class.method" or "Class"


def resolve(modules: dict[str, Module], module: str, name: str, depth: int = 0) -> Fn | None:
    """The function or class ``name`` means in ``module`` (following re-exports)."""
    mod = modules.get(module)
    if mod is None or depth > 8:
        return None
    if name in mod.functions:
        return (module, name)
    if name in mod.classes:
        return (module, name)
    alias = mod.aliases.get(name)
    if alias and alias[1] is not None:
        return resolve(modules, alias[0], alias[1], depth + 1)
    return None


def _module_alias(modules: dict[str, Module], mod: Module, name: str) -> str | None:
    alias = mod.aliases.get(name)
    if alias and alias[1] is None and alias[0] in modules:
        return alias[0]
    return None


def _node_of(modules: dict[str, Module], fn: Fn) -> ast.AST | None:
    mod = modules[fn[0]]
    if "." in fn[1]:
        cls, meth = fn[1].split(".", 1)
        return mod.classes.get(cls, {}).get(meth)
    return mod.functions.get(fn[1])


def _class_of(modules: dict[str, Module], module: str, expr: ast.AST | None) -> Fn | None:
    """The ptxls class an annotation or a constructor call names (``X``, ``X | None``, ``X()``)."""
    if isinstance(expr, ast.Call):
        expr = expr.func
    if isinstance(expr, ast.BinOp):  # X | None
        return _class_of(modules, module, expr.left) or _class_of(modules, module, expr.right)
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):  # "X" (a forward ref)
        try:
            expr = ast.parse(expr.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(expr, ast.Name):
        found = resolve(modules, module, expr.id)
        if found is not None and found[1] in modules[found[0]].classes:
            return found
    return None


def _typed_names(modules: dict[str, Module], module: str, node: ast.AST) -> dict[str, Fn]:
    """Names in a function whose class is written down: an annotated parameter, or a local
    assigned a constructor call (``run = CandidateRun(ctx, i)``), so ``run.m()`` resolves."""
    typed: dict[str, Fn] = {}
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        a = node.args
        for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs]:
            found = _class_of(modules, module, arg.annotation)
            if found is not None:
                typed[arg.arg] = found
    for n in ast.walk(node):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            found = _class_of(modules, module, n.value) if isinstance(n.value, ast.Call) else None
            if found is not None:
                typed[n.targets[0].id] = found
        elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
            found = _class_of(modules, module, n.annotation)
            if found is not None:
                typed[n.target.id] = found
    return typed


def callees(modules: dict[str, Module], fn: Fn) -> list[Fn]:
    """What ``fn`` names, in source order, each once."""
    mod = modules[fn[0]]
    cls = fn[1].split(".", 1)[0] if "." in fn[1] else None
    if fn[1] in mod.classes:  # a class: its constructor hooks
        methods = mod.classes[fn[1]]
        return [(fn[0], f"{fn[1]}.{m}") for m in ("__init__", "__post_init__") if m in methods]
    node = _node_of(modules, fn)
    if node is None:
        return []
    found: list[Fn] = []

    def add(target: Fn | None) -> None:
        if target is not None and target != fn and target not in found:
            found.append(target)

    typed = _typed_names(modules, fn[0], node)
    nodes = sorted(
        (n for n in ast.walk(node) if isinstance(n, ast.Name | ast.Attribute)),
        key=lambda n: (n.lineno, n.col_offset),
    )
    for n in nodes:
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            add(resolve(modules, fn[0], n.id))
        elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Call):  # X(...).m
            made = _class_of(modules, fn[0], n.value)
            if made is not None and n.attr in modules[made[0]].classes[made[1]]:
                add((made[0], f"{made[1]}.{n.attr}"))
        elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name):
            base = n.value.id
            if base in ("self", "cls") and cls is not None:
                if n.attr in mod.classes.get(cls, {}):
                    add((fn[0], f"{cls}.{n.attr}"))
                continue
            if base in typed:
                owner_mod, owner_cls = typed[base]
                if n.attr in modules[owner_mod].classes[owner_cls]:
                    add((owner_mod, f"{owner_cls}.{n.attr}"))
                continue
            target_mod = _module_alias(modules, mod, base)
            if target_mod is not None:
                add(resolve(modules, target_mod, n.attr))
                continue
            owner = resolve(modules, fn[0], base)
            methods = modules[owner[0]].classes.get(owner[1], {}) if owner else {}
            if owner is not None and n.attr in methods:
                add((owner[0], f"{owner[1]}.{n.attr}"))
    return found


def walk(modules: dict[str, Module], start: Fn) -> dict:
    order: list[Fn] = []
    seen: set[Fn] = set()
    reentries: list[str] = []
    hops: Counter[tuple[str, str]] = Counter()

    def room(fn: Fn) -> str:
        return modules[fn[0]].room

    def visit(fn: Fn, path_rooms: list[str]) -> None:
        seen.add(fn)
        order.append(fn)
        here = room(fn)
        for callee in callees(modules, fn):
            if callee in seen:
                continue
            there = room(callee)
            if there != here:
                hops[(here, there)] += 1
            if there != here and there in path_rooms:
                reentries.append(
                    f"{modules[fn[0]].rel}:{fn[1]} → {modules[callee[0]].rel}:{callee[1]}"
                )
            visit(callee, path_rooms + ([there] if there != path_rooms[-1] else []))

    sys.setrecursionlimit(10_000)
    visit(start, [room(start)])
    files = [modules[f[0]].rel for f in order]
    file_trail = [f for i, f in enumerate(files) if i == 0 or files[i - 1] != f]
    rooms = [room(f) for f in order]
    room_trail = [r for i, r in enumerate(rooms) if i == 0 or rooms[i - 1] != r]
    return {
        "start": f"{start[0]}:{start[1]}",
        "functions": len(order),
        "files": len(set(files)),
        "rooms": len(set(rooms)),
        "room_names": sorted(set(rooms)),
        "file_visits_total": len(file_trail),
        "file_visits": dict(Counter(file_trail).most_common()),
        "room_trail": room_trail,
        "returns_to_a_room_left": len(room_trail) - len(set(rooms)),
        "hops": sum(hops.values()),
        "hops_by_rooms": {f"{a} -> {b}": n for (a, b), n in sorted(hops.items())},
        "reentries_on_the_way_down": len(reentries),
        "reentries": reentries,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=str(HERE.parent), help="a checkout (default: this one)")
    ap.add_argument("--start", default=DEFAULT_START)
    ap.add_argument("--save", metavar="PART", help="write bench/results/rooms/…-PART.json")
    args = ap.parse_args()
    root = Path(args.root).resolve()
    modules = load(root)
    module, _, name = args.start.partition(":")
    start = resolve(modules, module, name)
    if start is None:
        raise SystemExit(f"{args.start}: no such function in {root}")
    result = walk(modules, start)
    import subprocess

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root,
                            capture_output=True, text=True).stdout.strip()  # fmt: skip
    result = {"checkout": str(root), "commit": commit, **result}
    text = json.dumps(result, indent=2, ensure_ascii=False)
    if args.save:
        sys.path.insert(0, str(HERE))
        from machine import result_path

        out = result_path("rooms", "json", part=args.save)
        out.write_text(text + "\n", encoding="utf-8")
        print(f"wrote {out.relative_to(HERE.parent)}", file=sys.stderr)
    summary = {k: result[k] for k in ("commit", "functions", "files", "rooms",
               "file_visits_total", "returns_to_a_room_left", "hops", "reentries_on_the_way_down")}  # fmt: skip
    print(json.dumps(summary))
    top = list(result["file_visits"].items())[:6]
    print("most visited files: " + ", ".join(f"{f} ×{n}" for f, n in top))
    print("room trail: " + " → ".join(result["room_trail"]))


if __name__ == "__main__":
    main()
