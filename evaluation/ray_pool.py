"""Tests on a Ray cluster: the same test requests as the local pool (``testing.execute``), run
by Ray actors — one per GPU of the cluster (``num_gpus=1`` each, so Ray gives each its own
device through CUDA_VISIBLE_DEVICES), or CPU emulator actors (``num_cpus=1``) where the cluster
has no GPU. Each actor keeps its test worker warm between tests, as the local pool does; the
model requests and the results file stay in the process that runs ``ptxls eval``.

    ptxls eval --ray local        start a Ray cluster on this machine for the run
    ptxls eval --ray HOST:PORT    join a running cluster (``ray start --head`` there); every
                                  node needs ptxls installed (pip install 'ptxls[eval]')

Ray is optional (the ``eval`` extra): nothing imports it unless ``--ray`` is given.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ptxls.gputest.supervisor import Supervisor

_ACTOR = None


def _actor_class(ray):
    """The actor, defined once Ray is imported. One test at a time per actor."""
    global _ACTOR
    if _ACTOR is None:

        class TestActor:
            def __init__(self, device: str):
                self.device = device
                self.sup: Supervisor | None = None

            async def run(self, req: dict) -> dict:
                from ptxls.gputest.supervisor import Supervisor

                from .testing import _emulator_command, execute

                if self.sup is None:
                    self.sup = Supervisor(_emulator_command() if self.device == "cpu" else None)
                return await execute(req, self.sup)

            async def close(self) -> None:
                if self.sup is not None:
                    await self.sup.close()

        _ACTOR = ray.remote(max_concurrency=1)(TestActor)
    return _ACTOR


class RayTestPool:
    def __init__(self, ray, actors: list, test_device: str, kind: str, started_here: bool,
                 address: str):  # fmt: skip
        self.ray = ray
        self.actors = actors
        self.size = len(actors)
        self.test_device, self.kind = test_device, kind
        self.started_here = started_here
        self.address = address
        self.busy_s = 0.0
        self._free: asyncio.Queue = asyncio.Queue()
        for a in actors:
            self._free.put_nowait(a)

    @classmethod
    async def start(cls, address: str, device: str = "auto", workers: int | None = None,
                    num_cpus: int | None = None) -> RayTestPool:  # fmt: skip
        try:
            import ray
        except ImportError:
            raise ImportError(
                "--ray needs Ray: pip install 'ptxls[eval]' (or pip install ray)"
            ) from None
        started_here = False
        if not ray.is_initialized():
            if address == "local":
                ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False,
                         configure_logging=False)  # fmt: skip
                started_here = True
            else:
                ray.init(address=address, log_to_driver=False, configure_logging=False)
        try:
            return cls._with_actors(ray, address, device, workers, started_here)
        except BaseException:
            if started_here:  # nothing to run on: the cluster started for the run goes too
                ray.shutdown()
            raise

    @classmethod
    def _with_actors(cls, ray, address: str, device: str, workers: int | None,
                     started_here: bool) -> RayTestPool:  # fmt: skip
        resources = ray.cluster_resources()
        gpus = int(resources.get("GPU", 0))
        actor = _actor_class(ray)
        if device in ("auto", "gpu") and gpus >= 1:
            n = min(workers or gpus, gpus)
            actors = [actor.options(num_gpus=1, num_cpus=0).remote("gpu") for _ in range(n)]
            return cls(ray, actors, "gpu", "gpu", started_here, address)
        if device == "gpu":
            from .runner import NoDevice

            raise NoDevice(f"the Ray cluster at {address} has no GPU")
        from .testing import device_option_supported

        if not device_option_supported():
            raise ImportError("the Ray cluster has no GPU and this ptxls has no CPU emulator")
        cpus = max(1, int(resources.get("CPU", 1)))
        n = workers or cpus
        actors = [actor.options(num_cpus=1).remote("cpu") for _ in range(n)]
        return cls(ray, actors, "cpu", "emulator", started_here, address)

    async def run(self, req: dict, assembled=None) -> dict:
        actor = await self._free.get()
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        try:
            return await actor.run.remote(req)
        finally:
            self.busy_s += loop.time() - t0
            self._free.put_nowait(actor)

    async def close(self) -> None:
        for a in self.actors:
            with contextlib.suppress(Exception):  # an actor that died: nothing to close
                await a.close.remote()
            self.ray.kill(a)
        if self.started_here:
            self.ray.shutdown()

    def describe(self) -> str:
        what = "GPU" if self.kind == "gpu" else "CPU emulator"
        where = "a local Ray cluster" if self.address == "local" else f"Ray at {self.address}"
        return f"{self.size} {what} test actor(s) on {where}"
