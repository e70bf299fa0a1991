"""The import rules of docs/architecture.md, checked on every module with ``ast`` (nothing is
imported, so a module that fails to import is still checked).

- a room imports only the rooms the doc's "may import" table allows it (module-level and
  function-level imports alike: a deferred import is a dependency all the same);
- only server/ imports pygls or lsprotocol;
- frontend/ imports the standard library only;
- no import cycle between modules, counting imports at module level outside
  ``if TYPE_CHECKING:`` (a function-level import does not run at import time, so it cannot
  close a cycle there; it is how heavy dependencies are kept out of the server's start).

The allowed arrows are read from the table under "What may import what" in
docs/architecture.md, so the doc and the check cannot drift apart.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
LSP_PACKAGES = ("pygls", "lsprotocol")

# Arrows that break the table today and are being removed: (importing module, imported room).
# Each entry says why it is still here; the test fails when one is no longer needed, so the
# list only shrinks.
KNOWN_VIOLATIONS: dict[tuple[str, str], str] = {}


def rooms() -> dict[str, Path]:
    """room → folder, from pyproject's packages (``ptxls.<room>`` only): each is a link
    src/ptxls/<room> to the room's folder (see tests/test_packaging.py)."""
    table = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    packages = table["tool"]["setuptools"]["packages"]
    src = ROOT / table["tool"]["setuptools"]["package-dir"][""]
    return {
        p.split(".")[1]: src.joinpath(*p.split(".")).resolve()
        for p in packages
        if p.count(".") == 1
    }


def allowed_arrows() -> dict[str, set[str]]:
    """The "| room | may import |" table of docs/architecture.md."""
    text = DOC.read_text(encoding="utf-8")
    header = re.search(r"^\| room \| may import \|\n\|[-| ]+\|\n", text, re.M)
    assert header, "docs/architecture.md has no '| room | may import |' table"
    table: dict[str, set[str]] = {}
    for line in text[header.end() :].splitlines():
        if not line.startswith("|"):
            break
        room_cell, allowed_cell = (c.strip() for c in line.strip("|").split("|"))
        table[room_cell.strip("`")] = set(re.findall(r"`(\w+)`", allowed_cell))
    return table


@dataclass(frozen=True)
class Import:
    module: str  # the importing module, ptxls.<room>.<...>
    target: str  # the imported module (a ``from X import name`` names X.name when that is one)
    line: int
    module_level: bool  # runs when the importing module is imported

    @property
    def room(self) -> str:
        return self.module.split(".")[1]

    def where(self) -> str:
        return f"{self.module}:{self.line}"


def module_files() -> dict[str, Path]:
    """Dotted module name → file, for every module of every room."""
    out = {}
    for room, folder in rooms().items():
        for path in folder.rglob("*.py"):
            rel = path.relative_to(folder).with_suffix("").parts
            if rel[-1] == "__init__":
                rel = rel[:-1]
            out[".".join(("ptxls", room, *rel))] = path
    return out


MODULES = module_files()


def _imports_of(module: str, source: str, *, is_package: bool = False) -> list[Import]:
    tree = ast.parse(source, filename=module)
    package = module if is_package else module.rsplit(".", 1)[0]
    found: list[Import] = []

    def visit(node: ast.AST, module_level: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if (
                isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
                or isinstance(child, ast.If)
                and _is_type_checking(child.test)
            ):
                visit(child, False)
            elif isinstance(child, ast.Import):
                for alias in child.names:
                    found.append(Import(module, alias.name, child.lineno, module_level))
            elif isinstance(child, ast.ImportFrom):
                base = _absolute(child, package)
                for alias in child.names:
                    sub = f"{base}.{alias.name}"
                    target = sub if sub in MODULES else base
                    found.append(Import(module, target, child.lineno, module_level))
            else:
                visit(child, module_level)

    visit(tree, True)
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _absolute(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    base = parts[: len(parts) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


IMPORTS = [
    imp
    for module, path in MODULES.items()
    for imp in _imports_of(
        module, path.read_text(encoding="utf-8"), is_package=path.name == "__init__.py"
    )
]


def _room_of(target: str) -> str | None:
    parts = target.split(".")
    return parts[1] if parts[0] == "ptxls" and len(parts) > 1 else None


def room_violations() -> dict[tuple[str, str], list[str]]:
    allowed = allowed_arrows()
    out: dict[tuple[str, str], list[str]] = {}
    for imp in IMPORTS:
        target_room = _room_of(imp.target)
        if target_room is None or target_room == imp.room:
            continue
        if target_room not in allowed.get(imp.room, set()):
            out.setdefault((imp.module, target_room), []).append(imp.where())
    return out


def test_the_doc_table_names_every_room_and_only_rooms():
    table = allowed_arrows()
    assert set(table) == set(rooms())
    for room, targets in table.items():
        assert targets <= set(rooms()) - {room}, room


def test_rooms_import_only_what_docs_architecture_allows():
    found = room_violations()
    new = {k: v for k, v in found.items() if k not in KNOWN_VIOLATIONS}
    assert new == {}, "imports the table in docs/architecture.md does not allow"


def test_the_known_violations_list_only_shrinks():
    gone = set(KNOWN_VIOLATIONS) - set(room_violations())
    assert gone == set(), f"fixed, remove from KNOWN_VIOLATIONS: {sorted(gone)}"


def test_only_the_server_speaks_lsp():
    bad = [
        f"{imp.where()} imports {imp.target}"
        for imp in IMPORTS
        if imp.target.split(".")[0] in LSP_PACKAGES and imp.room != "server"
    ]
    assert bad == []


def test_frontend_imports_the_standard_library_only():
    bad = [
        f"{imp.where()} imports {imp.target}"
        for imp in IMPORTS
        if imp.room == "frontend"
        and _room_of(imp.target) != "frontend"
        and imp.target.split(".")[0] not in sys.stdlib_module_names
        and imp.target.split(".")[0] != "__future__"
    ]
    assert bad == []


def module_cycles() -> list[list[str]]:
    """Strongly connected groups (more than one module) of the module-level import graph."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for imp in IMPORTS:
        if imp.module_level and imp.target in MODULES and imp.target != imp.module:
            graph[imp.module].add(imp.target)
    return [sorted(group) for group in _strongly_connected(graph) if len(group) > 1]


def _strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm, iteratively (a deep import chain must not hit the recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                groups.append(group)
    return groups


def test_no_import_cycles_between_modules():
    assert module_cycles() == []


# ---- the checker itself: each rule fails on a planted violation


@pytest.mark.parametrize(
    "module, source, target, module_level",
    [
        ("ptxls.diagnostics.x", "from ptxls.lowering import loop\n", "ptxls.lowering.loop", True),
        ("ptxls.diagnostics.x", "from ..lowering.loop import run\n", "ptxls.lowering.loop", True),
        ("ptxls.gputest.x", "def f():\n    import ptxls.server.app\n", "ptxls.server.app", False),
        (
            "ptxls.toolchain.x",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ptxls.gputest import api\n",
            "ptxls.gputest.api",
            False,
        ),
    ],
    ids=["absolute", "relative", "in-a-function", "type-checking"],
)
def test_the_reader_finds_every_form_of_import(module, source, target, module_level):
    found = [i for i in _imports_of(module, source) if i.target.startswith("ptxls")]
    assert [(i.target, i.module_level) for i in found] == [(target, module_level)]
    assert _room_of(found[0].target) not in allowed_arrows()[found[0].room]


def test_the_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert [sorted(g) for g in _strongly_connected(graph) if len(g) > 1] == [["a", "b", "c"]]


# ---- the generated parts of the doc: room sizes and the module index ------------------------
# `python bench/room_map.py --doc` writes both; a module added, removed or renamed, or a room
# grown or shrunk by more than a tenth, makes them stale.

sys.path.insert(0, str(ROOT / "bench"))
import room_map  # noqa: E402  (bench/room_map.py)

REGENERATE = "run `.venv/bin/python bench/room_map.py --doc` and commit docs/architecture.md"


def test_every_module_is_named_in_the_doc():
    doc = DOC.read_text(encoding="utf-8")
    missing = [
        str(path.relative_to(folder.parent))
        for folder in room_map.rooms().values()
        for path in room_map.module_files(folder)
        if f"`{path.relative_to(folder.parent)}`" not in doc
    ]
    assert not missing, f"modules the doc does not name: {missing}; {REGENERATE}"


def test_the_room_sizes_table_is_current():
    doc = DOC.read_text(encoding="utf-8")
    written = {
        m["room"]: (int(m["files"]), int(m["lines"]))
        for m in re.finditer(
            r"^\| `(?P<room>\w+)` \| (?P<files>\d+) \| (?P<lines>\d+) \|$", doc, re.M
        )
    }
    sizes, _ = room_map.sizes_and_arrows()
    stale = [
        f"{room}: {s['files']} files, {s['lines']} lines (doc: {written.get(room)})"
        for room, s in sizes.items()
        if room not in written
        or written[room][0] != s["files"]
        or abs(written[room][1] - s["lines"]) > s["lines"] / 10
    ]
    assert not stale, f"room sizes changed: {stale}; {REGENERATE}"


# ---- a long module says why, at its top -----------------------------------------------------
# No module over LONG_MODULE lines without a reason written at its top: a paragraph of its
# docstring that starts "Why this file is long:" and says it. Otherwise, split it along a seam.

LONG_MODULE = 600
REASON = "Why this file is long:"


def long_without_a_reason(text: str) -> bool:
    """A module text over LONG_MODULE lines whose docstring has no reason paragraph (one that
    starts with REASON and goes on for at least a sentence)."""
    if len(text.splitlines()) <= LONG_MODULE:
        return False
    doc = ast.get_docstring(ast.parse(text)) or ""
    reasons = [p.strip() for p in doc.split("\n\n") if p.strip().startswith(REASON)]
    return not any(len(p[len(REASON) :].split()) >= 8 for p in reasons)


def test_every_long_module_says_why_at_its_top():
    silent = [
        f"{path.relative_to(ROOT)}: {len(path.read_text(encoding='utf-8').splitlines())} lines"
        for path in MODULES.values()
        if long_without_a_reason(path.read_text(encoding="utf-8"))
    ]
    assert silent == [], (
        f"modules over {LONG_MODULE} lines: split each along a seam, or write a paragraph "
        f"starting {REASON!r} in its docstring"
    )


def test_the_reason_check_finds_a_long_module_without_one():
    body = "x = 1\n" * (LONG_MODULE + 1)
    said = f'"""A module.\n\n{REASON} one class whose methods share one state and its rules."""\n'
    assert long_without_a_reason('"""A module."""\n' + body)
    assert long_without_a_reason(f'"""A module.\n\n{REASON} big."""\n' + body)  # no reason given
    assert not long_without_a_reason(said + body)
    assert not long_without_a_reason('"""A module."""\n' + "x = 1\n" * (LONG_MODULE - 1))
