"""An eval run: every (task, row, sample) job not yet recorded in the run directory, run
concurrently and recorded as it finishes.

Rows: ``llm`` runs the lowering loop (``lowering.service.lower_llm``, the editor's own loop)
``samples`` times per task with the configured endpoint; ``nvcc`` tests nvcc's PTX of the task's
reference.cu and ``triton`` Triton's PTX of a Triton task — the baselines, from the same run and
the same test workers. At most ``concurrency`` lowerings run at once and share one client
(``clients.SharedClient``); tests wait for a free test worker (``testing.LocalTestPool``, or
Ray's, ``ray_pool.RayTestPool``). A replay (``replay_from``) runs the same jobs with each
sample's recorded replies instead of a model.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as _dt
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ptxls.fewshot.retrieve import evaluating
from ptxls.lowering import transcript as transcript_io
from ptxls.lowering.settings import LlmSettings

from .records import RunDir, SampleRecord
from .suite import Task, excluded_examples
from .testing import (
    DEFAULT_TEST_TIMEOUT_S,
    CompileOnlyPool,
    EvalVerifier,
    LocalTestPool,
    WorkerPool,
    as_verify_result,
    device_option_supported,
    local_gpu_count,
    test_request,
)
from .verdict import failure_category, token_counts

if TYPE_CHECKING:
    from ptxls.lowering.nvcc_reference import NvccLowering
    from ptxls.lowering.triton_reference import TritonLowering

    from .clients import ReplayClient, SharedClient


@dataclass
class EvalOptions:
    run_dir: Path
    tasks: list[Task]
    samples: int = 1
    rows: tuple[str, ...] = ("llm", "nvcc", "triton")
    device: str = "auto"  # "gpu", "cpu" (the emulator), "auto", or "none" (compile-only)
    concurrency: int = 8  # lowerings (and so model requests) in flight
    test_workers: int | None = None  # None: one per GPU, or one per core for the emulator
    ray_address: str | None = None  # "local" starts a local Ray cluster
    arch: str = "sm_90"
    timeout_s: float = DEFAULT_TEST_TIMEOUT_S
    racecheck: bool = False  # compute-sanitizer racecheck on passing candidates (GPU only)
    replay_from: Path | None = None  # a run directory whose transcripts answer instead of a model
    redo: tuple[str, ...] = ()  # categories of recorded failures to run again (e.g. endpoint-error)


@dataclass
class RunInfo:
    pool: str = ""
    device: str = ""  # "gpu", "emulator" or "compile-only"
    wall_s: float = 0.0
    jobs: int = 0
    skipped: int = 0  # already recorded (a resumed run)
    test_busy_s: float = 0.0
    notes: list[str] = field(default_factory=list)


Progress = Callable[[SampleRecord, int, int], None]  # record, done, total


async def make_pool(opts: EvalOptions) -> tuple[WorkerPool, str, str, list[str]]:
    """(pool, device value for the tests, "gpu"|"emulator"|"compile-only", notes)."""
    if opts.ray_address:
        from .ray_pool import RayTestPool

        ray_pool = await RayTestPool.start(opts.ray_address, opts.device, opts.test_workers)
        return ray_pool, ray_pool.test_device, ray_pool.kind, [ray_pool.describe()]
    want = opts.device
    if want == "none":
        why = "compile-only was asked (--device none)"
        return CompileOnlyPool(why), "auto", "compile-only", [f"compile-only: {why}"]
    if want in ("auto", "gpu"):
        gpus = local_gpu_count()
        if gpus:
            pool = LocalTestPool(opts.test_workers or gpus, per_gpu=True)
            from ptxls.gputest.api import gpu_available

            ok, why = await gpu_available(pool._all[0])
            if ok:
                return pool, "gpu", "gpu", [f"{pool.size} GPU test worker(s): {why}"]
            await pool.close()
            reason = why
        else:
            reason = "no CUDA device (nvidia-smi lists none)"
        if want == "gpu":
            raise NoDevice(reason)
    else:
        reason = "the CPU emulator was asked for"
    if device_option_supported():
        workers = opts.test_workers or max(1, (os.cpu_count() or 2) - 1)
        pool = LocalTestPool(workers, per_gpu=False)
        return pool, "cpu", "emulator", [f"{workers} CPU emulator test worker(s) ({reason})"]
    if want == "cpu":
        raise NoDevice("this ptxls has no CPU emulator for GPU tests")
    why = f"{reason}; no CPU emulator in this ptxls"
    return CompileOnlyPool(why), "auto", "compile-only", [f"compile-only: {why}"]


class NoDevice(Exception):
    pass


class Runner:
    def __init__(self, opts: EvalOptions, settings: LlmSettings, progress: Progress | None = None):
        self.opts, self.settings = opts, settings
        self.run = RunDir(opts.run_dir)
        self.progress = progress or (lambda _r, _d, _t: None)
        self.info = RunInfo()
        self.pool: WorkerPool | None = None  # made by execute()
        self.client: SharedClient | None = None
        self.test_device = "auto"

    def jobs(self) -> list[tuple[Task, str, int]]:
        out = []
        for t in self.opts.tasks:
            if "nvcc" in self.opts.rows and t.reference_cu is not None:
                out.append((t, "nvcc", 0))
            if "triton" in self.opts.rows and t.source_kind == "triton":
                out.append((t, "triton", 0))
        for i in range(self.opts.samples):
            out += [(t, "llm", i) for t in self.opts.tasks if "llm" in self.opts.rows]
        return out

    def _done(self, task: Task, row: str, i: int) -> bool:
        path = self.run.record_path(task.name, row, i)
        if not path.is_file():
            return False
        if not self.opts.redo:
            return True
        try:
            rec = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        return rec.get("passed") or rec.get("category") not in self.opts.redo

    async def execute(self) -> list[SampleRecord]:
        started = time.monotonic()
        self._write_config()
        todo = [j for j in self.jobs() if not self._done(*j)]
        self.info.jobs, self.info.skipped = len(todo), len(self.jobs()) - len(todo)
        self.pool, self.test_device, self.info.device, notes = await make_pool(self.opts)
        self.info.pool, self.info.notes = self.pool.describe(), notes
        if any(row == "llm" for _t, row, _i in todo) and self.opts.replay_from is None:
            from ptxls.lowering.llm_client import LlmClient

            from .clients import SharedClient

            self.client = SharedClient(LlmClient(self.settings), self.opts.concurrency)
        gate = asyncio.Semaphore(max(1, self.opts.concurrency))
        done = [self.info.skipped]
        total = len(self.jobs())

        async def one(job):
            async with gate:
                rec = await self._job(*job)
            self.run.write(rec)
            done[0] += 1
            self.progress(rec, done[0], total)

        try:
            with evaluating(excluded_examples(self.opts.tasks)):
                await asyncio.gather(*(one(j) for j in todo))
        finally:
            self.info.test_busy_s = self.pool.busy_s
            await self.pool.close()
            if self.client is not None:
                await self.client.aclose()
            from ptxls.lowering.service import close_gpu_worker

            await close_gpu_worker()
            self.info.wall_s = time.monotonic() - started
        return self.run.records()

    def _write_config(self) -> None:
        previous = self.run.read_config() or {}
        config = {
            "tasks": sorted({t.name for t in self.opts.tasks} | set(previous.get("tasks", []))),
            "samples": max(self.opts.samples, previous.get("samples", 0)),
            "rows": list(self.opts.rows),
            "settings": self.settings.public_dict(),
            "device": self.opts.device,
            "arch": self.opts.arch,
            "started": previous.get("started") or _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "replay_of": str(self.opts.replay_from) if self.opts.replay_from else None,
        }  # fmt: skip
        self.run.write_config(config)

    async def _job(self, task: Task, row: str, i: int) -> SampleRecord:
        t0 = time.monotonic()
        rec = SampleRecord(task.name, row, i, family=task.family)
        try:
            if row == "llm":
                await self._llm_sample(task, i, rec)
            else:
                await self._compiler_sample(task, row, rec)
        except Exception as e:  # a tool's failure is the sample's verdict, not the run's end
            rec.passed, rec.category = False, "not-run"
            rec.message = f"{type(e).__name__}: {e}"[:500]
        rec.wall_s = time.monotonic() - t0
        return rec

    def _sizes(self, task: Task) -> list[int] | None:
        return list(task.emulator_sizes) or None if self.info.device == "emulator" else None

    def _source_copy(self, task: Task) -> Path:
        """The task's source inside the run directory: the lowering's workspace, so its
        transcripts and attempts land in the run directory too."""
        dest = self.run.path / "sources" / task.name / task.source_file
        if not dest.is_file():
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(task.source_path, dest)
        return dest

    async def _llm_sample(self, task: Task, i: int, rec: SampleRecord) -> None:
        from ptxls.lowering.service import LowerJob, lower_llm

        path = self._source_copy(task)
        text = path.read_text(encoding="utf-8")
        seed = None if self.settings.seed is None else self.settings.seed + 1000 * i
        settings = dataclasses.replace(self.settings, seed=seed, arch=self.opts.arch)
        job = LowerJob(source_path=path, text=text, kernel=task.kernel, workspace=self.run.path,
                       arch=self.opts.arch,
                       describe=text.strip() if task.source_kind == "request" else None)  # fmt: skip
        spec = _task_spec(task) if self.opts.racecheck else None
        assert self.pool is not None  # execute() made it before any job
        verifier = EvalVerifier(task, self.pool, device=self.test_device, sizes=self._sizes(task),
                                timeout_s=self.opts.timeout_s, spec=spec)  # fmt: skip
        client: SharedClient | ReplayClient | None = self.client
        if self.opts.replay_from is not None:
            client = self._replay_client(task, i, seed)
            if client is None:
                rec.category, rec.message = "not-run", "no transcript of this sample to replay"
                return
        outcome = await lower_llm(job, settings, verifier=verifier, client=client)
        rec.transcript = self.run.relative(outcome.transcript)
        if outcome.transcript and Path(outcome.transcript).is_file():
            for k, v in token_counts(transcript_io.read(outcome.transcript)).items():
                setattr(rec, k, v)
        loop = outcome.loop
        rec.message = outcome.message[:500]
        if outcome.ok and loop is not None and loop.best is not None:
            v = loop.best.verify
            rec.passed = True
            rec.rounds = len(loop.best.rounds)
            rec.verified = _level(v)
            rec.kernel_ms, rec.reference_ms = (
                v.kernel_ms if v else None,
                v.reference_ms if v else None,
            )
            rec.device = (v.details or {}).get("device_name", "") if v else ""
        else:
            rec.category = failure_category(loop, outcome.message)

    def _replay_client(self, task: Task, i: int, seed: int | None) -> ReplayClient | None:
        from .clients import ReplayClient

        assert self.opts.replay_from is not None  # called only when replaying
        old = RunDir(self.opts.replay_from)
        path = old.record_path(task.name, "llm", i)
        try:
            recorded = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        tpath = old.path / recorded.get("transcript", "")
        if not recorded.get("transcript") or not tpath.is_file():
            return None
        return ReplayClient(transcript_io.read(tpath), seed)

    async def _compiler_sample(self, task: Task, row: str, rec: SampleRecord) -> None:
        shared = 0
        res: NvccLowering | TritonLowering
        if row == "nvcc":
            from ptxls.lowering.nvcc_reference import lower_with_nvcc

            ref = task.reference_cu
            assert ref is not None  # jobs() gives the nvcc row only to a task with one
            res = await lower_with_nvcc(ref.read_text(encoding="utf-8"), file_path=str(ref),
                                        kernel=task.kernel, arch=self.opts.arch)  # fmt: skip
        else:
            from ptxls.lowering.triton_reference import lower_with_triton

            triton = await lower_with_triton(task.source_text(), file_path=str(task.source_path),
                                             kernel=task.kernel, arch=self.opts.arch)  # fmt: skip
            shared = int((triton.metadata or {}).get("shared", 0) or 0)
            res = triton
        if not res.ok:
            rec.category, rec.message = "ptxas-error", f"{row}: {res.message}"[:500]
            return
        ptx_path = self.run.path / "baselines" / f"{task.name}.{row}.ptx"
        ptx_path.parent.mkdir(parents=True, exist_ok=True)
        ptx_path.write_text(res.ptx, encoding="utf-8")
        rec.ptx = self.run.relative(ptx_path)
        req = test_request(task, res.ptx, device=self.test_device, sizes=self._sizes(task),
                           timeout_s=self.opts.timeout_s, shared=shared)  # fmt: skip
        req["kernel"] = res.entry or task.kernel
        assert self.pool is not None  # execute() made it before any job
        v = as_verify_result(await self.pool.run(req))
        rec.rounds = 1
        rec.message = v.summary[:500]
        rec.device = v.details.get("device_name", "")
        if v.ok:
            rec.passed, rec.verified = True, _level(v)
            rec.kernel_ms, rec.reference_ms = v.kernel_ms, v.reference_ms
        else:
            from .verdict import gpu_failure_category

            rec.category = gpu_failure_category(v.summary, v.feedback)


def _level(v) -> str:
    kind = (v.details or {}).get("device_kind") if v is not None else None
    if kind == "emulator":
        return "emulator"
    return "gpu" if kind == "gpu" and v.tested else "compile-only"


def _task_spec(task: Task):
    from ptxls.gputest.spec import spec_from_json

    if task.spec_path is None:
        return None
    spec, problems = spec_from_json(task.spec_path.read_text(encoding="utf-8"), str(task.spec_path))
    return spec if spec is not None and not problems else None
