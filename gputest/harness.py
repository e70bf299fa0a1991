"""One GPU test, inside the worker: for each size, fresh inputs, poisoned outputs and guard bands,
the kernel, the reference on the same inputs, every element compared, inputs checked unchanged,
then event timing with correctness re-checked on the output of every timed launch.

Timing that cannot be gamed: every timed launch starts from the state the verified one started
from — outputs re-poisoned, inout data restored, scratch zeroed, the module's ``.global``
variables written back to their image at load, L2 flushed — and the events surround the launch
alone. A kernel that skips work when its output already holds the answer, or caches results in
module globals, therefore gets no speedup; one whose globals cannot be reset is flagged and gets
no time at all.

Returns plain dicts (the worker sends them as JSON). A CUDA error is raised as CudaError with the
case attached; the worker decides whether the process must be replaced.

How it is read: the state of one test (``Buffer``, ``ModuleState``, ``StartState``, ``CaseRun``)
is in harness_state.py, the inputs and the numpy reference in harness_inputs.py; here is
``Harness``: ``run`` over the sizes, ``run_case`` (inputs, poison, launch, reference, compare),
and the timing methods (``_time_case``, ``_timed_runs``, ``_time``), which re-check correctness
on every timed launch. Correctness and timing share the case state, so they are one class.

Why this file is long: it is that one class, ``Harness``, and its methods share one case's
state and invariants (poisoned outputs, guard bands, the start state every timed launch is
restored to). The state and the inputs already live apart (harness_state.py,
harness_inputs.py); splitting timing from correctness would put the re-check of every timed
launch in another file than the check it repeats.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import time
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from . import exprs
from .compare import changed, compare
from .dtypes import DTYPES, DType, poison
from .harness_inputs import _inputs, numpy_reference, starts_unwritten
from .harness_state import (
    COPY_BYTES,
    FLUSH_BYTES,
    GUARD_BYTES,
    NO_STATE,
    TIMED_ROLES,
    Buffer,
    CaseError,
    CaseRun,
    ModuleState,
    StartState,
    _data,
    _guard_damage,
    _guards_only,
    cuda_driver,
    scalar_arg,
)
from .launch import launch_dims, scalar_env
from .spec import TestSpec

if TYPE_CHECKING:
    from .same_bytes import NearReference, SameBytes

# gputest/sanitize.py sets this for the initcheck worker only: outputs are left unwritten.
_UNWRITTEN_OUTPUTS = os.environ.get("PTXLS_HARNESS_UNWRITTEN_OUTPUTS") == "1"
# bench/emulator_differential.py sets this for its workers: every verified launch's outputs are
# saved as <folder>/<case seed>-<name>.npy, so the GPU's and the emulator's compare bit for bit.
_DUMP_OUTPUTS = os.environ.get("PTXLS_HARNESS_DUMP_OUTPUTS", "")


class Harness:
    def __init__(
        self,
        ctx,
        progress: Callable[[str], None],
        case_done: Callable[[dict], None] | None = None,
        driver: ModuleType | None = None,
    ):
        """``driver``: the device's functions (gputest/cuda_driver.py, or emulator/device.py for
        the CPU emulator: same names, no clock, and a launch's findings to read back)."""
        self.cd: ModuleType = driver if driver is not None else cuda_driver()
        self.ctx = ctx
        self.progress = progress
        self.case_done = case_done or (lambda case: None)
        self.flush_buf: int | None = None
        self.copy_ceiling_gbps: float | None = None
        self.events = self.cd.Events()
        self.same_bytes: SameBytes | None = None  # the on-GPU byte comparison, loaded on first use
        # A real GPU (not the emulator, which names buffers and has no clock): poison by memset,
        # inputs checked unchanged on the device (gputest/same_bytes.py) instead of on the host.
        self.on_gpu = getattr(self.cd, "HAS_CLOCK", True) and not hasattr(self.cd, "name_buffer")

    # -- machine facts -----------------------------------------------------------------------

    def flush_l2(self) -> None:
        if self.flush_buf is None:
            self.flush_buf = self.cd.alloc(FLUSH_BYTES)
        self.cd.memset8(self.flush_buf, 0, FLUSH_BYTES)

    def measure_copy_ceiling(self) -> float:
        """Device-to-device copy bandwidth (bytes read + written), once per worker."""
        if self.copy_ceiling_gbps is None:
            src, dst = self.cd.alloc(COPY_BYTES), self.cd.alloc(COPY_BYTES)
            try:
                self.cd.copy_d2d(dst, src, COPY_BYTES)
                times = []
                for _ in range(10):
                    self.events.record_start()
                    self.cd.copy_d2d(dst, src, COPY_BYTES)
                    self.events.record_end()
                    times.append(self.events.elapsed_ms())
                self.copy_ceiling_gbps = 2 * COPY_BYTES / (statistics.median(times) * 1e-3) / 1e9
            finally:
                self.cd.free(src)
                self.cd.free(dst)
        return self.copy_ceiling_gbps

    # -- one test ----------------------------------------------------------------------------

    state: ModuleState = NO_STATE
    baseline_fn = None
    torch: dict | None = None

    def run(
        self, req: dict, kernel_fn, ref_fn, cases: list[dict], state: ModuleState = NO_STATE,
        baseline_fn=None,
    ) -> dict:  # fmt: skip
        """Run every case of ``req`` into ``cases`` (so the caller still has the finished ones
        when a CaseError ends the run). ``state``: the kernel module's globals, reset before
        every launch. ``baseline_fn``: a CUDA build timed beside a numpy reference (the
        library's nvcc baseline), checked against that reference too."""
        spec = TestSpec.from_dict(req["spec"])
        ref = req["reference"]
        seed = int(req["seed"])
        # A device without a clock (the emulator) times nothing: no time, ratio or GB/s.
        do_time = bool(req.get("time", True)) and getattr(self.cd, "HAS_CLOCK", True)
        ceiling = self.measure_copy_ceiling() if do_time else None
        self.state, self.baseline_fn, self.torch = state, baseline_fn, req.get("torch")
        if self.torch and do_time:
            from .baselines import preload

            preload()  # torch imports while the cases' inputs, reference and checks run
        for i, n in enumerate(spec.sizes):
            run = CaseRun(spec, kernel_fn, ref, ref_fn, n, seed + i, i, do_time, ceiling)
            case = self.run_case(run)
            cases.append(case)
            self.case_done(case)  # streamed: a later hang must not lose the finished cases
        return {"cases": cases, "copy_ceiling_gbps": ceiling}

    def run_case(self, c: CaseRun) -> dict:
        """One size: fresh inputs, the kernel's verified launch, the reference, every element
        compared, the nvcc baseline, then the timing. Returns the case dict."""
        self._prepare(c)
        c.bufs = self._alloc(c.spec, c.lengths, c.host_inputs)
        c.ref_bufs = []
        c.owned = list(c.bufs)
        try:
            c.lap("upload")
            after = self._run_kernel(c)
            if _DUMP_OUTPUTS:
                for b in c.bufs:
                    if b.param.role in ("out", "inout"):
                        path = os.path.join(_DUMP_OUTPUTS, f"{c.seed}-{b.param.name}.npy")
                        np.save(path, _data(b, after[b.param.name]))
            c.expected = self._reference(c)
            c.lap("reference")
            ok = self._check(c.spec, c.bufs, after, c.expected, c.case, c.same_inputs)
            # the emulator saw a bug (out of bounds, a race, ...): the case fails
            ok = not c.case.get("findings_fail") and ok
            c.lap("check")
            self._check_baseline(c)
            if c.do_time and c.n > 0:
                ok = self._time_case(c, ok)
            c.case["passed"] = ok
            return c.case
        finally:
            for b in c.owned:
                # A dead context frees nothing; the process is replaced anyway.
                with contextlib.suppress(self.cd.CudaError):
                    self.cd.free(b.base)
                    if b.pristine is not None:
                        self.cd.free(b.pristine)

    def _prepare(self, c: CaseRun) -> None:
        """The size's scalars and launch, the case dict, the inputs from the case's seed."""
        spec, n, seed = c.spec, c.n, c.seed
        c.env = scalar_env(spec, n)
        c.grid, c.block, c.shared = launch_dims(spec, c.env)
        grid, block, shared = c.grid, c.block, c.shared
        c.case = {
            "index": c.index, "n": n, "seed": seed, "passed": False, "max_rel_err": 0.0,
            "messages": [], "launch": {"grid": list(grid), "block": list(block), "shared": shared},
            "time_ms": None, "ref_time_ms": None, "gbps": None, "outputs": [], "timing": {},
        }  # fmt: skip
        c.phases = {}  # seconds per step, for the benchmark's breakdown
        c.case["phases"] = c.phases
        c.clock = time.perf_counter()
        rng = np.random.default_rng(seed)
        c.host_inputs, c.lengths = {}, {}
        for p in spec.params:
            if p.is_pointer:
                c.lengths[p.name] = max(0, exprs.evaluate_int(p.length, c.env))
                if p.role in ("in", "inout"):
                    c.host_inputs[p.name] = _inputs(p, c.lengths[p.name], rng)
        c.where = (
            f"in case n={n} (seed {seed}), launch grid={_d(grid)} block={_d(block)} shared={shared}"
        )
        c.lap("inputs")

    def _run_kernel(self, c: CaseRun) -> dict[str, np.ndarray]:
        """The kernel's verified launch, its module globals as loaded; returns its buffers as
        raw bytes, guard bands included."""
        self.progress(c.step(f"running {c.spec.kernel}"))
        self.state.restore()
        self._launch_checked(c, c.kernel_fn, c.bufs, c.where)
        c.lap("kernel")
        written = self.state.changed()
        if written:
            c.case["timing"]["globals_written"] = written
        after, c.same_inputs = self._read_after(c.bufs)
        c.lap("download")
        return after

    def _read_after(self, bufs: list[Buffer]) -> tuple[dict[str, np.ndarray], set[str]]:
        """Each buffer's bytes after a launch, guard bands included, and the read-only inputs
        found byte-identical to their upload on the device: of those only the guard bands are
        downloaded (the data region stays zero; ``_check`` skips their comparison)."""
        after, same = {}, set()
        for b in bufs:
            if (b.pristine is not None and b.nbytes
                    and self._same(b.ptr, b.pristine, b.nbytes)):  # fmt: skip
                after[b.param.name] = _guards_only(b)
                same.add(b.param.name)
            else:
                after[b.param.name] = b.read()
        return after, same

    def poison_setter(self, dt: DType) -> Callable[[int, int], None] | None:
        """A device memset writing ``dt``'s poison over ``nbytes`` at ``ptr``, or None (the
        emulator, an 8-byte pattern such as float64's NaN): then a host image is uploaded."""
        wide: dict[int, Callable[[int, int, int], None] | None] = {
            2: getattr(self.cd, "memset16", None), 4: getattr(self.cd, "memset32", None)}  # fmt: skip
        if not self.on_gpu or not all(wide.values()):
            return None
        bits = poison(dt, 1).view(np.uint8)
        if (bits == bits[0]).all():
            return lambda ptr, nbytes: self.cd.memset8(ptr, int(bits[0]), nbytes)
        fill = wide.get(dt.itemsize)
        if fill is not None:
            value = int(bits.view(f"u{dt.itemsize}")[0])
            return lambda ptr, nbytes: fill(ptr, value, nbytes)
        return None

    def _reference(self, c: CaseRun) -> dict[str, np.ndarray]:
        """The reference, on the same inputs: read-only inputs are shared (the kernel was just
        checked not to change them); outputs and inout data get buffers of their own."""
        spec, ref = c.spec, c.ref
        if ref["kind"] in ("cuda", "self"):
            c.ref_bufs = self._alloc(spec, c.lengths, c.host_inputs, share=c.bufs)
            c.owned += [b for b in c.ref_bufs if b not in c.bufs]
            fn = c.ref_fn if ref["kind"] == "cuda" else c.kernel_fn
            self.progress(c.step("running the reference"))
            self._launch_checked(c, fn, c.ref_bufs, c.where + " (reference kernel)")
            return {b.param.name: _data(b, b.read()) for b in c.ref_bufs if b.param.role != "in"}
        if ref["kind"] == "triton":
            self.progress(c.step("running Triton"))
            return c.ref_fn.expected(spec, c.host_inputs, c.lengths, c.env, c.grid)
        return numpy_reference(
            spec, c.host_inputs, c.lengths, c.env, ref["expr"], trusted=bool(ref.get("trusted"))
        )

    def _check_baseline(self, c: CaseRun) -> None:
        """The nvcc build of the library's reference.cu, on the same inputs, held to the same
        numpy reference: a baseline that is wrong is no baseline."""
        if c.ref["kind"] != "numpy" or self.baseline_fn is None:
            return
        c.baseline_bufs = self._alloc(c.spec, c.lengths, c.host_inputs, share=c.bufs)
        c.owned += [b for b in c.baseline_bufs if b not in c.bufs]
        self._launch_checked(c, self.baseline_fn, c.baseline_bufs, c.where + " (nvcc baseline)")
        probe: dict[str, list[Any]] = {"messages": [], "outputs": []}
        base_after = {b.param.name: b.read() for b in c.baseline_bufs if b.param.role != "in"}
        base_ok = self._check(c.spec, c.baseline_bufs, base_after, c.expected, probe)
        c.case["timing"]["baseline"] = "ok" if base_ok else "; ".join(probe["messages"])
        c.lap("baseline")

    def _time_case(self, c: CaseRun, ok: bool) -> bool:
        """The kernel timed (when it passed), then the reference and the baselines. Returns
        whether the case still passes: a wrong timed launch fails it."""
        if ok:
            self._time(c)
            ok = c.case.pop("passed_timed")
        self._time_reference(c)
        if c.ref["kind"] == "triton":
            c.case["ref_time_ms"] = c.ref_fn.time_ms(
                c.spec, c.host_inputs, c.lengths, c.env, c.grid
            )
        if self.torch:
            from .baselines import time_torch

            self.progress(c.step("timing PyTorch"))
            c.case["timing"].update(time_torch(self.torch, c.spec, c.host_inputs, c.env,
                                               c.expected, c.spec.timing_runs, FLUSH_BYTES))  # fmt: skip
        c.lap("timing")
        return ok

    def _time_reference(self, c: CaseRun) -> None:
        """The CUDA reference, or the nvcc baseline, runs under the same rules (bar the globals
        reset: nvcc's own build), and its timed outputs are checked the same way."""
        if c.ref["kind"] == "cuda":
            other_fn, other_bufs = c.ref_fn, c.ref_bufs
        elif c.baseline_bufs:
            other_fn, other_bufs = self.baseline_fn, c.baseline_bufs
        else:
            return
        if other_fn is None:
            return
        # The CUDA reference's buffers still hold what its verified launch wrote, which
        # _reference read into c.expected: no second download.
        exp = c.expected
        t = self._timed_runs(c, other_fn, other_bufs, c.where + " (reference, timed)", exp,
                             NO_STATE)  # fmt: skip
        c.case["ref_time_ms"] = t["median"]
        c.case["timing"].update(ref_min_ms=t["min"], ref_max_ms=t["max"])
        if t["wrong"]:
            c.case["timing"]["ref_wrong"] = t["wrong"]

    def _alloc(self, spec, lengths, host_inputs, share: list[Buffer] | None = None) -> list[Buffer]:
        bufs = []
        shared_in = {b.param.name: b for b in share or [] if b.param.role == "in"}
        for p in spec.params:
            if not p.is_pointer:
                continue
            if p.name in shared_in:
                bufs.append(shared_in[p.name])
                continue
            dt = DTYPES[p.dtype]
            length = lengths[p.name]
            fill = self.poison_setter(dt)
            if fill is not None and not (p.role == "out" and _UNWRITTEN_OUTPUTS):
                bufs.append(self._alloc_on_gpu(p, dt, length, host_inputs.get(p.name), fill))
                continue
            guard = poison(dt, GUARD_BYTES // dt.itemsize)
            data = host_inputs.get(p.name)
            if data is None:
                data = np.zeros(length, dt.storage) if p.role == "scratch" else poison(dt, length)
            whole = np.concatenate(
                [guard.view(np.uint8), data.view(np.uint8), guard.view(np.uint8)]
            )
            b = Buffer(p, dt, length, self.cd.alloc(whole.nbytes), host_inputs.get(p.name), self.cd)
            if hasattr(self.cd, "name_buffer"):  # the emulator: guard bands are out of bounds
                self.cd.name_buffer(b.base, GUARD_BYTES, b.nbytes, p.name, starts_unwritten(p))
            if p.role == "out" and _UNWRITTEN_OUTPUTS:
                # Under compute-sanitizer initcheck (gputest/sanitize.py): guard bands only, so
                # a kernel that reads an output before writing it reads uninitialised memory.
                self.cd.upload(b.base, guard.view(np.uint8))
                self.cd.upload(b.ptr + b.nbytes, guard.view(np.uint8))
            else:
                self.cd.upload(b.base, whole)
            bufs.append(b)
        return bufs

    def _alloc_on_gpu(self, p, dt: DType, length: int, data, fill) -> Buffer:
        """One buffer as ``_alloc`` makes it, with no host image: the whole allocation poisoned
        by a memset, then the input's data uploaded into the middle (or scratch zeroed). A
        read-only input also gets its pristine device copy."""
        cd = self.cd
        b = Buffer(p, dt, length, 0, data, cd)
        b.base = cd.alloc(b.nbytes + 2 * GUARD_BYTES)
        try:
            fill(b.base, b.nbytes + 2 * GUARD_BYTES)
            if data is not None:
                cd.upload(b.ptr, np.ascontiguousarray(data))
            elif p.role == "scratch" and b.nbytes:
                cd.memset8(b.ptr, 0, b.nbytes)
            if p.role == "in" and b.nbytes:
                b.pristine = cd.alloc(b.nbytes)
                cd.copy_d2d(b.pristine, b.ptr, b.nbytes)
        except BaseException:
            with contextlib.suppress(cd.CudaError):
                cd.free(b.base)
            raise
        return b

    def _args(self, spec, bufs, env) -> list[np.ndarray]:
        by_name = {b.param.name: b for b in bufs}
        args = []
        for p in spec.params:
            if p.is_pointer:
                args.append(np.array([by_name[p.name].ptr], dtype=np.uint64))
            else:
                args.append(scalar_arg(p, env[p.name]))
        return args

    def _launch_checked(self, c: CaseRun, fn, bufs: list[Buffer], where: str) -> None:
        try:
            self.cd.launch(fn, c.grid, c.block, c.shared, self._args(c.spec, bufs, c.env))
            self.cd.synchronize()
        except self.cd.CudaError as e:
            raise CaseError(e, where, c.case) from None
        self._findings(c, fn, bufs, where)

    def _findings(self, c: CaseRun, fn, bufs: list[Buffer], where: str) -> None:
        """What the device saw during the launch (the emulator: out-of-bounds accesses, reads
        of unwritten memory, races, ...; a GPU: nothing). The kernel's own fail its case; a
        reference kernel's are noted (the kernel as its own reference: already said)."""
        found: list[dict] = getattr(self.cd, "take_findings", lambda: [])()
        if fn is c.kernel_fn and bufs is not c.bufs:
            return  # the kernel again, as its own reference
        for f in found:
            c.case.setdefault("findings", []).append({**f, "launch": where})
            if fn is not c.kernel_fn:
                c.case["messages"].append(f"(the reference kernel) {f['text']}")
            elif f.get("severity", "error") == "error":
                c.case["findings_fail"] = True
                c.case["messages"].append(f["text"])

    def _check(self, spec, bufs, after, expected, case, same_inputs=frozenset()) -> bool:
        """``same_inputs``: inputs already found unchanged on the device (their ``after`` holds
        the guard bands only)."""
        ok = True
        worst = 0.0
        for b in bufs:
            if b.param.name not in after:
                continue
            raw = after[b.param.name]
            msg = _guard_damage(b, raw)
            if msg:
                ok = False
                case["messages"].append(msg)
            data = _data(b, raw)
            if b.param.role == "in":
                if b.param.name in same_inputs:
                    continue
                msg = changed(b.param.name, b.host_in, data)
                if msg:
                    ok = False
                    case["messages"].append(msg)
                continue
            if b.param.role == "scratch":
                continue
            cmp = compare(b.param.name, b.dt, expected[b.param.name], data,
                          poison(b.dt, 1), spec.tol)  # fmt: skip
            worst = max(worst, cmp.max_rel_err)
            case["outputs"].append({
                "name": cmp.name, "total": cmp.total, "wrong": cmp.wrong,
                "unwritten": cmp.unwritten, "max_rel_err": cmp.max_rel_err, "guard": cmp.guard,
                "first_wrong": [[m.index, m.expected, m.got, m.unwritten] for m in cmp.first_wrong],
            })  # fmt: skip
            if not cmp.passed:
                ok = False
                case["messages"].append(cmp.describe())
        case["max_rel_err"] = worst
        return ok

    def _timed_runs(self, c: CaseRun, fn, bufs: list[Buffer], where: str, expected: dict,
                    state: ModuleState) -> dict:  # fmt: skip
        """``spec.timing_runs`` launches, each from the verified launch's start state and each
        checked: the bytes of every output against the verified launch's (a deterministic
        kernel), else every element against ``expected``. Returns median/min/max ms and the
        first wrong launch's message ("" when none)."""
        from .same_bytes import NearReference  # the GPU's own comparison (imports cuda-python)

        spec = c.spec
        args = self._args(spec, bufs, c.env)
        outs = [b for b in bufs if b.param.role in TIMED_ROLES and b.nbytes]
        start = StartState(bufs, self.poison_setter)
        first: dict[str, int] = {}  # device copies of what the verified launch wrote
        near = NearReference(expected, spec.tol)  # for outputs that differ in the last bits
        wrong = ""
        self.progress(f"{spec.kernel}: {spec.timing_runs} timed launches {where.strip()}")
        try:
            for b in outs:
                first[b.param.name] = self.cd.alloc(b.nbytes)
                self.cd.copy_d2d(first[b.param.name], b.ptr, b.nbytes)
            start.apply()
            state.restore()
            self.cd.launch(fn, c.grid, c.block, c.shared, args)  # warm-up (instruction cache, TLB)
            self.cd.synchronize()
            c.lap("timed_setup")
            times = []
            for k in range(max(1, spec.timing_runs)):
                start.apply()
                state.restore()
                self.flush_l2()
                self.events.record_start()
                self.cd.launch(fn, c.grid, c.block, c.shared, args)
                self.events.record_end()
                times.append(self.events.elapsed_ms())
                why = self._wrong_timed_output(spec, outs, first, near, expected)
                if why is not None:
                    wrong = f"timed launch {k + 1}: " + why
                    break
            self.cd.synchronize()
            c.lap("timed_launches")
            ins = [b for b in bufs if b.param.role == "in"]
            probe: dict[str, list[Any]] = {"messages": [], "outputs": []}
            after, same = self._read_after(ins)
            if not self._check(spec, ins, after, {}, probe, same):
                wrong = wrong or "after the timed launches: " + "; ".join(probe["messages"])
            c.lap("timed_inputs_check")
            return {"median": statistics.median(times), "min": min(times), "max": max(times),
                    "runs": len(times), "wrong": wrong}  # fmt: skip
        except self.cd.CudaError as e:
            raise CaseError(e, where, c.case) from None
        finally:
            start.free()
            near.free()
            for dev in first.values():
                with contextlib.suppress(self.cd.CudaError):
                    self.cd.free(dev)

    def _wrong_timed_output(self, spec: TestSpec, outs: list[Buffer], first: dict[str, int],
                            near: NearReference, expected: dict) -> str | None:  # fmt: skip
        """None when every output of the launch just timed is right, else what is wrong."""
        for b in outs:
            # Same bytes as the verified launch (compared on the GPU) and untouched guard
            # bands: right. Otherwise the whole buffer is checked (a kernel with float atomics
            # may differ in the last bits and still be right).
            if (
                self._same(b.ptr, first[b.param.name], b.nbytes) or self._near(near, b)
            ) and not _guard_damage(b, _guards_only(b)):
                continue
            raw = b.read()
            probe: dict[str, list[Any]] = {"messages": [], "outputs": []}
            if not self._check(spec, [b], {b.param.name: raw}, expected, probe):
                return "; ".join(probe["messages"])
        return None

    def _same(self, a: int, b: int, nbytes: int) -> bool:
        if self.same_bytes is None:
            from .same_bytes import SameBytes

            self.same_bytes = SameBytes()
        return self.same_bytes.equal(a, b, nbytes)

    def _near(self, near: NearReference, b: Buffer) -> bool:
        """A float32 output that differs from the verified launch's bits, checked against the
        reference on the GPU (the host check of a 2^26-element output takes seconds)."""
        if self.same_bytes is None:
            from .same_bytes import SameBytes

            self.same_bytes = SameBytes()
        return near.within(self.same_bytes, b.param.name, b.dt, b.ptr, b.length)

    def _time(self, c: CaseRun) -> None:
        """Time the kernel; withhold the time (and flag it) when its module globals cannot be
        reset or a timed launch is wrong: such a kernel gets no speedup."""
        case = c.case
        case["passed_timed"] = True
        timing = case["timing"]
        if self.state.missing:
            names = ", ".join(self.state.missing)
            timing.setdefault("flags", []).append(
                f"module .global variable(s) {names} cannot be reset between launches: the "
                "kernel could carry results from one launch to the next, so it gets no time"
            )
            return
        t = self._timed_runs(c, c.kernel_fn, c.bufs, c.where + " (timed runs)", c.expected,
                             self.state)  # fmt: skip
        if t["wrong"]:
            case["passed_timed"] = False
            case["messages"].append(f"wrong in the timed runs ({t['wrong']})")
            timing.setdefault("flags", []).append(
                "a timed launch's output differs from the verified one: no time reported"
            )
            return
        case["time_ms"] = t["median"]
        timing.update(min_ms=t["min"], max_ms=t["max"], runs=t["runs"])
        self._shortcut_probe(c, t["median"], t["min"])
        self._throughput(c, t["median"])

    def _throughput(self, c: CaseRun, ms: float) -> None:
        """Bytes moved (the spec's ``bench.bytes``, else each buffer once, inout twice) and
        flops per second of the median launch; above 110% of the copy ceiling is suspicious."""
        case, timing, env, ceiling = c.case, c.case["timing"], c.env, c.ceiling
        bench = c.spec.bench or {}
        moved = (
            exprs.evaluate_int(bench["bytes"], env) if bench.get("bytes")
            else sum(b.nbytes * (2 if b.param.role == "inout" else 1)
                     for b in c.bufs if b.param.role != "scratch")
        )  # fmt: skip
        timing["bytes"] = moved
        timing["bound"] = bench.get("bound") or (
            "compute" if bench.get("flops") and not bench.get("bytes") else "memory"
        )
        if bench.get("flops"):
            timing["flops"] = exprs.evaluate_int(bench["flops"], env)
            if ms > 0:
                timing["tflops"] = timing["flops"] / (ms * 1e-3) / 1e12
        if ms > 0:
            gbps = moved / (ms * 1e-3) / 1e9
            case["gbps"] = gbps
            if ceiling and gbps > 1.1 * ceiling:
                case["messages"].append(
                    f"suspicious: {gbps:.0f} GB/s is above the measured copy ceiling of "
                    f"{ceiling:.0f} GB/s — the kernel skips work or the timing is wrong"
                )
                case["suspicious"] = True

    # A kernel is flagged as skipping work when, launched again on its own previous output and
    # module state, it runs faster than this share of its FASTEST honest launch and saves at
    # least SHORTCUT_MIN_MS (so launch-overhead noise at tiny sizes flags nothing). Half the
    # median was too lax: on the H200 a planted cheater with 131072 blocks that each read three
    # floats and stop still takes 0.082 ms against its honest 0.126-0.129 ms (the blocks' own
    # launch and exit cost), 0.64x, and went unflagged; an honest kernel's reruns land within
    # its spread of honest launches.
    SHORTCUT_SHARE = 0.9
    SHORTCUT_MIN_MS = 0.005

    def _shortcut_probe(self, c: CaseRun, honest_ms: float, fastest_ms: float) -> None:
        """Launch three more times the way a naive benchmark would: the outputs keep the last
        launch's answer and the module globals what it left (inputs, inout data and scratch as
        at the start). A kernel that gets much faster then is skipping work when its output
        already holds the answer, or carrying results across launches: flag it. Its reported
        time stays the honest one (every timed launch started from the verified state)."""
        args = self._args(c.spec, c.bufs, c.env)
        start = StartState(c.bufs, self.poison_setter)
        try:
            times = []
            for _ in range(3):
                start.apply(outputs=False)
                self.flush_l2()
                self.events.record_start()
                self.cd.launch(c.kernel_fn, c.grid, c.block, c.shared, args)
                self.events.record_end()
                times.append(self.events.elapsed_ms())
            self.cd.synchronize()
        except self.cd.CudaError as e:
            raise CaseError(e, c.where + " (shortcut probe)", c.case) from None
        finally:
            start.free()
        again = statistics.median(times)
        c.lap("shortcut_probe")
        c.case["timing"]["rerun_ms"] = again
        if again < self.SHORTCUT_SHARE * fastest_ms and honest_ms - again >= self.SHORTCUT_MIN_MS:
            c.case["timing"].setdefault("flags", []).append(
                f"runs {honest_ms / max(again, 1e-9):.1f}× faster when launched again on its own "
                "previous output and module state: it skips work when the answer is already "
                "there (the time reported is from poisoned outputs and reset globals)"
            )


def _d(dims) -> str:
    return (
        "(" + ",".join(str(x) for x in dims) + ")"
        if any(x != 1 for x in dims[1:])
        else str(dims[0])
    )
