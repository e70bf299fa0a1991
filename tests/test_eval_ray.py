"""--ray: eval's tests as Ray actors on a local Ray cluster (2 CPUs, no dashboard), through the
CPU emulator — the same verdicts as the local runner. Needs Ray (pip install 'ptxls[eval]')."""

from __future__ import annotations

import pytest

from ptxls.evaluation.runner import EvalOptions, Runner
from ptxls.evaluation.suite import load_suite, select
from ptxls.evaluation.testing import device_option_supported
from ptxls.lowering.settings import LlmSettings

ray = pytest.importorskip("ray", reason="Ray is the eval extra: pip install 'ptxls[eval]'")
pytestmark = pytest.mark.skipif(
    not device_option_supported(),
    reason="no CPU emulator in this ptxls: Ray on CPU has nothing to run",
)


async def test_ray_actors_give_the_local_runners_verdicts(tmp_path):
    tasks = select(load_suite(), ["relu_f32,axpy_f32,row_max_f32,triton_add"])

    async def run(folder, ray_address=None):
        opts = EvalOptions(run_dir=folder, tasks=tasks, rows=("nvcc", "triton"), device="cpu",
                           test_workers=2, ray_address=ray_address)  # fmt: skip
        runner = Runner(opts, LlmSettings())
        records = await runner.execute()
        return runner, {(r.task, r.row): (r.passed, r.verified) for r in records}

    _local, local = await run(tmp_path / "local")
    # started here small and fast; --ray local would start one the same way with every core
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        runner, on_ray = await run(tmp_path / "ray", ray_address="local")
    finally:
        ray.shutdown()
    assert on_ray == local
    assert all(v == (True, "emulator") for v in local.values())
    assert "on a local Ray cluster" in runner.info.pool
