"""The timing rules of the GPU harness, on the CPU: the harness drives a stand-in for the CUDA
driver (device memory as bytes, kernels as Python functions that say how long they took), so
the rules themselves are checked on every CI run — every timed launch starts from the verified
state, every timed output is checked, kernels that skip work when the answer is already there
(in the output, or in a module global) get no speedup and are flagged, and a global the
driver cannot locate means no time. The same rules on the H200 with real PTX cheaters:
tests/gpu/test_library_cheaters.py."""

from __future__ import annotations

import numpy as np
import pytest

from ptxls.gputest import cuda_driver as cd
from ptxls.gputest import harness as hz
from ptxls.gputest.compare import compare
from ptxls.gputest.dtypes import poison
from ptxls.gputest.spec import LaunchSpec, ParamSpec, TestSpec

N = 1 << 16
NS_PER_ELEMENT = 1e-6  # the stand-in kernels' cost: 1 ns per element, in ms


class FakeDevice:
    """Device memory, launches and events, with a clock that only kernels advance."""

    def __init__(self):
        self.mem: dict[int, bytearray] = {}
        self.next = 1 << 20
        self.clock = 0.0
        self.marks = [0.0, 0.0]
        self.globals: dict[str, int] = {}

    def _at(self, ptr: int, n: int) -> memoryview:
        for base, buf in self.mem.items():
            if base <= ptr and ptr + n <= base + len(buf):
                return memoryview(buf)[ptr - base : ptr - base + n]
        raise AssertionError(f"bad device access {ptr:#x}+{n}")

    def array(self, ptr: int, count: int, dtype=np.float32) -> np.ndarray:
        return np.frombuffer(self._at(ptr, count * np.dtype(dtype).itemsize), dtype=dtype)

    # the cuda_driver functions the harness calls
    def alloc(self, n: int) -> int:
        base = self.next
        self.mem[base] = bytearray(max(n, 1))
        self.next += (max(n, 1) + 4095) // 4096 * 4096 + 4096
        return base

    def free(self, ptr: int) -> None:
        self.mem.pop(ptr, None)

    def upload(self, ptr: int, host: np.ndarray) -> None:
        if host.nbytes:
            self._at(ptr, host.nbytes)[:] = np.ascontiguousarray(host).view(np.uint8).tobytes()

    def download(self, ptr: int, host: np.ndarray) -> np.ndarray:
        if host.nbytes:
            host.view(np.uint8).reshape(-1)[:] = np.frombuffer(self._at(ptr, host.nbytes), np.uint8)
        return host

    def copy_d2d(self, dst: int, src: int, n: int) -> None:
        if n:
            self._at(dst, n)[:] = bytes(self._at(src, n))

    def memset8(self, ptr: int, value: int, n: int) -> None:
        np.frombuffer(self._at(ptr, n), np.uint8).fill(value)

    def memset32(self, ptr: int, value: int, n: int) -> None:  # float32 poison (NaN) on device
        self._at(ptr, n)[:] = np.full(n // 4, value, np.uint32).tobytes()

    def memset16(self, ptr: int, value: int, n: int) -> None:
        self._at(ptr, n)[:] = np.full(n // 2, value, np.uint16).tobytes()

    def synchronize(self) -> None:
        pass

    def launch(self, fn, grid, block, shared, args) -> None:
        self.clock += fn(self, [int(a[0]) for a in args])

    def call(self, name: str, *args):
        assert name == "cuModuleGetGlobal"
        global_name = args[1].decode()
        if global_name not in self.globals:
            raise cd.CudaError.__new__(cd.CudaError)  # "not found"
        return self.globals[global_name], 4


class FakeEvents:
    def __init__(self, dev: FakeDevice):
        self.dev = dev

    def record_start(self) -> None:
        self.dev.marks[0] = self.dev.clock

    def record_end(self) -> None:
        self.dev.marks[1] = self.dev.clock

    def elapsed_ms(self) -> float:
        return self.dev.marks[1] - self.dev.marks[0]


@pytest.fixture
def dev(monkeypatch):
    d = FakeDevice()
    for name in ("alloc", "free", "upload", "download", "copy_d2d", "memset8", "memset16",
                 "memset32", "synchronize", "launch", "call"):  # fmt: skip
        monkeypatch.setattr(cd, name, getattr(d, name))
    monkeypatch.setattr(cd, "Events", lambda: FakeEvents(d))
    # The stand-in has no L2 to evict: the harness still flushes before every timed launch, on a
    # 64 KiB buffer instead of 256 MiB (which cost 15 s a test in byte copies, nothing checked).
    monkeypatch.setattr(hz, "FLUSH_BYTES", 64 << 10)
    monkeypatch.setattr(hz.Harness, "_same", lambda self, a, b, n: bytes(d._at(a, n)) == bytes(d._at(b, n)))  # fmt: skip
    d.near_checks = 0

    def near_on_host(self, near, b):  # the GPU's beyond_tol_f32, by compare.py's own rule
        d.near_checks += 1
        got = d.array(b.ptr, b.length)
        return compare(b.param.name, b.dt, near.expected[b.param.name], got, poison(b.dt, 1),
                       near.tol).passed  # fmt: skip

    monkeypatch.setattr(hz.Harness, "_near", near_on_host)
    return d


# -- the stand-in kernels: c = a + b, honest or not (args: a, b, c pointers, n) ---------------


def honest(dev, args):
    a, b, c, n = args
    dev.array(c, n)[:] = dev.array(a, n) + dev.array(b, n)
    return n * NS_PER_ELEMENT


def skips_when_done(dev, args):
    a, b, c, n = args
    if dev.array(c, n)[n - 1] == dev.array(a, n)[n - 1] + dev.array(b, n)[n - 1]:
        return 10 * NS_PER_ELEMENT  # read three floats, stop
    return honest(dev, args)


def caches_in_global(dev, args):
    flag = dev.array(dev.globals["computed_once"], 1, np.uint32)
    if flag[0]:
        return 10 * NS_PER_ELEMENT
    cost = honest(dev, args)
    flag[0] = 1
    return cost


def wrong_from_the_second_launch(dev, args):
    a, b, c, n = args
    wrong_from_the_second_launch.calls += 1
    cost = honest(dev, args)
    if wrong_from_the_second_launch.calls > 1:
        dev.array(c, n)[: n // 2] = 0.0
    return cost


wrong_from_the_second_launch.calls = 0


def skips_but_pays_for_its_blocks(dev, args):
    """The H200's planted cheater: 131072 blocks that each read three floats and stop still cost
    0.64x the honest launch (their own launch and exit), not 1 %."""
    a, b, c, n = args
    if dev.array(c, n)[n - 1] == dev.array(a, n)[n - 1] + dev.array(b, n)[n - 1]:
        return 0.64 * n * NS_PER_ELEMENT
    return honest(dev, args)


def jittery_honest(dev, args):
    """Honest, with launch-to-launch spread of a few percent (as on a real GPU)."""
    jittery_honest.calls += 1
    return honest(dev, args) * (1 + 0.03 * ((jittery_honest.calls * 7) % 5 - 2) / 2)


jittery_honest.calls = 0


def last_bits_differ(dev, args):
    """Like a look-back scan or a float atomic sum: right, but not the same bits every time."""
    a, b, c, n = args
    last_bits_differ.calls += 1
    cost = honest(dev, args)
    out = dev.array(c, n)
    out[:] = out * np.float32(1 + 1e-6 * (last_bits_differ.calls % 3))
    return cost


last_bits_differ.calls = 0


def _spec() -> TestSpec:
    return TestSpec(
        "vec_add",
        [
            ParamSpec("a", "in", "f32"),
            ParamSpec("b", "in", "f32"),
            ParamSpec("c", "out", "f32"),
            ParamSpec("n", "size", "i32"),
        ],  # fmt: skip
        LaunchSpec(),
        sizes=[N],
        numpy_ref="c = a + b",
    )


def _run(dev, kernel, globals_: tuple[str, ...] = (), hidden: tuple[str, ...] = ()):
    for name in globals_:
        dev.globals[name] = dev.alloc(4)  # zero at "load"
    h = hz.Harness(None, lambda msg: None)
    h.copy_ceiling_gbps = 4000.0  # no copy measurement on the stand-in
    state = hz.ModuleState("module", [*globals_, *hidden])
    cases: list[dict] = []
    req = {"spec": _spec().to_dict(), "reference": {"kind": "numpy", "expr": "c = a + b"},
           "seed": 3, "time": True}  # fmt: skip
    h.run(req, kernel, None, cases, state)
    return cases[0]


def test_an_honest_kernel_is_timed_and_not_flagged(dev):
    case = _run(dev, honest)
    assert case["passed"], case["messages"]
    assert case["time_ms"] == pytest.approx(N * NS_PER_ELEMENT)
    assert case["timing"]["runs"] == 20 and not case["timing"].get("flags")
    assert case["timing"]["rerun_ms"] == pytest.approx(case["time_ms"])


def test_skipping_work_when_the_output_holds_the_answer_gets_no_speedup_and_is_flagged(dev):
    case = _run(dev, skips_when_done)
    assert case["passed"], case["messages"]
    # every timed launch started from poisoned outputs: it had to do the whole job
    assert case["time_ms"] == pytest.approx(N * NS_PER_ELEMENT)
    [flag] = case["timing"]["flags"]
    assert "faster when launched again on its own previous output" in flag


def test_a_module_global_cache_is_reset_before_each_launch_and_flagged(dev):
    case = _run(dev, caches_in_global, globals_=("computed_once",))
    assert case["passed"], case["messages"]
    assert case["time_ms"] == pytest.approx(N * NS_PER_ELEMENT)
    assert case["timing"]["globals_written"] == ["computed_once"]
    assert any("skips work" in f for f in case["timing"]["flags"])


def test_a_global_the_driver_cannot_locate_means_no_time(dev):
    case = _run(dev, honest, hidden=("somewhere",))
    assert case["passed"] and case["time_ms"] is None and case["gbps"] is None
    assert "somewhere cannot be reset between launches" in case["timing"]["flags"][0]


def test_every_timed_launch_is_checked(dev):
    wrong_from_the_second_launch.calls = 0
    case = _run(dev, wrong_from_the_second_launch)
    assert not case["passed"] and case["time_ms"] is None
    assert any("wrong in the timed runs (timed launch" in m for m in case["messages"])


def test_a_timed_output_that_differs_only_within_the_tolerance_is_right(dev):
    # checked against the reference (on the GPU in the worker), not failed for differing bits
    last_bits_differ.calls = 0
    case = _run(dev, last_bits_differ)
    assert case["passed"], case["messages"]
    assert case["time_ms"] == pytest.approx(N * NS_PER_ELEMENT)
    assert not case["timing"].get("flags")
    assert dev.near_checks >= 10  # the launches whose bits differed from the verified one's


def test_a_cheater_whose_reruns_still_cost_block_launches_is_flagged(dev):
    case = _run(dev, skips_but_pays_for_its_blocks)
    assert case["passed"], case["messages"]
    assert case["time_ms"] == pytest.approx(N * NS_PER_ELEMENT)  # no speedup
    [flag] = case["timing"]["flags"]
    assert "1.6× faster when launched again on its own previous output" in flag


def test_an_honest_kernel_with_launch_to_launch_spread_is_not_flagged(dev):
    jittery_honest.calls = 0
    case = _run(dev, jittery_honest)
    assert case["passed"], case["messages"]
    assert case["timing"]["min_ms"] < case["timing"]["max_ms"]  # the spread is there
    assert not case["timing"].get("flags"), case["timing"]


def writes_its_input(dev, args):
    """Right output, but a scribbles over input a (a kernel that uses its input as scratch)."""
    a, b, c, n = args
    cost = honest(dev, args)
    dev.array(a, n)[n // 2] = 7.0
    return cost


def writes_its_input_when_timed(dev, args):
    """Honest, but its last timed launch (after the verified one and the warm-up) writes
    input b once its output is done: every timed output is right, only the input shows it."""
    writes_its_input_when_timed.calls += 1
    cost = honest(dev, args)
    if writes_its_input_when_timed.calls == 2 + _spec().timing_runs:
        a, b, c, n = args
        dev.array(b, n)[3] = 7.0
    return cost


writes_its_input_when_timed.calls = 0


def test_an_input_the_kernel_writes_fails_the_case_with_the_changed_element(dev):
    # the unchanged check runs on the device against the input's pristine copy; a difference
    # falls back to the host comparison, which names the element
    case = _run(dev, writes_its_input)
    assert not case["passed"]
    assert any(f"input a was modified: 1 of {N} elements changed (first at {N // 2})" in m
               for m in case["messages"])  # fmt: skip


def test_an_input_written_only_by_the_timed_launches_gets_no_time(dev):
    writes_its_input_when_timed.calls = 0
    case = _run(dev, writes_its_input_when_timed)
    assert not case["passed"] and case["time_ms"] is None
    assert any("after the timed launches: input b was modified" in m for m in case["messages"])
