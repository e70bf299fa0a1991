"""The worker supervisor with real subprocesses: replies and progress, warm reuse, a hung step
killed by the wall-clock timeout, a worker that crashes, sticky errors, cancellation. A fake
worker script stands in for the GPU; the real worker is exercised on its GPU-less path."""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap

import pytest

from ptxls.gputest.api import gpu_available, run_gpu_test, run_gpu_test_file
from ptxls.gputest.supervisor import Supervisor

FAKE_WORKER = textwrap.dedent(
    """
    import json, os, sys, time
    def send(o):
        sys.stdout.write(json.dumps(o) + "\\n"); sys.stdout.flush()
    for line in sys.stdin:
        req = json.loads(line)
        op = req.get("op")
        if op == "hello":
            send({"ok": True, "device": {"name": "fake", "arch": "sm_90", "pid": os.getpid()}})
        elif op == "echo":
            for i in range(req.get("steps", 0)):
                send({"progress": f"step {i}"})
            send({"ok": True, "pid": os.getpid(), "echo": req.get("value")})
        elif op == "slow_steps":  # each step under the timeout, the whole well over it
            for i in range(req["steps"]):
                time.sleep(req["each"])
                send({"progress": f"step {i}", "case": {"index": i, "n": i}})
            send({"ok": True})
        elif op == "hang":
            send({"progress": "case 2/6 n=1: running k", "case": {"index": 0, "n": 0}})
            time.sleep(3600)
        elif op == "crash":
            sys.stderr.write("fake worker: segfault in the driver\\n"); sys.stderr.flush()
            os._exit(139)
        elif op == "sticky":
            send({"ok": False, "sticky": True, "cuda_error": "CUDA_ERROR_ILLEGAL_ADDRESS"})
        elif op == "exit":  # as the real worker does when the supervisor closes it
            break
        elif op == "noise":
            sys.stdout.write("not json from some library\\n"); sys.stdout.flush()
            send({"ok": True, "after_noise": True})
    """
)


@pytest.fixture
def fake(tmp_path):
    script = tmp_path / "fake_worker.py"
    script.write_text(FAKE_WORKER)
    sups = []

    def make() -> Supervisor:
        sup = Supervisor(command=[sys.executable, str(script)])
        sups.append(sup)
        return sup

    yield make
    for sup in sups:  # a test that failed midway leaves its worker: end it
        if sup.proc is not None and sup.proc.returncode is None:
            sup.proc.kill()


async def test_reply_progress_and_warm_reuse(fake):
    sup = fake()
    seen = []
    r1 = await sup.request(
        {"op": "echo", "value": 1, "steps": 3}, timeout_s=5, on_progress=seen.append
    )
    r2 = await sup.request({"op": "echo", "value": 2}, timeout_s=5)
    assert r1.data["echo"] == 1 and r2.data["echo"] == 2
    assert seen == ["step 0", "step 1", "step 2"]
    assert r1.data["pid"] == r2.data["pid"] and sup.starts == 1 and sup.warm
    assert sup.device["name"] == "fake"
    await sup.close()
    assert not sup.warm


async def test_timeout_is_per_step_so_slow_but_alive_work_finishes(fake):
    sup = fake()
    # 6 steps of 0.4 s: the whole takes longer than the 1.5 s timeout, no single step does.
    r = await sup.request({"op": "slow_steps", "steps": 6, "each": 0.4}, timeout_s=1.5)
    assert r.data == {"ok": True} and not r.timed_out and len(r.cases) == 6
    await sup.close()


async def test_hung_step_is_killed_and_the_next_request_gets_a_fresh_worker(fake):
    sup = fake()
    first_pid = (await sup.request({"op": "echo"}, timeout_s=5)).data["pid"]
    r = await sup.request({"op": "hang"}, timeout_s=1.0)  # the fake sleeps an hour
    assert r.timed_out and r.restarted
    assert r.last_progress == "case 2/6 n=1: running k"
    assert r.cases == [{"index": 0, "n": 0}]  # finished work streamed before the hang is kept
    with pytest.raises(ProcessLookupError):
        os.kill(first_pid, 0)  # the hung process is gone, not orphaned
    r = await sup.request({"op": "echo", "value": "again"}, timeout_s=5)
    assert r.data["echo"] == "again" and r.data["pid"] != first_pid and sup.starts == 2
    await sup.close()


async def test_crashing_worker_is_reported_with_its_exit_and_stderr_then_replaced(fake):
    sup = fake()
    r = await sup.request({"op": "crash"}, timeout_s=5)
    assert r.crashed and r.restarted
    assert "exit code 139" in r.stderr_tail and "segfault in the driver" in r.stderr_tail
    assert (await sup.request({"op": "echo", "value": 3}, timeout_s=5)).data["echo"] == 3
    assert sup.starts == 2
    await sup.close()


async def test_sticky_error_replaces_the_worker_but_a_plain_reply_does_not(fake):
    sup = fake()
    await sup.request({"op": "noise"}, timeout_s=5)
    assert sup.starts == 1
    r = await sup.request({"op": "sticky"}, timeout_s=5)
    assert r.restarted and not sup.warm
    await sup.request({"op": "echo"}, timeout_s=5)
    assert sup.starts == 2
    await sup.close()


async def test_cancelled_request_kills_the_worker_so_no_late_reply_is_misread(fake):
    sup = fake()
    await sup.request({"op": "echo"}, timeout_s=5)
    task = asyncio.create_task(sup.request({"op": "hang"}, timeout_s=60))
    await asyncio.sleep(0.5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not sup.warm
    assert (await sup.request({"op": "echo", "value": 4}, timeout_s=5)).data["echo"] == 4
    await sup.close()


def _no_gpu_env() -> dict[str, str]:
    # Hides any GPU, so this path is tested the same on CI and on a GPU machine.
    return {**os.environ, "CUDA_VISIBLE_DEVICES": ""}


async def test_real_worker_without_a_device_says_why_and_stays_usable():
    sup = Supervisor(env=_no_gpu_env())
    try:
        ok, why = await gpu_available(sup)
        assert not ok and why.startswith("no CUDA device (") and why.endswith(")")
        assert "Traceback" not in why
        vec_add = __import__("pathlib").Path(__file__).parent.parent / "examples" / "vec_add.ptx"
        report = await run_gpu_test(  # "gpu": no fall-back to the CPU emulator
            vec_add.read_text(), "vec_add", ptx_path=str(vec_add), supervisor=sup, device="gpu"
        )
        assert report.status == "no-gpu" and report.summary == why and not report.cases
        assert sup.starts == 1  # the worker was asked twice and stayed up
    finally:
        await sup.close()


async def test_spec_problems_are_reported_before_any_gpu_work(tmp_path):
    ptx = tmp_path / "orphan.ptx"
    ptx.write_text(
        (
            __import__("pathlib").Path(__file__).parent.parent / "examples" / "vec_add.ptx"
        ).read_text()
    )
    sup = Supervisor(env=_no_gpu_env())
    try:
        [report] = await run_gpu_test_file(str(ptx), supervisor=sup)
    finally:
        await sup.close()
    assert report.status == "spec-error" and sup.starts == 0
    assert report.problems[0].message.startswith("no test spec for 'vec_add'")


# ---- issue 11: the GPU test loads the cubin the lowering loop's ptxas run made

CUBIN_WORKER = textwrap.dedent(
    """
    import hashlib, json, sys
    def send(o):
        sys.stdout.write(json.dumps(o) + "\\n"); sys.stdout.flush()
    for line in sys.stdin:
        req = json.loads(line)
        if req["op"] == "hello":
            send({"ok": True, "device": {"name": "fake", "arch": "sm_90", "driver_cuda": "13.0",
                                         "max_ptx_isa": [9, 0]}})
        elif req["op"] == "run":
            k = req["kernel"]
            sha = hashlib.sha256(open(k["cubin_path"], "rb").read()).hexdigest()
            send({"ok": False, "error": f"cubin {sha} globals {k.get('globals')}"})
    """
)


async def test_a_prebuilt_cubin_is_loaded_instead_of_assembling_again(tmp_path):
    """``run_gpu_test(..., assembled=...)``: the worker is handed the very cubin bytes (counted:
    no ptxas runs) and the module globals of the caller's parse; without it the PTX is assembled
    as before (``ptxls test FILE``)."""
    import hashlib
    from pathlib import Path

    from tool_counter import ToolCounter

    from ptxls.gputest.build import Assembled
    from ptxls.gputest.pairing import spec_for_ptx

    vec_add = Path(__file__).parent.parent / "examples" / "vec_add.ptx"
    text = vec_add.read_text()
    spec = spec_for_ptx(text, "vec_add", ptx_path=str(vec_add)).spec
    script = tmp_path / "cubin_worker.py"
    script.write_text(CUBIN_WORKER)
    sup = Supervisor(command=[sys.executable, str(script)])
    cubin = b"\x7fELF not really a cubin"
    try:
        with ToolCounter() as tools:
            tools.mark("start")
            assembled = Assembled(cubin, "sm_90", "ptxas 13.0 (test)", (8, 0), "sm_90", ["g"])
            report = await run_gpu_test(text, "vec_add", spec, assembled=assembled,
                                        supervisor=sup, time_it=False)  # fmt: skip
            tools.mark("from the PTX")
            again = await run_gpu_test(text + "\n// changed\n", "vec_add", spec,
                                       supervisor=sup, time_it=False)  # fmt: skip
    finally:
        await sup.close()
    assert report.summary == f"cubin {hashlib.sha256(cubin).hexdigest()} globals ['g']"
    assert [r for r in tools.segments()["start"] if r.is_compile] == []
    built = [r for r in tools.segments()["from the PTX"] if r.is_compile]
    assert len(built) == 1 and built[0].writes_cubin, built
    assert again.summary.startswith("cubin ") and again.summary.endswith("globals None")
    # the prebuilt cubin's copy for the worker is gone after the test (nothing piles up in a
    # long-lived server); the assembled one stays in the warm build cache
    from ptxls.gputest.build import workdir

    left = [p for p in workdir().rglob("*.cubin") if p.read_bytes() == cubin]
    assert left == []
