"""How a candidate of an eval task is tested: one self-contained request (the PTX, the task's
spec.json and reference.cu as text, or its Triton source) run by the GPU-test harness — here,
through a pool of local test workers (one per GPU, or emulator workers on the CPU), or on a Ray
cluster (``ray_pool.py``), which runs the very same ``execute`` there.

The spec always comes from the task, never from the candidate (the loop also drops any
``@gputest`` line a reply carries). The numpy ``ref:`` of spec.json checks the result; nvcc -O3
of reference.cu is timed beside it (the speedup's baseline). A Triton task is checked against
the Triton kernel itself, launched by Triton.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ptxls.lowering.verify import GpuVerifier, VerifyResult

from .suite import Task

if TYPE_CHECKING:
    from ptxls.gputest.build import Assembled

DEFAULT_TEST_TIMEOUT_S = 10.0  # per launch, as `ptxls test`


def device_option_supported() -> bool:
    """Whether this ptxls's GPU test takes ``device`` ("auto" | "gpu" | "cpu": the CPU emulator)."""
    from ptxls.gputest.api import GpuTestOptions

    return "device" in {f.name for f in dataclasses.fields(GpuTestOptions)}


def test_request(task: Task, ptx: str, *, device: str, sizes: list[int] | None = None,
                 timeout_s: float = DEFAULT_TEST_TIMEOUT_S, seed: int | None = None,
                 shared: int = 0) -> dict:  # fmt: skip
    """Everything a test needs, as JSON: it can travel to another machine (Ray)."""
    req = {"task": task.name, "kernel": task.kernel, "ptx": ptx, "device": device,
           "sizes": sizes, "timeout_s": timeout_s, "seed": seed, "shared": shared}  # fmt: skip
    if task.source_kind == "triton":
        req["triton_source"] = task.source_text()
        req["triton_file"] = task.source_file
    else:
        req["spec_json"] = task.spec_path.read_text(encoding="utf-8") if task.spec_path else ""
        ref = task.reference_cu
        req["reference_cu"] = ref.read_text(encoding="utf-8") if ref else ""
    return req


async def execute(req: dict, supervisor=None, assembled=None) -> dict:
    """Run one test request; returns the loop's VerifyResult as a dict plus ``device_kind``
    ("gpu", "emulator" or "none") and the harness's ``status``. Never raises on bad PTX."""
    from ptxls.gputest import api
    from ptxls.gputest.report import ERROR, SPEC_ERROR
    from ptxls.lowering.verify import from_report

    device = req.get("device", "auto")
    opts: dict = {"timeout_s": req.get("timeout_s") or DEFAULT_TEST_TIMEOUT_S}
    if supervisor is not None:
        opts["emulator_supervisor" if device == "cpu" else "supervisor"] = supervisor
    if req.get("sizes"):
        opts["sizes"] = list(req["sizes"])
    if req.get("seed") is not None:
        opts["seed"] = req["seed"]
    known = _option_names()
    opts = {k: v for k, v in opts.items() if k in known}
    if "device" in known:
        opts["device"] = device
    kernel, ptx = req["kernel"], req["ptx"]
    if req.get("triton_source"):
        from ptxls.gputest.spec_source import SpecSource, resolve_spec

        wanted = SpecSource("triton", req["triton_source"], kernel, req.get("triton_file") or "kernel.py")  # fmt: skip
        res = await asyncio.to_thread(resolve_spec, wanted)
        spec, problems, build = res.spec, res.problems, res.build
        if spec is None or problems or build is None:
            why = "; ".join(str(p) for p in problems) or "no spec"
            return _untested(f"the Triton task has no usable spec ({why})")
        if req.get("shared"):
            spec.launch.shared = str(req["shared"])
        # Triton launches its kernel only on a GPU: the emulator checks against the numpy ref:
        triton_ref = None if device == "cpu" and spec.numpy_ref else build.to_json()
        report = await api.run_gpu_test(ptx, kernel, spec, triton_reference=triton_ref,
                                        assembled=assembled, **opts)  # fmt: skip
    else:
        spec_json = req["spec_json"]
        if device == "cpu":
            # the emulator has no clock: no baseline to time, so nvcc's build is not run there
            d = json.loads(spec_json)
            d.pop("reference", None)
            spec_json = json.dumps(d)
        folder = Path(tempfile.mkdtemp(prefix="ptxls-eval-"))
        try:
            (folder / "spec.json").write_text(spec_json, encoding="utf-8")
            (folder / "reference.cu").write_text(req.get("reference_cu", ""), encoding="utf-8")
            report = await api.run_gpu_test(ptx, kernel, spec_path=str(folder / "spec.json"),
                                            assembled=assembled, **opts)  # fmt: skip
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    emulated = (report.device or {}).get("kind") == "emulator"
    if report.status == SPEC_ERROR:
        # the suite's specs are verified (the nvcc row): a spec that does not fit the
        # candidate's .entry is the candidate's interface, never a reason to pass it untested
        return interface_failure([str(p) for p in report.problems] or [report.summary])
    if emulated and report.status == ERROR:
        # the emulator could not run it (an instruction it does not emulate yet, a Triton
        # reference): not checked, so no better than compile-only — and no fault of the PTX
        return _untested(f"the CPU emulator could not run it: {report.summary}"[:400],
                         status="emulator-refused")  # fmt: skip
    v = from_report(report)
    kind = "none"
    if report.cases and report.status != ERROR:
        kind = "emulator" if emulated else "gpu" if v.tested else "none"
    out = dataclasses.asdict(v)
    out["device_kind"] = kind
    out["status"] = report.status
    out["device_name"] = "CPU emulator" if emulated else str((report.device or {}).get("name", ""))
    return out


def _option_names() -> set[str]:
    from ptxls.gputest.api import GpuTestOptions

    return {f.name for f in dataclasses.fields(GpuTestOptions)}


def _untested(why: str, status: str = "spec-error") -> dict:
    return dataclasses.asdict(VerifyResult(ok=True, tested=False, summary=f"not tested ({why})")) | {
        "device_kind": "none", "status": status, "device_name": ""}  # fmt: skip


def interface_failure(problems: list[str]) -> dict:
    text = "; ".join(problems)[:600]
    feedback = ("The PTX assembles, but its .entry does not match the kernel the test calls:\n- "
                + "\n- ".join(problems))  # fmt: skip
    v = VerifyResult(ok=False, tested=False, summary=f"interface: {text}", feedback=feedback)
    return dataclasses.asdict(v) | {
        "device_kind": "none",
        "status": "spec-error",
        "device_name": "",
    }


def interface_problems_of(req: dict) -> list[str]:
    """The harness's own check of a candidate's .entry against the task's spec.json, with no
    GPU: the parameters' count, kinds and widths (what every GPU test checks first)."""
    if req.get("triton_source") or not req.get("spec_json"):
        return []
    from ptxls.gputest.library_spec import library_resolution

    folder = Path(tempfile.mkdtemp(prefix="ptxls-eval-"))
    try:
        (folder / "spec.json").write_text(req["spec_json"], encoding="utf-8")
        (folder / "reference.cu").write_text(req.get("reference_cu", ""), encoding="utf-8")
        res = library_resolution(req["ptx"], req["kernel"], folder / "spec.json", explicit=True)
        return [str(p) for p in res.problems]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def local_gpu_count() -> int:
    """GPUs this machine offers to test workers: CUDA_VISIBLE_DEVICES when set, else what
    nvidia-smi lists (0 without one)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([d for d in visible.split(",") if d.strip() and d.strip() != "-1"])
    smi = shutil.which("nvidia-smi")
    if not smi:
        return 0
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


class WorkerPool(Protocol):
    """Where the run's GPU tests go: ``LocalTestPool``, ``ray_pool.RayTestPool`` or
    ``CompileOnlyPool``. ``run`` takes a ``test_request`` and answers the worker's reply."""

    size: int
    busy_s: float

    async def run(self, req: dict[str, Any], assembled: Assembled | None = None) -> dict: ...

    async def close(self) -> None: ...

    def describe(self) -> str: ...


class LocalTestPool:
    """Test workers on this machine: one per GPU (each sees only its own), or ``workers``
    emulator workers on the CPU. A test waits for a free worker; workers stay warm."""

    def __init__(self, workers: int, *, per_gpu: bool):
        from ptxls.gputest import supervisor as sv

        self.size = max(1, workers)
        self._free: asyncio.Queue = asyncio.Queue()
        self._all = []
        for i in range(self.size):
            env = None
            if per_gpu and self.size > 1:
                visible = os.environ.get("CUDA_VISIBLE_DEVICES")
                ids = (
                    [d.strip() for d in visible.split(",")]
                    if visible
                    else [str(i) for i in range(self.size)]
                )
                env = dict(os.environ, CUDA_VISIBLE_DEVICES=ids[i])
            sup = sv.Supervisor(None if per_gpu else _emulator_command(), env=env)
            self._all.append(sup)
            self._free.put_nowait(sup)
        self.busy_s = 0.0

    async def run(self, req: dict, assembled=None) -> dict:
        sup = await self._free.get()
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        try:
            return await execute(req, sup, assembled)
        finally:
            self.busy_s += loop.time() - t0
            self._free.put_nowait(sup)

    async def close(self) -> None:
        for sup in self._all:
            with contextlib.suppress(Exception):  # best effort: the workers die with us anyway
                await sup.close()

    def describe(self) -> str:
        return f"{self.size} local test worker(s)"


def _emulator_command() -> list[str]:
    """The command of the CPU emulator's test worker (gputest/supervisor.py)."""
    from ptxls.gputest import supervisor as sv

    try:
        return sv.default_command("cpu")
    except TypeError:  # a ptxls whose worker has no emulator: the GPU worker's
        return sv.default_command()


class EvalVerifier(GpuVerifier):
    """The loop's verifier for one task: each candidate through the pool with the task's spec.
    A ``GpuVerifier`` (spec from the task), so the loop's racecheck step can run with it."""

    wants_cubin = True

    def __init__(self, task: Task, pool: WorkerPool, *, device: str, sizes: list[int] | None,
                 timeout_s: float, spec=None, seed: int | None = None):  # fmt: skip
        super().__init__(spec, {})
        self.task, self.pool, self.device = task, pool, device
        self.sizes, self.timeout_s, self.seed = sizes, timeout_s, seed
        self.calls: list[dict] = []

    async def __call__(self, ptx: str, kernel: str, candidate=None) -> VerifyResult:
        req = test_request(self.task, ptx, device=self.device, sizes=self.sizes,
                           timeout_s=self.timeout_s, seed=self.seed)  # fmt: skip
        req["kernel"] = kernel or self.task.kernel
        assembled = (
            candidate.assembled() if candidate is not None and self.pool_takes_cubin else None
        )
        out = await self.pool.run(req, assembled)
        self.calls.append(out)
        return as_verify_result(out)

    @property
    def pool_takes_cubin(self) -> bool:
        return isinstance(self.pool, LocalTestPool)


def as_verify_result(out: dict) -> VerifyResult:
    fields = {f.name for f in dataclasses.fields(VerifyResult)}
    v = VerifyResult(**{k: out[k] for k in fields if k in out})
    v.details = dict(v.details or {}, device_kind=out.get("device_kind", "none"),
                     status=out.get("status", ""), device_name=out.get("device_name", ""))  # fmt: skip
    return v


class CompileOnlyPool:
    """No GPU and no emulator: nothing runs; every ptxas-clean candidate with the right
    interface passes as compile-only, and says why."""

    size = 0
    busy_s = 0.0

    def __init__(self, why: str):
        self.why = why

    async def run(self, req: dict, assembled=None) -> dict:
        problems = await asyncio.to_thread(interface_problems_of, req)
        if problems:
            return interface_failure(problems)
        return _untested(self.why, status="compile-only")

    async def close(self) -> None:
        return None

    def describe(self) -> str:
        return f"compile-only ({self.why})"
