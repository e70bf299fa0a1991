"""A git revision's ptxls, importable beside the working tree's: the ``--before REV`` of the
start-up benchmarks (``cli_startup.py``, ``lowering_startup.py``)."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from machine import ROOT


@contextmanager
def importable_at(rev: str) -> Iterator[str]:
    """A PYTHONPATH entry under which ``import ptxls`` (and so the ``ptxls`` console script's
    ``ptxls.cli.main``) is REV's code: a detached git worktree of REV, removed afterwards.

    From the src/ layout on (src/ptxls/ links to the rooms, with an ``__init__.py``) that is
    the worktree's src/. Before it, the rooms were mapped by package-dir: the same layout is
    made beside the worktree (``ptxls/__init__.py`` and a link per room). Either way ``ptxls``
    is a regular package on PYTHONPATH, which wins over the installed one (a namespace
    package, a bare link to the worktree's top, would lose to it)."""
    with tempfile.TemporaryDirectory(prefix="ptxls-rev-") as tmp:
        tree = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), rev],
                       check=True, capture_output=True)  # fmt: skip
        try:
            if (tree / "src" / "ptxls" / "__init__.py").is_file():
                yield str(tree / "src")
            else:
                pkg = Path(tmp) / "pkg"
                (pkg / "ptxls").mkdir(parents=True)
                (pkg / "ptxls" / "__init__.py").write_text("")
                for room in tree.iterdir():
                    if (room / "__init__.py").is_file():
                        (pkg / "ptxls" / room.name).symlink_to(room, target_is_directory=True)
                yield str(pkg)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                           capture_output=True)  # fmt: skip
