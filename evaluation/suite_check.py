"""Checks of a task that need no GPU: its spec parses and passes the harness's own checks, its
numpy reference runs and fills every output at the emulator's sizes, and nvcc's PTX of its
reference.cu assembles and matches the spec's parameters (the ABI check every GPU test makes).

Whether nvcc's PTX also computes what the spec says is the nvcc baseline row of an eval run
(``ptxls eval --baseline-only``): on the GPU, or on the CPU emulator.
"""

from __future__ import annotations

import asyncio

import numpy as np

from .suite import Task


def spec_problems(task: Task) -> list[str]:
    """Everything wrong with ``task``'s spec.json, in words (empty: fine)."""
    from ptxls.gputest.spec import spec_from_json
    from ptxls.gputest.spec_check import check_spec

    path = task.spec_path
    if path is None:
        return [] if task.source_kind == "triton" else ["no spec.json"]
    spec, problems = spec_from_json(path.read_text(encoding="utf-8"), str(path))
    if spec is None or problems:
        return [str(p) for p in problems]
    out = [str(p) for p in check_spec(spec)]
    if spec.kernel != task.kernel:
        out.append(f"spec.json names kernel '{spec.kernel}', task.json '{task.kernel}'")
    if not spec.numpy_ref:
        out.append("spec.json has no numpy_ref: the suite checks every result against numpy")
    if spec.reference != "reference.cu":
        out.append("spec.json's reference must be reference.cu (nvcc's baseline)")
    if not out:
        out += _reference_runs(spec, task.emulator_sizes or spec.sizes[:3])
    return out


def _reference_runs(spec, sizes) -> list[str]:
    """The numpy reference on random inputs: it runs and assigns every output with its length."""
    from ptxls.gputest import numpy_ref
    from ptxls.gputest.launch import scalar_env

    rng = np.random.default_rng(7)
    problems = []
    for n in sizes:
        env = scalar_env(spec, n)
        names = dict(env)
        for p in spec.params:
            if p.is_pointer:
                from ptxls.gputest import exprs

                length = exprs.evaluate_int(p.length, env)
                lo, hi = p.range or [-100, 100]
                floaty = p.dtype in ("f16", "bf16", "f32", "f64")
                names[p.name] = (
                    rng.uniform(-1, 1, length) if floaty else rng.integers(lo, hi + 1, length)
                ).astype(np.float64)
        try:
            got = numpy_ref.run(spec.numpy_ref, names)
        except Exception as e:  # a RefError or numpy's own: said, not raised
            problems.append(f"n={n}: the reference fails: {e}")
            continue
        for p in spec.params:
            if p.role not in ("out", "inout"):
                continue
            length = names[p.name].size
            if p.name not in got and p.role == "out":
                problems.append(f"n={n}: the reference does not assign '{p.name}'")
            elif p.name in got and np.asarray(got[p.name]).size != length:
                problems.append(f"n={n}: the reference gives '{p.name}' "
                                f"{np.asarray(got[p.name]).size} elements, the spec {length}")  # fmt: skip
    return problems


async def nvcc_problems(task: Task, arch: str = "sm_90") -> list[str]:
    """nvcc's PTX of reference.cu: built, assembled by ptxas, and its .entry matching spec.json."""
    from pathlib import Path

    from ptxls.gputest.library_spec import library_resolution
    from ptxls.lowering.nvcc_reference import lower_with_nvcc

    ref = task.reference_cu
    if ref is None or task.spec_path is None:
        return [] if task.source_kind == "triton" else ["no reference.cu"]
    res = await lower_with_nvcc(ref.read_text(encoding="utf-8"), file_path=str(ref),
                                kernel=task.kernel, arch=arch)  # fmt: skip
    if not res.ok:
        return [f"nvcc: {res.message}"]
    resolution = await asyncio.to_thread(
        library_resolution, res.ptx, task.kernel, Path(task.spec_path), explicit=True
    )
    return [f"spec vs nvcc's PTX: {p}" for p in resolution.problems]
