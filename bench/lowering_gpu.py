"""Lowering on the H200, in one run: what issue 4 asks to be shown on a real GPU.

    source scripts/device-env.sh
    PYTHONPATH=$PYTHONPATH:<carried openai wheels> python3 bench/lowering_gpu.py [--repeats 10]

1. each few-shot kernel through the GPU harness, against its numpy spec and against its CUDA
   reference compiled by nvcc;
2. a CUDA → PTX lowering of examples/vec_add.cu through the scripted OpenAI server (broken, then
   fixed) that ends GPU-verified;
3. a numerically wrong first reply (sub instead of add) whose feedback names the wrong
   elements, then the fix;
4. the loop's own overhead per round with the GPU test as the verifier.

Steps 2-4 need ``openai`` (carry its wheels; the GPU side itself never imports it) and are
reported as skipped without it. Needs only numpy, cuda-bindings and the repository otherwise.
Writes bench/results/lowering-gpu/<machine>-<date>.json; exit 1 when something that ran failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
import time
import traceback
from pathlib import Path

from lowering_common import ROOT, machine, measure_overhead
from machine import result_path

WRONG_LINE = "sub.f32             %f3, %f1, %f2;"


async def fewshot_on_gpu(sup) -> list[dict]:
    from ptxls.fewshot.library import load_examples
    from ptxls.gputest import api
    from ptxls.gputest.spec import TestSpec

    out = []
    for ex in load_examples():
        spec = TestSpec.from_dict(ex.spec)
        entry = {"kernel": ex.name}
        for label, kw in (("numpy", {}), ("nvcc_reference", {"reference_cuda": ex.reference_cu})):
            rep = await api.run_gpu_test(ex.ptx, ex.name, spec, supervisor=sup, **kw)
            entry[label] = {
                "status": rep.status,
                "summary": rep.summary,
                "reference": rep.reference,
                "load_path": rep.load_path,
                "seed": rep.seed,
                "cases": [
                    {
                        "n": c.n,
                        "passed": c.passed,
                        "max_rel_err": c.max_rel_err,
                        "time_ms": c.time_ms,
                        "ref_time_ms": c.ref_time_ms,
                        "gbps": c.gbps,
                    }
                    for c in rep.cases
                ],
                "table": api.format_table(rep),
            }
            print(f"[fewshot] {ex.name} vs {label}: {rep.status} {rep.summary}", flush=True)
        out.append(entry)
    return out


async def lower_through_scripted_server(sup, script_ptx: list[str]) -> dict:
    """vec_add.cu → PTX with the LLM backend against the scripted server; the GPU verifies."""
    from ptxls.lowering.service import LowerJob, lower_llm
    from ptxls.lowering.settings import LlmSettings
    from ptxls.lowering.verify import gpu_verifier

    from scripted_llm import ScriptedLLM, Step, fenced

    with (
        tempfile.TemporaryDirectory() as tmp,
        ScriptedLLM([Step(fenced(p)) for p in script_ptx]) as llm,
    ):
        cu = Path(tmp) / "vec_add.cu"
        shutil.copy(ROOT / "examples" / "vec_add.cu", cu)
        settings = LlmSettings(
            base_url=llm.base_url,
            api_key="sk-device-000000",
            model="scripted-model",
            candidates=1,
            rounds=len(script_ptx),
            retry_backoff_s=0.01,
        )
        job = LowerJob(cu, cu.read_text(), backend="llm", kernel="vec_add", workspace=Path(tmp))
        verifier = gpu_verifier(
            reference_cuda=cu.read_text(), reference_path=str(cu), supervisor=sup
        )
        t0 = time.monotonic()
        outcome = await lower_llm(
            job, settings, verifier=verifier, progress=lambda m: print(f"  {m}", flush=True)
        )
        seconds = time.monotonic() - t0
        feedbacks = [r.body["messages"][-1]["content"] for r in llm.chat_requests[1:]]
    rounds = outcome.loop.best.rounds if outcome.loop and outcome.loop.best else []
    return {
        "ok": outcome.ok,
        "gpu_tested": outcome.gpu_tested,
        "message": outcome.message,
        "rounds": [{"round": r.round, "outcome": r.outcome, "summary": r.summary} for r in rounds],
        "feedback_sent": feedbacks,
        "header": [ln for ln in outcome.ptx.splitlines() if ln.startswith("//")][:12],
        "seconds": round(seconds, 3),
    }


async def main_async(args) -> dict:
    from ptxls.gputest import api
    from ptxls.gputest.supervisor import Supervisor

    from scripted_llm import BROKEN_VEC_ADD, GOOD_VEC_ADD

    wrong = GOOD_VEC_ADD.replace("add.f32             %f3, %f1, %f2;", WRONG_LINE)
    assert wrong != GOOD_VEC_ADD
    results: dict = {"machine": machine(), "failures": []}
    sup = Supervisor()
    ok, why = await api.gpu_available(sup)
    results["gpu"] = why
    print(f"[gpu] {why}", flush=True)
    if not ok:
        results["failures"].append(f"no GPU: {why}")
        return results
    try:
        results["fewshot"] = await fewshot_on_gpu(sup)
        for e in results["fewshot"]:
            for label in ("numpy", "nvcc_reference"):
                if e[label]["status"] != "pass":
                    results["failures"].append(
                        f"fewshot {e['kernel']} vs {label}: {e[label]['status']} {e[label]['summary']}"
                    )
        try:
            import openai  # noqa: F401 - only to know whether steps 2-4 can run
        except ImportError as e:
            results["llm_steps"] = (
                f"skipped: openai not importable ({e}); carry its wheels on PYTHONPATH"
            )
            return results
        print("[lower] broken then fixed", flush=True)
        r = await lower_through_scripted_server(sup, [BROKEN_VEC_ADD, GOOD_VEC_ADD])
        results["cuda_to_ptx_gpu_verified"] = r
        if not (r["ok"] and r["gpu_tested"]):
            results["failures"].append(f"lowering did not end GPU-verified: {r['message']}")
        print("[lower] numerically wrong first", flush=True)
        r = await lower_through_scripted_server(sup, [wrong, GOOD_VEC_ADD])
        results["wrong_first_reply"] = r
        fb = r["feedback_sent"][0] if r["feedback_sent"] else ""
        if not (
            r["ok"]
            and r["gpu_tested"]
            and "expected" in fb
            and r["rounds"]
            and r["rounds"][0]["outcome"] == "gpu"
        ):
            results["failures"].append(
                "the wrong first reply was not caught, or its feedback does not name the wrong elements"
            )
        print("[overhead] with the GPU test as verifier", flush=True)
        from ptxls.lowering.verify import gpu_verifier

        cu = (ROOT / "examples" / "vec_add.cu").read_text()
        results["overhead_gpu_verify"] = await measure_overhead(
            args.repeats,
            verifier_factory=lambda: gpu_verifier(reference_cuda=cu, supervisor=sup, time_it=False),
        )
        results["overhead_compile_only"] = await measure_overhead(args.repeats)
    except Exception:  # record it; the run's file must still be written
        results["failures"].append(traceback.format_exc())
    finally:
        await sup.close()
    return results


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    results = asyncio.run(main_async(args))
    text = json.dumps(results, indent=2, default=str)
    args.out = args.out or str(result_path("lowering-gpu", "json"))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text + "\n")
    print(text)
    print(f"wrote {args.out}")
    return 1 if results["failures"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
