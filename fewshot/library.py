"""The few-shot library on disk: one folder per verified kernel under ``kernels/``.

Each folder holds ``description.md`` (what it computes, launch shape, a ``Family:`` and a
``Keywords:`` line used for retrieval), ``reference.cu`` (the CUDA it mirrors), ``kernel.ptx``
(hand-written PTX, ``.version 8.0`` / ``.target sm_90``) and ``spec.json`` (a
``ptxls.gputest.spec.TestSpec`` as JSON). Reading never raises on a half-written folder: such a
folder is skipped, so a library under construction does not break lowering.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

KERNELS_DIR = Path(__file__).resolve().parent / "kernels"
_REQUIRED = ("description.md", "reference.cu", "kernel.ptx", "spec.json")


@dataclass(frozen=True)
class Example:
    name: str
    family: str  # "elementwise", "reduction", "matmul"
    keywords: tuple[str, ...]
    description: str
    reference_cu: str
    ptx: str
    spec: dict = field(hash=False, compare=False)
    folder: Path = field(hash=False, compare=False)


def _keywords(description: str) -> tuple[str, ...]:
    # "Keywords:" may wrap onto following lines until a blank line
    m = re.search(r"Keywords:\s*(.+?)(?:\n\s*\n|\Z)", description, re.DOTALL)
    if not m:
        return ()
    words = [w.strip().lower().rstrip(".") for w in m.group(1).replace("\n", " ").split(",")]
    return tuple(w for w in words if w)


def load_example(folder: Path) -> Example | None:
    if not all((folder / f).is_file() for f in _REQUIRED):
        return None
    try:
        description = (folder / "description.md").read_text()
        spec = json.loads((folder / "spec.json").read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    family = re.search(r"Family:\s*([\w-]+)", description)
    return Example(
        name=folder.name,
        family=family.group(1).lower() if family else "",
        keywords=_keywords(description),
        description=description,
        reference_cu=(folder / "reference.cu").read_text(),
        ptx=(folder / "kernel.ptx").read_text(),
        spec=spec,
        folder=folder,
    )


def load_examples(root: Path | None = None) -> list[Example]:
    """Every complete example under ``root`` (the packaged library by default), sorted by name."""
    root = root or KERNELS_DIR
    if not root.is_dir():
        return []
    found = (load_example(d) for d in sorted(root.iterdir()) if d.is_dir())
    return [e for e in found if e is not None]
