"""The state of one GPU test inside the worker (gputest/harness.py runs it): a device buffer with
its poisoned guard bands (``Buffer``), the module's ``.global`` variables as loaded
(``ModuleState``), the start state every timed launch is put back to (``StartState``: outputs
re-poisoned, inout data restored, scratch zeroed) and one size's case (``CaseRun``), with the
guard-band readers. ``gputest.harness`` re-exports every name."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

from .dtypes import DTYPES, DType, poison
from .spec import ParamSpec, TestSpec

TIMED_ROLES = ("out", "inout")  # what every timed launch's result is checked on

GUARD_BYTES = 16384  # poisoned bands before and after every buffer: out-of-bounds writes show
FLUSH_BYTES = 256 << 20  # > 5x the H200's 50 MB L2: one memset evicts whatever a run left there
COPY_BYTES = 512 << 20


def cuda_driver() -> ModuleType:
    """The GPU's driver module, imported only when a test runs on the GPU: the emulator's
    worker (emulator/device.py, the same functions) must run without cuda-python."""
    from . import cuda_driver as cd

    return cd


class CaseError(Exception):
    """A CUDA error during one case; carries what the report needs to say where it happened."""

    def __init__(self, err, where: str, case: dict):
        self.err, self.where, self.case = err, where, case
        super().__init__(f"{err} {where}")


@dataclass
class Buffer:
    param: ParamSpec
    dt: DType
    length: int
    base: int  # device address of the allocation (guard band first)
    host_in: np.ndarray | None  # what was uploaded into the data region (inputs, inout)
    # the device's driver module (cuda_driver, or emulator.device: the same functions, picked at
    # run time, so its attributes are unchecked)
    drv: Any = None
    # A read-only input's device copy made right after its upload (GPU only): "the kernel left
    # it unchanged" is then one on-GPU byte comparison instead of downloading it to the host.
    pristine: int | None = None

    @property
    def ptr(self) -> int:
        return self.base + GUARD_BYTES

    @property
    def nbytes(self) -> int:
        return self.length * self.dt.itemsize

    def read(self) -> np.ndarray:
        """The whole allocation, guard bands included, as raw bytes."""
        return self.drv.download(self.base, np.empty(self.nbytes + 2 * GUARD_BYTES, np.uint8))


def scalar_arg(p: ParamSpec, value) -> np.ndarray:
    dt = DTYPES[p.dtype]
    if dt.encode is not None:
        return dt.encode(np.array([value], np.float32))
    if dt.is_float:
        return np.array([value], dtype=dt.storage)
    return np.array([int(value)], dtype=np.int64).astype(dt.storage)


class ModuleState:
    """The kernel module's ``.global`` variables (names from the PTX): their bytes right after
    loading, written back before every launch. ``missing``: names the driver would not give an
    address for, which therefore cannot be reset — such a kernel gets no time."""

    def __init__(self, module=None, names: list[str] | tuple[str, ...] = (), driver=None):
        self.saved: list[tuple[str, int, np.ndarray]] = []
        self.missing: list[str] = []
        self.drv: Any
        self.drv = cd = driver if driver is not None or not names else cuda_driver()
        for name in names:
            try:
                ptr, size = cd.call("cuModuleGetGlobal", module, name.encode())
            except cd.CudaError:
                self.missing.append(name)
                continue
            image = cd.download(int(ptr), np.empty(int(size), np.uint8))
            self.saved.append((name, int(ptr), image))

    def restore(self) -> None:
        for _, ptr, image in self.saved:
            self.drv.upload(ptr, image)

    def changed(self) -> list[str]:
        """Globals whose bytes differ from their image now (after a launch): for the report."""
        return [
            name
            for name, ptr, image in self.saved
            if not np.array_equal(self.drv.download(ptr, np.empty_like(image)), image)
        ]


NO_STATE = ModuleState()


class StartState:
    """Device images of what every launch must start from: poisoned outputs, the original inout
    data, zeroed scratch. ``apply()`` is a few device copies, done outside the timed events."""

    def __init__(self, bufs: list[Buffer], poison_setter=None):
        """``poison_setter(dt)``: a device memset that poisons ``dt`` elements, or None (then
        the poison is an image uploaded once and copied in)."""
        self.copies: list[tuple[Buffer, int]] = []
        self.zero: list[Buffer] = []
        self.fills: list[tuple[Buffer, Callable[[int, int], None]]] = []
        # the buffers' driver module (None without buffers: nothing to apply)
        self.drv: Any = bufs[0].drv if bufs else None
        cd: Any = self.drv
        for b in bufs:
            if not b.nbytes:
                continue
            if b.param.role == "scratch":
                self.zero.append(b)
            elif b.param.role == "out" and poison_setter and (fill := poison_setter(b.dt)):
                self.fills.append((b, fill))
            elif b.param.role in ("out", "inout"):
                image = b.host_in if b.param.role == "inout" else poison(b.dt, b.length)
                dev = cd.alloc(b.nbytes)
                cd.upload(dev, np.ascontiguousarray(image))
                self.copies.append((b, dev))

    def apply(self, outputs: bool = True) -> None:
        """``outputs=False``: inout data and scratch as at the start, but the outputs keep
        what the last launch wrote (the shortcut probe)."""
        for b, dev in self.copies:
            if outputs or b.param.role == "inout":
                self.drv.copy_d2d(b.ptr, dev, b.nbytes)
        if outputs:
            for b, fill in self.fills:
                fill(b.ptr, b.nbytes)
        for b in self.zero:
            self.drv.memset8(b.ptr, 0, b.nbytes)

    def free(self) -> None:
        for _, dev in self.copies:
            with contextlib.suppress(self.drv.CudaError):
                self.drv.free(dev)
        self.copies = []


@dataclass
class CaseRun:
    """One case (one size of the spec) as its steps share it: what the request gave (the kernel
    and reference handles, the timing settings), the launch the size implies, the inputs, the
    buffers, and ``case``, the result dict being filled in (the worker sends it as JSON)."""

    spec: TestSpec
    kernel_fn: object  # the kernel under test (a CUfunction)
    ref: dict  # the request's reference: {"kind": "numpy" | "cuda" | "self" | "triton", ...}
    # the reference's CUfunction (cuda) or TritonReference (triton), else None: read by kind
    ref_fn: Any
    n: int
    seed: int
    index: int  # of this size in spec.sizes
    do_time: bool
    ceiling: float | None  # the measured copy bandwidth (GB/s) when timing
    # -- set by Harness._prepare
    env: dict = field(default_factory=dict)
    grid: tuple[int, int, int] = (1, 1, 1)
    block: tuple[int, int, int] = (1, 1, 1)
    shared: int = 0
    where: str = ""  # "in case n=... launch grid=...": where a CUDA error happened
    case: dict = field(default_factory=dict)
    phases: dict[str, float] = field(default_factory=dict)  # seconds per step (the benchmark's)
    clock: float = 0.0  # when the step being measured began
    host_inputs: dict[str, np.ndarray] = field(default_factory=dict)
    lengths: dict[str, int] = field(default_factory=dict)
    # -- the kernel's buffers, the reference's and the nvcc baseline's (read-only inputs
    # shared); ``owned``: what the case frees when it ends
    bufs: list[Buffer] = field(default_factory=list)
    ref_bufs: list[Buffer] = field(default_factory=list)
    baseline_bufs: list[Buffer] | None = None
    owned: list[Buffer] = field(default_factory=list)
    expected: dict[str, np.ndarray] = field(default_factory=dict)  # the reference's outputs
    same_inputs: set[str] = field(default_factory=set)  # found unchanged on the device

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.phases[name] = round(self.phases.get(name, 0.0) + now - self.clock, 4)
        self.clock = now

    def step(self, what: str) -> str:
        """A progress line: "case 2/5 n=4096: running the reference"."""
        return f"case {self.index + 1}/{len(self.spec.sizes)} n={self.n}: {what}"


def _guards_only(b: Buffer) -> np.ndarray:
    """The allocation as b.read() returns it, with only the two guard bands downloaded (the
    data region is left zero: _guard_damage looks at the bands alone)."""
    raw = np.zeros(b.nbytes + 2 * GUARD_BYTES, np.uint8)
    b.drv.download(b.base, raw[:GUARD_BYTES])
    tail = np.empty(GUARD_BYTES, np.uint8)
    raw[GUARD_BYTES + b.nbytes :] = b.drv.download(b.ptr + b.nbytes, tail)
    return raw


def _data(b: Buffer, raw: np.ndarray) -> np.ndarray:
    return raw[GUARD_BYTES : GUARD_BYTES + b.nbytes].view(b.dt.storage)


def _guard_damage(b: Buffer, raw: np.ndarray) -> str:
    """Which elements outside [0, length) the kernel wrote, in element indices."""
    pattern = poison(b.dt, GUARD_BYTES // b.dt.itemsize).view(np.uint8)
    before, after = raw[:GUARD_BYTES], raw[GUARD_BYTES + b.nbytes :]
    item = b.dt.itemsize
    spans = []
    hit = np.flatnonzero(after != pattern)
    if len(hit):
        lo, hi = b.length + hit[0] // item, b.length + hit[-1] // item
        count = len(np.unique(hit // item))
        spans.append(f"{count} elements past the end ({b.param.name}[{lo}..{hi}])")
    hit = np.flatnonzero(before != pattern)
    if len(hit):
        lo, hi = (hit[0] - GUARD_BYTES) // item, (hit[-1] - GUARD_BYTES) // item
        spans.append(
            f"{len(np.unique(hit // item))} elements before the start ({b.param.name}[{lo}..{hi}])"
        )
    if not spans:
        return ""
    return (
        f"out-of-bounds write: {b.param.name} (length {b.length}) was written at "
        + " and ".join(spans)
        + " — is the bounds check missing?"
    )
