"""The task suite: ``evaluation/tasks/<task>/`` folders, read into ``Task`` records.

A task folder holds ``task.json`` (kernel name, family, description, the source file, the sizes
the CPU emulator runs, the few-shot library kernels that compute the same thing), the source
the model is given (``reference.cu``, a Triton ``kernel.py``, or a plain-language
``request.md``), and — except for Triton sources, whose test comes from the Triton kernel
itself — a ``spec.json`` in the kernel library's format (gputest/README.md) whose numpy ``ref:``
checks every result and whose ``reference.cu`` is nvcc's baseline, timed beside the candidate.
The format is documented in evaluation/README.md.
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass, field
from pathlib import Path

TASKS_DIR = Path(__file__).parent / "tasks"
SOURCE_KINDS = {"reference.cu": "cuda", "kernel.py": "triton", "request.md": "request"}


@dataclass(frozen=True)
class Task:
    name: str  # the folder's name
    kernel: str  # the kernel's name: the CUDA __global__, the Triton def, the PTX .entry
    family: str
    description: str
    folder: Path
    source_file: str  # reference.cu | kernel.py | request.md
    emulator_sizes: tuple[int, ...] = ()
    library_twins: tuple[str, ...] = ()  # few-shot kernels that compute the same thing
    problems: tuple[str, ...] = field(default=(), compare=False)  # why the task cannot run

    @property
    def source_kind(self) -> str:
        return SOURCE_KINDS.get(self.source_file, "unknown")

    @property
    def source_path(self) -> Path:
        return self.folder / self.source_file

    @property
    def spec_path(self) -> Path | None:
        p = self.folder / "spec.json"
        return p if p.is_file() else None

    @property
    def reference_cu(self) -> Path | None:
        p = self.folder / "reference.cu"
        return p if p.is_file() else None

    def source_text(self) -> str:
        return self.source_path.read_text(encoding="utf-8")

    def dtypes(self) -> list[str]:
        """Element types of the pointer parameters (from spec.json; Triton: from the name)."""
        spec = self.spec_path
        if spec is None:
            return [t for t in ("f16", "bf16", "f64", "f32") if t in self.kernel] or ["f32"]
        try:
            params = json.loads(spec.read_text(encoding="utf-8")).get("params", [])
        except (OSError, ValueError):
            return []
        roles = ("in", "out", "inout")
        return sorted({p.get("dtype", "?") for p in params if p.get("role") in roles})

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "kernel": self.kernel,
            "family": self.family,
            "source": self.source_kind,
            "description": self.description,
            "dtypes": self.dtypes(),
            "emulator_sizes": list(self.emulator_sizes),
            "library_twins": list(self.library_twins),
            "folder": str(self.folder),
            "problems": list(self.problems),
        }


def read_task(folder: Path) -> Task:
    """One task folder; a broken one comes back with its problems listed, never raises."""
    problems: list[str] = []
    meta: dict = {}
    try:
        meta = json.loads((folder / "task.json").read_text(encoding="utf-8"))
        if not isinstance(meta, dict):
            problems.append("task.json is not a JSON object")
            meta = {}
    except (OSError, ValueError) as e:
        problems.append(f"task.json: {e}")
    source = str(meta.get("source", ""))
    if source not in SOURCE_KINDS:
        problems.append(f"source must be one of {', '.join(SOURCE_KINDS)} (got {source!r})")
    elif not (folder / source).is_file():
        problems.append(f"{source} is missing")
    if source != "kernel.py" and not (folder / "spec.json").is_file():
        problems.append("spec.json is missing")
    sizes = meta.get("emulator_sizes", [])
    if not (isinstance(sizes, list) and all(isinstance(s, int) and s >= 0 for s in sizes)):
        problems.append("emulator_sizes must be a list of sizes")
        sizes = []
    return Task(
        name=folder.name,
        kernel=str(meta.get("kernel", folder.name)),
        family=str(meta.get("family", "other")),
        description=str(meta.get("description", "")),
        folder=folder,
        source_file=source,
        emulator_sizes=tuple(sizes),
        library_twins=tuple(str(t) for t in meta.get("library_twins", [])),
        problems=tuple(problems),
    )


def load_suite(root: Path | None = None) -> list[Task]:
    """Every task under ``root`` (default: the suite shipped with ptxls), sorted by family
    then name."""
    root = Path(root) if root is not None else TASKS_DIR
    if not root.is_dir():
        return []
    tasks = [read_task(d) for d in root.iterdir() if d.is_dir() and (d / "task.json").exists()]
    return sorted(tasks, key=lambda t: (t.family, t.name))


def select(tasks: list[Task], patterns: list[str] | None = None,
           families: list[str] | None = None) -> list[Task]:  # fmt: skip
    """The tasks whose name matches one of ``patterns`` (shell globs, comma lists allowed) and
    whose family is one of ``families``; None or empty selects all."""
    pats = [p.strip() for x in patterns or [] for p in x.split(",") if p.strip()]
    fams = {f.strip() for x in families or [] for f in x.split(",") if f.strip()}
    return [
        t
        for t in tasks
        if (not pats or any(fnmatch.fnmatchcase(t.name, p) for p in pats))
        and (not fams or t.family in fams)
    ]


def excluded_examples(tasks: list[Task]) -> set[str]:
    """Few-shot library kernels that must not be shown while these tasks are evaluated: each
    task's kernel name and the library kernels it names as computing the same thing."""
    return {t.kernel for t in tasks} | {twin for t in tasks for twin in t.library_twins}
