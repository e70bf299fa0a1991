"""Where a kernel's test spec comes from.

For CUDA: the signature, then the ``@gputest`` annotation above the kernel. For PTX: the paired
CUDA source (given explicitly, named in the provenance header ``// source: file.cu``, or the
``.cu`` beside the ``.ptx`` with the same base name), then the PTX file's own annotation, which
wins. Either way the result is checked against the PTX entry's real parameters, since a spec
that disagrees with the ABI would launch garbage.
"""

from __future__ import annotations

import dataclasses
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ptxls.frontend.c_types import ptx_type_bits
from ptxls.frontend.cuda import find_kernels
from ptxls.frontend.ptx import find_entries, provenance_source
from ptxls.toolchain.safe_read import UnreadableFile, read_regular_file

from . import annotations as gputest_annotations  # (`annotations`: the __future__ name)
from .cuda_source import infer_spec
from .dtypes import DTYPES
from .spec import SpecProblem, SpecResolution, TestSpec, validate


def infer_spec_from_cuda(
    source: str, kernel: str, *, path: str = "", check: bool = True
) -> tuple[TestSpec | None, list[SpecProblem]]:
    """The spec of ``kernel`` in CUDA ``source``: signature, then its annotation. With
    ``check``, also what makes the spec unusable (a scalar without a value, no output)."""
    kernels = find_kernels(source)
    match = next((k for k in kernels if k.name == kernel), None)
    if match is None:
        have = ", ".join(k.name for k in kernels) or "none"
        return None, [
            SpecProblem(f"no __global__ kernel '{kernel}' (kernels here: {have})", file=path)
        ]
    spec: TestSpec | None
    spec, problems = infer_spec(match)
    spec, side = _sidecar(spec, path, kernel)
    problems += side
    spec, ann = gputest_annotations.apply(spec, source.splitlines(), match.decl_line, kernel,
                                  where=f"@gputest in {Path(path).name or 'the CUDA source'}")  # fmt: skip
    problems = [dataclasses.replace(p, file=path) for p in problems + ann]
    if check and spec is not None:
        problems += [dataclasses.replace(p, file=path, line=match.line) for p in validate(spec)]
    return spec, problems


def sidecar_path(source_path: str | None) -> Path | None:
    """``kernels.ptx`` → ``kernels.ptx.gputest``, else ``kernels.gputest`` (a regular file in
    the source's project: ``companion``)."""
    if not source_path:
        return None
    p = Path(source_path)
    for candidate in (
        p.with_name(p.name + gputest_annotations.SIDECAR_SUFFIX),
        p.with_suffix(gputest_annotations.SIDECAR_SUFFIX),
    ):
        if companion(candidate, source_path) is not None:
            return candidate
    return None


def _sidecar(spec, source_path, kernel):
    side = sidecar_path(source_path)
    if side is None:
        return spec, []
    try:
        text = read_regular_file(side, MAX_COMPANION_BYTES)
    except UnreadableFile as e:
        return spec, [SpecProblem(str(e))]
    return gputest_annotations.apply_sidecar(spec, text, kernel, str(side))


# A paired .cu, a .gputest sidecar: source text, not data (the library's largest is 20 KB).
MAX_COMPANION_BYTES = 4 << 20


def companion(candidate: Path, source_path: str) -> Path | None:
    """``candidate`` (a file found by its name beside ``source_path``) resolved, when it may be
    read: inside the source's project, as a ``// source:`` path must be (symlinks followed: a
    ``k.cu`` that links to ``~/.ssh/id_rsa`` or ``/proc/self/pagemap`` is not), a regular file,
    at most ``MAX_COMPANION_BYTES``. Else None; ``refused_companions`` says why."""
    return None if _companion_problem(candidate, source_path) else candidate.resolve()


def _companion_problem(candidate: Path, source_path: str) -> str | None:
    if not os.path.lexists(candidate):
        return "missing"
    try:
        real = candidate.resolve()
        st = real.stat()
    except (OSError, RuntimeError) as e:  # a dangling or looping link
        return f"{candidate.name} cannot be read ({e})"
    root = _folders_up_to_project_root(Path(source_path).resolve().parent)[-1]
    if not real.is_relative_to(root):
        return f"{candidate.name} leads outside the project ({real}): not read"
    if not stat.S_ISREG(st.st_mode) or str(real).startswith(("/proc/", "/sys/", "/dev/")):
        return f"{candidate.name} is not a regular file ({real}): not read"
    if st.st_size > MAX_COMPANION_BYTES:
        return f"{candidate.name} has {st.st_size} bytes (a paired file: at most {MAX_COMPANION_BYTES})"
    return None


def refused_companions(ptx_path: str) -> list[str]:
    """What is wrong with the files found by name beside ``ptx_path`` (NAME.cu, the sidecars)
    that exist and may not be read; empty when there is nothing to say."""
    p = Path(ptx_path)
    names = [p.with_suffix(".cu"), p.with_name(p.name + gputest_annotations.SIDECAR_SUFFIX),
             p.with_suffix(gputest_annotations.SIDECAR_SUFFIX)]  # fmt: skip
    found = [_companion_problem(c, ptx_path) for c in names if c != p]
    return [why for why in found if why and why != "missing"]


# A folder holding one of these is a project's root: the provenance header's search stops there.
_PROJECT_MARKERS = (".git", ".hg", ".vscode", "pyproject.toml", ".ptxls")


def paired_cuda_path(ptx_text: str, ptx_path: str | None) -> Path | None:
    """The CUDA file a .ptx is tested against: the one its ``// source:`` header names, else
    ``NAME.cu`` beside it.

    The header is text of the file, and a file can come from anyone: the path it names is
    looked for relative to the .ptx's folder and the folders above it up to the project's
    root (the lowering writes workspace-relative paths), and whatever it resolves to (``..``
    steps, an absolute path, symlinks followed) must lie inside that project. Where no folder
    marks a project, the search stops below the home folder and the filesystem's root: from
    ~/Downloads/x.ptx, "work/secret.cu" is not looked for in ~."""
    if not ptx_path:
        return None
    here = Path(ptx_path).resolve().parent
    named = provenance_source(ptx_text)
    if named and not named.startswith("~"):
        folders = _folders_up_to_project_root(here)
        root = folders[-1]
        for folder in folders:
            candidate = (folder / named.replace("\\", "/")).resolve()
            if candidate.is_relative_to(root) and candidate.is_file():
                return candidate
    beside = Path(ptx_path).with_suffix(".cu")
    return companion(beside, ptx_path) if beside != Path(ptx_path) else None


def _folders_up_to_project_root(here: Path) -> list[Path]:
    """``here`` and the folders above it up to the first that marks a project's root; where
    none does, up to the folder below the home folder or the filesystem's root, never those."""
    home = Path.home().resolve()
    folders = []
    for folder in [here, *here.parents]:
        if folder == home or folder == folder.parent:
            break
        folders.append(folder)
        if any((folder / m).exists() for m in _PROJECT_MARKERS):
            break
    return folders or [here]


def spec_for_ptx(
    ptx_text: str,
    kernel: str,
    *,
    ptx_path: str | None = None,
    reference_cuda: str | None = None,
    reference_path: str | None = None,
) -> SpecResolution:
    entries = find_entries(ptx_text)
    entry = next((e for e in entries if e.name == kernel), None)
    if entry is None:
        have = ", ".join(e.name for e in entries) or "none"
        return SpecResolution(
            None, [SpecProblem(f"no .entry '{kernel}' in the PTX (entries: {have})")]
        )
    pair_lacks_it = ""
    if reference_cuda is None:
        pair = paired_cuda_path(ptx_text, ptx_path)
        refused = refused_companions(ptx_path) if ptx_path else []
        if refused and pair is None:
            return SpecResolution(None, [SpecProblem(why) for why in refused])
        if pair is not None:
            try:
                text = read_regular_file(pair, MAX_COMPANION_BYTES)
            except UnreadableFile as e:
                return SpecResolution(None, [SpecProblem(str(e))])
            if any(k.name == kernel for k in find_kernels(text)):
                reference_cuda, reference_path = text, str(pair)
            else:  # found by its name, not asked for: a .cu that is not this kernel's source
                pair_lacks_it = f" ({pair.name}, its pair by name, has no __global__ '{kernel}')"
    spec: TestSpec | None = None
    problems: list[SpecProblem] = []
    if reference_cuda is not None:
        spec, problems = infer_spec_from_cuda(
            reference_cuda, kernel, path=reference_path or "reference.cu", check=False
        )
        if spec is None:
            return SpecResolution(None, problems, reference_cuda, reference_path)
    spec, side = _sidecar(spec, ptx_path, kernel)
    problems += side
    lines = ptx_text.splitlines()
    spec, ann = gputest_annotations.apply(spec, lines, entry.decl_line, kernel,
                                  where="@gputest in the PTX")  # fmt: skip
    if spec is None:
        return SpecResolution(None, [SpecProblem(
            f"no test spec for '{kernel}'{pair_lacks_it}: pair it with a CUDA source (same base name, or "
            "'// source: file.cu' in the header, or --ref) or annotate it, e.g. "
            "'// @gputest a: in f32[n]; b: in f32[n]; c: out f32[n]; n: size; ref: c = a + b'",
            entry.line, entry.col, entry.col + len(kernel))])  # fmt: skip
    problems += ann
    problems += [dataclasses.replace(p, line=entry.line) for p in validate(spec)]
    if not problems:
        problems += abi_problems(spec, entry)
    # De-duplicate (validate may repeat what inference said).
    seen, unique = set(), []
    for p in problems:
        if p.message not in seen:
            seen.add(p.message)
            unique.append(p)
    return SpecResolution(spec, unique, reference_cuda, reference_path)


# bytes of a .param of each type; a type not here (a byte array "…[]", .pred) is not judged


@dataclass(frozen=True)
class ExpectedArg:
    """What a caller passes in one parameter slot: enough to judge the ``.param`` that takes it."""

    name: str
    is_pointer: bool
    size: int | None  # bytes; None when unknown (a struct, a template type): not judged
    described: str  # "f32 (4 bytes)", "const float*": how messages name it


@dataclass(frozen=True)
class AbiMismatch:
    index: int | None  # the parameter (0-based); None: the counts differ
    got: str  # the .param type (or the entry's parameter count)
    want: ExpectedArg | None = None


def abi_mismatches(
    param_types: Sequence[str], expected: Sequence[ExpectedArg]
) -> list[AbiMismatch]:
    """The one interface check, for the GPU test's spec and the lowering loop's candidates alike:
    the same parameter count, and each ``.param`` as wide as what is passed in it (a pointer is
    64-bit). Each caller words the mismatches for its reader."""
    if len(param_types) != len(expected):
        return [AbiMismatch(None, str(len(param_types)))]
    out = []
    for i, (t, want) in enumerate(zip(param_types, expected, strict=True)):
        bits = ptx_type_bits(t)
        size = bits // 8 if bits else None
        if size is not None and want.size is not None and size != want.size:
            out.append(AbiMismatch(i, t, want))
    return out


def _spec_arg(p) -> ExpectedArg:
    if p.is_pointer:
        return ExpectedArg(p.name, True, 8, "a pointer (64-bit)")
    size = DTYPES[p.dtype].itemsize if p.dtype in DTYPES else None
    return ExpectedArg(p.name, False, size, f"{p.dtype} ({size} bytes)")


def abi_problems(spec: TestSpec, entry) -> list[SpecProblem]:
    """The spec's parameters against the .entry's: same count, pointers 64-bit, scalar sizes."""
    at = dict(line=entry.line, col=entry.col, end_col=entry.col + len(entry.name))
    expected = [_spec_arg(p) for p in spec.params]
    problems = []
    for m in abi_mismatches(entry.param_types, expected):
        if m.index is None or m.want is None:  # the counts differ (no slot to name)
            return [SpecProblem(
                f"the spec has {len(spec.params)} parameters ({', '.join(p.name for p in spec.params)}) "
                f"but .entry {entry.name} takes {len(entry.param_types)}", **at)]  # fmt: skip
        problems.append(SpecProblem(
            f"parameter {m.index} ('{m.want.name}') is {m.want.described} in the spec but {m.got} "
            f"in .entry {entry.name}", **at))  # fmt: skip
    return problems
