"""The first wrong element of a case: where "Debug first wrong element" starts.

The case runs once to the end on the emulator (a fresh copy: the debugging run itself is not
touched), its outputs are compared with the reference the GPU test uses — the spec's numpy
reference, or the paired CUDA source run through nvcc's PTX on the emulator with the same
inputs — element by element with gputest's own comparison and tolerance. The debugger then
watches that element and follows the thread that writes it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ptxls import emulator
from ptxls.gputest.compare import compare
from ptxls.gputest.dtypes import DTYPES, poison
from ptxls.gputest.harness import numpy_reference

from .case import Case, CaseError, build_case
from .views import buffer_view

RUN_BUDGET = emulator.Budget(max_thread_instructions=5 * 10**9, seconds=120)


@dataclass
class FirstWrong:
    buffer: str
    element: int
    text: str  # gputest's description: "c: 3 of 1000 wrong; first wrong: c[3] expected ..."


def _outputs(case: Case) -> dict[str, np.ndarray]:
    res = emulator.launch(case.module, case.kernel, case.grid, case.block, case.shared,
                          case.params, case.memory, RUN_BUDGET)  # fmt: skip
    if res.hang:
        raise CaseError(f"the run did not finish on the emulator ({res.hang_where})")
    holder = type("_Holder", (), {"case": case})()
    return {b.name: buffer_view(holder, b).copy() for b in case.buffers
            if b.role in ("out", "inout")}  # fmt: skip


def _raw(dtype: str, values: np.ndarray) -> np.ndarray:
    dt = DTYPES[dtype]
    if dt.encode is not None:  # bf16: buffer_view gave float32 values; compare wants bits
        return dt.encode(values.astype(np.float32))
    return values.astype(dt.storage, copy=False)


def first_wrong(program: str, kernel: str | None, n: int | None, seed: int | None,
                spec_path: str | None = None) -> FirstWrong | None:  # fmt: skip
    """The first wrong element of the case, or None when every output matches."""
    case = build_case(program, kernel, n, seed, spec_path)
    got = _outputs(case)
    spec = case.spec
    assert spec is not None  # build_case refuses a case without one
    if spec.numpy_ref:
        expected = numpy_reference(spec, case.host_inputs, case.lengths, case.env, spec.numpy_ref)
    else:
        ref_path = getattr(case.resolution, "reference_path", None)
        if not ref_path or not str(ref_path).endswith(".cu"):
            raise CaseError(f"{spec.kernel}: no reference to compare with (numpy or CUDA)")
        ref = build_case(ref_path, spec.kernel, case.n, case.seed)
        expected = {k: _raw(b.dtype, v) for (k, v), b in zip(
            _outputs(ref).items(), [b for b in ref.buffers if b.role in ("out", "inout")],
            strict=True)}  # fmt: skip
    for b in case.buffers:
        if b.role not in ("out", "inout") or b.name not in expected:
            continue
        dt = DTYPES[b.dtype]
        cmp = compare(b.name, dt, np.asarray(expected[b.name]), _raw(b.dtype, got[b.name]),
                      poison(dt, 1), spec.tol)  # fmt: skip
        if not cmp.passed and cmp.first_wrong:
            return FirstWrong(b.name, int(cmp.first_wrong[0].index), cmp.describe())
    return None
