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
from ptxls.frontend.languages import CUDA, language_of
from ptxls.gputest.compare import compare
from ptxls.gputest.dtypes import DTYPES, poison
from ptxls.gputest.harness import numpy_reference

from .case import Case, CaseError, build_case
from .views import buffer_view

RUN_BUDGET = emulator.Budget(max_thread_instructions=5 * 10**9, seconds=120)


Dim3 = tuple[int, int, int]


@dataclass
class FirstWrong:
    buffer: str
    element: int
    text: str  # gputest's description: "c: 3 of 1000 wrong; first wrong: c[3] expected ..."
    block: Dim3 | None = None  # the thread that wrote the element last (None: nobody wrote it)
    thread: Dim3 | None = None


class _Writers:
    """Which thread stored each element of the outputs last: the grid-linear thread index per
    element (-1: never written), kept with the emulator's store hook during the run."""

    def __init__(self, ex: emulator.Execution, case: Case) -> None:
        self.ex = ex
        self.outs = [b for b in case.buffers if b.role in ("out", "inout") and b.length]
        self.by_name = {b.name: np.full(b.length, -1, np.int64) for b in self.outs}
        self.bt = case.block[0] * case.block[1] * case.block[2]
        ex.hooks.on_write.append(self.on_write)

    def on_write(self, space, addr, size, threads) -> None:
        if space != "global":
            return
        a = np.asarray(addr, dtype=np.uint64).reshape(-1)
        t = np.asarray(threads).reshape(-1)
        if t.size != a.size:
            t = np.broadcast_to(t[:1], a.shape) if t.size else t
        wave = self.ex.wave
        assert wave is not None  # a store runs in a wave
        gid = wave.block_ids[wave.slot[t]].astype(np.int64) * self.bt + wave.lin[t]
        for b in self.outs:
            item = b.storage.itemsize
            lo, hi = np.uint64(b.address), np.uint64(b.address + b.length * item)
            for k in range(max(1, int(size) // item)):  # a vector store covers several
                ak = a + np.uint64(k * item)
                inside = (ak >= lo) & (ak < hi)
                if inside.any():
                    idx = ((ak[inside] - lo) // np.uint64(item)).astype(np.int64)
                    self.by_name[b.name][idx] = gid[inside]

    def coords(self, name: str, element: int) -> tuple[Dim3, Dim3] | None:
        arr = self.by_name.get(name)
        if arr is None or not 0 <= element < arr.size or arr[element] < 0:
            return None
        b, t = divmod(int(arr[element]), self.bt)
        gx, gy, _ = self.ex.grid
        bx, by, _ = self.ex.block
        return ((b % gx, (b // gx) % gy, b // (gx * gy)),
                (t % bx, (t // bx) % by, t // (bx * by)))  # fmt: skip


def _outputs(case: Case, writers: bool = False) -> tuple[dict[str, np.ndarray], _Writers | None]:
    ex = emulator.Execution(case.module, case.kernel, case.grid, case.block, case.shared,
                            case.params, case.memory, RUN_BUDGET)  # fmt: skip
    seen = _Writers(ex, case) if writers else None
    res = ex.run()
    if res.hang:
        raise CaseError(f"the run did not finish on the emulator ({res.hang_where})")
    holder = type("_Holder", (), {"case": case})()
    out = {b.name: buffer_view(holder, b).copy() for b in case.buffers
           if b.role in ("out", "inout")}  # fmt: skip
    return out, seen


def writer_of(program: str, kernel: str | None, n: int | None, seed: int | None,
              spec_path: str | None, element: str) -> tuple[Dim3, Dim3] | None:  # fmt: skip
    """The thread that first stores ``element`` ("c[4097]") in the case: where a debugging
    run with that data breakpoint will stop (a run of its own, up to that store)."""
    from .session import Session

    case = build_case(program, kernel, n, seed, spec_path)
    s = Session(case)
    s.stop_on_findings = False
    if not s.set_data_breakpoints([element])[0].get("verified"):
        return None
    stop = s.run("continue")
    if stop is None or stop.reason != "data breakpoint":
        return None
    return (s.block[0], s.block[1], s.block[2]), (s.thread[0], s.thread[1], s.thread[2])


def _raw(dtype: str, values: np.ndarray) -> np.ndarray:
    dt = DTYPES[dtype]
    if dt.encode is not None:  # bf16: buffer_view gave float32 values; compare wants bits
        return dt.encode(values.astype(np.float32))
    return values.astype(dt.storage, copy=False)


def first_wrong(program: str, kernel: str | None, n: int | None, seed: int | None,
                spec_path: str | None = None) -> FirstWrong | None:  # fmt: skip
    """The first wrong element of the case, or None when every output matches."""
    case = build_case(program, kernel, n, seed, spec_path)
    got, writers = _outputs(case, writers=True)
    spec = case.spec
    assert spec is not None  # build_case refuses a case without one
    if spec.numpy_ref:
        expected = numpy_reference(spec, case.host_inputs, case.lengths, case.env, spec.numpy_ref)
    else:
        ref_path = getattr(case.resolution, "reference_path", None)
        if not ref_path or language_of(str(ref_path)) != CUDA:
            raise CaseError(f"{spec.kernel}: no reference to compare with on the CPU (a numpy "
                            "ref: or a paired .cu; a Triton kernel's reference runs on a GPU)")  # fmt: skip
        ref = build_case(ref_path, spec.kernel, case.n, case.seed)
        expected = {k: _raw(b.dtype, v) for (k, v), b in zip(
            _outputs(ref)[0].items(), [b for b in ref.buffers if b.role in ("out", "inout")],
            strict=True)}  # fmt: skip
    for b in case.buffers:
        if b.role not in ("out", "inout") or b.name not in expected:
            continue
        dt = DTYPES[b.dtype]
        cmp = compare(b.name, dt, np.asarray(expected[b.name]), _raw(b.dtype, got[b.name]),
                      poison(dt, 1), spec.tol)  # fmt: skip
        if not cmp.passed and cmp.first_wrong:
            k = int(cmp.first_wrong[0].index)
            at = writers.coords(b.name, k) if writers is not None else None
            return FirstWrong(b.name, k, cmp.describe(), *(at or (None, None)))
    return None
