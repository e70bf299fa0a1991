"""The GPU worker: ``python -m ptxls.gputest.worker``. One JSON object per line on stdin, one
reply per line on stdout; ``{"progress": "..."}`` lines come before a reply so the supervisor
knows which case is running (and can restart its clock: a timeout is per step).

Requests:
  {"op": "hello"}  → {"ok": true, "device": {...}} or {"ok": false, "no_device": "why"}
  {"op": "run", "spec": {...}, "seed": 1, "time": true,
   "kernel": {"name": "vec_add", "cubin_path": "/tmp/x.cubin" | null, "ptx": "..." | null,
              "assembler": "ptxas 13.5 (...)", "globals": ["counter"] (optional: the module's
              .global variables, when the parent has parsed the PTX)},
   "reference": {"kind": "cuda", "name": "_Z7vec_addPKfS0_Pfi", "cubin_path": "..."}
              | {"kind": "numpy", "expr": "c = a + b"} | {"kind": "self"},
   "baseline": {"name": "...", "cubin_path": "..."} (optional: nvcc build timed beside a numpy
              reference), "torch": {"op": ..., "inputs": [...], "dims": [...]} (optional)}
       → {"ok": true, "result": {...}} or {"ok": false, "error": "...", "sticky": bool, ...}
  {"op": "exit"}

A CUDA error after which the context is dead is answered with ``"sticky": true`` and the worker
exits: only a new process gets a working context again (docs/gpu-facts.md).

``python -m ptxls.gputest.worker --device cpu`` is the same worker on the CPU emulator
(emulator/device.py: the driver's functions, no clock): it never imports cuda-python, loads every
module from its PTX (``kernel.ptx``; a CUDA reference or baseline as nvcc's PTX, ``"ptx"`` beside
its ``"name"``), times nothing, and answers a launch that ran out of its budget with
``"hang": "..."`` (the supervisor's timeout, decided by the emulator) and an instruction it does
not implement with ``"refused": "..."``. ``"budget"`` in a run request: thread-instructions per
launch.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

from ptxls.frontend.ptx import module_globals

if TYPE_CHECKING:
    from .harness import Harness

_proto = sys.stdout  # replaced in main() by a private copy of fd 1


def _send(obj: dict) -> None:
    _proto.write(json.dumps(obj) + "\n")
    _proto.flush()


class _Context(Protocol):
    """What the worker asks of a driver's ``Context`` (cuda_driver's or the emulator's)."""

    def info(self) -> dict[str, Any]: ...


class Worker:
    def __init__(self, device: str = "gpu"):
        self.ctx: _Context | None = None
        self.harness: Harness | None = None
        self.no_device: str | None = None
        self.device = device  # "gpu" (cuda_driver) or "cpu" (emulator/device.py)
        # the driver module the harness runs on (gputest/cuda_driver.py or emulator/device.py:
        # the same functions, picked at run time)
        self.cd: ModuleType | None = None

    def ensure_context(self) -> bool:
        if self.ctx is not None:
            return True
        if self.no_device is not None:
            return False
        try:
            from .harness import Harness

            cd: ModuleType
            if self.device == "cpu":
                from ptxls.emulator import device as cd
            else:
                from . import cuda_driver as cd
            self.ctx = cd.Context()
            self.cd = cd
            self.harness = Harness(
                self.ctx,
                lambda msg: _send({"progress": msg}),
                lambda case: _send(
                    {"progress": f"case n={case['n']} done", "case": self._cost(case)}
                ),  # fmt: skip
                driver=cd,
            )
            return True
        except Exception as e:  # every way of having no GPU becomes a reason
            self.no_device = no_device_reason(e)
            return False

    _ran = 0  # the emulator's thread-instructions before the current case
    _steps = 0  # and its scheduler steps
    _work = 0  # and its thread work (simt.cost_of)

    def _cost(self, case: dict) -> dict:
        """On the emulator: the thread-instructions the case ran (the caller sizes the next
        case from them)."""
        if self.device == "cpu":
            assert self.cd is not None  # the harness runs only once ensure_context set it
            total = self.cd.statistics()["thread_instructions"]
            case["thread_instructions"], self._ran = total - self._ran, total
            stats = self.cd.statistics()  # its scheduler steps and work, likewise
            steps, work = stats.get("steps", 0), stats.get("thread_work", 0)
            case["steps"], self._steps = steps - self._steps, steps
            case["thread_work"], self._work = work - self._work, work
        return case

    def hello(self, req: dict) -> dict:
        if not self.ensure_context():
            return {"ok": False, "no_device": self.no_device}
        assert self.ctx is not None  # ensure_context set it
        return {"ok": True, "device": self.ctx.info(), "pid": os.getpid()}

    def run(self, req: dict) -> dict:
        from .harness import CaseError, ModuleState

        if not self.ensure_context():
            return {"ok": False, "no_device": self.no_device}
        cd, ctx, harness = self.cd, self.ctx, self.harness
        assert cd is not None and ctx is not None and harness is not None  # ensure_context set them
        if self.device == "cpu":
            # a fresh emulated memory per test: freed buffers are not reused, and a warm worker
            # (the editor's) would otherwise grow with every test
            cd.reset()
            cd.set_budget(req.get("budget") or cd.DEFAULT_BUDGET, req.get("hang_seconds"))
            cd.take_findings()  # nothing from an earlier request
            self._ran = cd.statistics()["thread_instructions"]
            self._steps = cd.statistics().get("steps", 0)
            self._work = cd.statistics().get("thread_work", 0)
        modules: list[Any] = []  # the driver's module handles
        cases: list[dict] = []
        load: dict = {}
        try:
            kernel_fn, load = self._load(req["kernel"], modules)
            if kernel_fn is None:
                return {"ok": False, "error": load["error"], "sticky": False,
                        "result": {"cases": [], "load": load}}  # fmt: skip
            ref_fn = None
            ref = req["reference"]
            if ref["kind"] == "cuda":
                ref_mod = self._load_build(ref)
                modules.append(ref_mod)
                ref_fn = cd.get_function(ref_mod, ref["name"])
                if ref.get("extra_params"):  # Triton's own PTX on the emulator: its scratch
                    ref_fn = cd.with_null_params(ref_fn, ref["extra_params"])
            elif ref["kind"] == "triton":
                from .triton_ref import TritonReference

                ref_fn = TritonReference(ref)  # built from the kernel's own source only
            baseline_fn = None
            if req.get("baseline"):
                base_mod = self._load_build(req["baseline"])
                modules.append(base_mod)
                baseline_fn = cd.get_function(base_mod, req["baseline"]["name"])
            state = ModuleState(modules[0], _globals_of(req["kernel"]), driver=cd)
            result = harness.run(req, kernel_fn, ref_fn, cases, state, baseline_fn)
            result["load"] = load
            result["device"] = ctx.info()
            return {"ok": True, "result": result}
        except CaseError as e:
            if e.err.name in ("EMULATOR_HANG", "EMULATOR_REFUSED"):  # the emulator's timeout
                cases.append(e.case)  # (as the supervisor's), or an instruction it lacks
                key = "hang" if e.err.name == "EMULATOR_HANG" else "refused"
                return {"ok": False, "sticky": False, key: f"{e.err.text} {e.where}",
                        "result": {"cases": cases, "load": load, "device": ctx.info()}}  # fmt: skip
            e.case["messages"].append(f"{e.err.name} ({e.err.text}) {e.where}")
            cases.append(e.case)
            return {
                "ok": False, "sticky": e.err.sticky, "cuda_error": e.err.name,
                "error": f"{e.err.name} ({e.err.text}) {e.where}",
                "result": {"cases": cases, "load": load, "device": ctx.info()},
            }  # fmt: skip
        except cd.CudaError as e:
            return {"ok": False, "sticky": e.sticky, "cuda_error": e.name, "error": str(e),
                    "result": {"cases": cases, "load": load}}  # fmt: skip
        except Exception as e:  # a bad spec or reference is data, not a crash
            return {"ok": False, "sticky": False, "error": f"{type(e).__name__}: {e}",
                    "result": {"cases": cases, "load": load}}  # fmt: skip
        finally:
            for m in modules:
                with contextlib.suppress(cd.CudaError):
                    cd.call("cuModuleUnload", m)

    def _load_build(self, build: dict) -> Any:
        """A CUDA reference's or baseline's module: nvcc's cubin, or its PTX on the emulator."""
        assert self.cd is not None  # called from run(), after ensure_context
        if self.device == "cpu":
            return self.cd.load_ptx(build["ptx"])
        return self.cd.load_cubin(Path(build["cubin_path"]).read_bytes())

    def _load(self, kernel: dict, modules: list[Any]) -> tuple[Any, dict]:
        """The kernel's function: from the cubin the project's ptxas made, or through the driver
        JIT when there is no cubin or the driver refuses it (on the emulator: from its PTX).
        Says which path ran."""
        cd = self.cd
        assert cd is not None  # called from run(), after ensure_context
        load: dict = {"path": "", "assembler": kernel.get("assembler", ""), "jit_log": ""}
        if self.device == "cpu":
            try:
                mod = cd.load_ptx(kernel.get("ptx") or "")
                modules.append(mod)
                load["path"] = "emulator"
                return cd.get_function(mod, kernel["name"]), load
            except cd.Refused as e:
                load["error"], load["refused"] = e.summary, e.summary
                return None, load
        notes: list[str] = []
        if kernel.get("cubin_path"):
            try:
                mod = cd.load_cubin(Path(kernel["cubin_path"]).read_bytes())
                modules.append(mod)
                load["path"] = "cubin"
                return cd.get_function(mod, kernel["name"]), load
            except cd.CudaError as e:
                if e.sticky:
                    raise
                notes.append(f"loading the cubin failed: {e}; trying the driver JIT")
        if kernel.get("ptx"):
            mod, log, err = cd.load_ptx_jit(kernel["ptx"])
            load["jit_log"] = log
            load["path"] = "driver JIT"
            if err is None:
                modules.append(mod)
                load["notes"] = notes
                return cd.get_function(mod, kernel["name"]), load
            notes.append(f"driver JIT failed: {err}" + (f"\n{log}" if log else ""))
        load["notes"] = notes
        load["error"] = "; ".join(notes) or "no cubin and no PTX to load"
        return None, load


def _globals_of(kernel: dict) -> list[str]:
    """The module's .global variables: as the parent's parse found them, else from the PTX."""
    if kernel.get("globals") is not None:
        return list(kernel["globals"])
    return module_globals(kernel.get("ptx") or "")


def no_device_reason(e: BaseException) -> str:
    # One wording of "no GPU" everywhere: the same function the GPU probe uses.
    from ptxls.toolchain.gpu_probe import no_gpu_reason

    kind = "ImportError" if isinstance(e, ImportError) else type(e).__name__
    return no_gpu_reason(f"{kind}: {e}")


def main() -> int:
    global _proto
    # Replies go to a private copy of stdout; fd 1 itself now points at stderr, so anything a
    # library prints cannot corrupt the protocol.
    _proto = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    device = "cpu" if sys.argv[1:3] == ["--device", "cpu"] else "gpu"
    worker = Worker(device)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
        except json.JSONDecodeError as e:
            _send({"ok": False, "error": f"bad request: {e}"})
            continue
        op = req.get("op")
        try:
            if op == "exit":
                _send({"ok": True})
                return 0
            reply = worker.hello(req) if op == "hello" else worker.run(req) if op == "run" else {
                "ok": False, "error": f"unknown op {op!r}"}  # fmt: skip
        except Exception:  # report, never die silently
            reply = {"ok": False, "sticky": True, "error": "worker bug:\n" + traceback.format_exc()}
        _send(reply)
        if reply.get("sticky"):
            return 2  # the context is dead; the supervisor starts a fresh worker
    return 0


if __name__ == "__main__":
    sys.exit(main())
