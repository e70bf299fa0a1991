"""A kernel's spec from a ``spec.json`` file: the one beside the PTX (the library's layout,
``fewshot/kernels/NAME/spec.json``) or one named with ``--spec FILE``. The PTX's own
``@gputest`` lines still apply on top (they win), and the result is checked against the
``.entry``'s real parameters like every other spec. The CUDA file the spec names in
``reference`` is read here: its nvcc -O3 build is the baseline the kernel is timed against.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Literal, overload

from ptxls.frontend.ptx import find_entries

from . import annotations as gputest_annotations
from .pairing import SpecResolution, abi_problems
from .spec import SpecProblem, spec_from_json, validate

SPEC_FILE = "spec.json"


def spec_json_beside(ptx_path: str | None) -> Path | None:
    if not ptx_path:
        return None
    candidate = Path(ptx_path).parent / SPEC_FILE
    return candidate if candidate.is_file() else None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return None


@overload
def library_resolution(
    ptx_text: str, kernel: str, spec_path: Path, *, explicit: Literal[True]
) -> SpecResolution: ...
@overload
def library_resolution(
    ptx_text: str, kernel: str, spec_path: Path, *, explicit: bool
) -> SpecResolution | None: ...
def library_resolution(
    ptx_text: str, kernel: str, spec_path: Path, *, explicit: bool
) -> SpecResolution | None:
    """The spec in ``spec_path`` for ``kernel``. ``explicit`` (``--spec``): used whatever
    kernel it names, with a problem when it names another; a spec.json found beside the PTX
    applies only to the kernel it names (None otherwise, and the usual pairing runs)."""
    text = _read(spec_path)
    where = str(spec_path)
    if text is None:
        return SpecResolution(None, [SpecProblem(f"cannot read the spec file {where}")])
    spec, problems = spec_from_json(text, where)
    if spec is None:
        return SpecResolution(None, problems) if explicit or kernel in text else None
    if spec.kernel != kernel:
        if not explicit:
            return None
        problems.append(
            SpecProblem(f"{where} is the spec of kernel '{spec.kernel}', not '{kernel}'")
        )
        return SpecResolution(None, problems)
    entry = next((e for e in find_entries(ptx_text) if e.name == kernel), None)
    if entry is None:
        return SpecResolution(None, [SpecProblem(f"no .entry '{kernel}' in the PTX")])
    spec.origin = [*spec.origin, where] if where not in spec.origin else spec.origin
    spec, ann = gputest_annotations.apply(
        spec, ptx_text.splitlines(), entry.decl_line, kernel, where="@gputest in the PTX"
    )
    problems += ann
    if spec is None:  # apply returns None only for a spec it was not given
        return SpecResolution(None, problems)
    problems += [dataclasses.replace(p, line=entry.line) for p in validate(spec)]
    if not problems:
        problems += abi_problems(spec, entry)
    ref_text = ref_path = None
    if spec.reference:
        ref = (spec_path.parent / spec.reference).resolve()
        ref_text = _read(ref) if ref.is_file() else None
        if ref_text is None:
            problems.append(SpecProblem(f"{where}: reference file '{spec.reference}' not found"))
        ref_path = str(ref)
    return SpecResolution(spec, problems, ref_text, ref_path)
