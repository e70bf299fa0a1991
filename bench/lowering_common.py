"""Shared by the lowering benchmarks: path setup and the per-round overhead measurement.

The "model" is the scripted OpenAI-compatible server on loopback answering instantly, so
everything measured is the loop's own cost: prompt building, the HTTP round trip through the
openai SDK, extraction, lints + ptxas, the interface check, the verifier (the GPU test where
there is one), transcript writing and bookkeeping.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # scripted_llm (stdlib only)


def summarize(values: list[float]) -> dict:
    if not values:
        return {}
    values = sorted(values)
    return {
        "n": len(values),
        "median_ms": round(statistics.median(values) * 1000, 2),
        "p90_ms": round(values[int(0.9 * (len(values) - 1))] * 1000, 2),
        "min_ms": round(values[0] * 1000, 2),
    }


async def measure_overhead(
    repeats: int, verifier_factory=None, settings_kw: dict | None = None
) -> dict:
    """Run broken→fixed lowerings of vec_add ``repeats`` times; per round: total, HTTP, ptxas,
    verify, and the rest (extraction, prompts, transcript, bookkeeping)."""
    from ptxls.fewshot.retrieve import pick_examples
    from ptxls.lowering.llm_client import LlmClient
    from ptxls.lowering.loop import LoopOptions, run_loop
    from ptxls.lowering.settings import LlmSettings
    from ptxls.lowering.sources import cuda_kernels
    from ptxls.lowering.transcript import Transcript

    from scripted_llm import BROKEN_VEC_ADD, GOOD_VEC_ADD, ScriptedLLM, Step, fenced

    src = cuda_kernels((ROOT / "examples" / "vec_add.cu").read_text())[0]
    totals, http, check, verify, rest = [], [], [], [], []
    with ScriptedLLM() as server, tempfile.TemporaryDirectory() as tmp:
        s = LlmSettings(
            base_url=server.base_url,
            api_key="sk-bench-000000",
            model="scripted-model",
            **(settings_kw or {}),
        )
        client = LlmClient(s)
        verifier = verifier_factory() if verifier_factory else None
        for i in range(
            repeats + 1
        ):  # the first run warms caches (ptxas, SDK imports) and is dropped
            server.set_script([Step(fenced(BROKEN_VEC_ADD)), Step(fenced(GOOD_VEC_ADD))])
            transcript = Transcript.create(Path(tmp), f"bench-{i}", [s.api_key])
            result = await run_loop(
                src,
                client=client,
                examples=pick_examples(src.text, 2),
                opts=LoopOptions(candidates=1, rounds=3),
                transcript=transcript,
                verifier=verifier,
            )
            assert result.ok, result.report()
            if i == 0:
                continue
            for r in result.best.rounds:
                totals.append(r.total_s)
                http.append(r.llm_s)
                check.append(r.check_s)
                verify.append(r.verify_s)
                rest.append(max(r.total_s - r.llm_s - r.check_s - r.verify_s, 0.0))
        await client.aclose()
    return {
        "rounds_measured": len(totals),
        "round_total_with_instant_model": summarize(totals),
        "http_roundtrip_via_openai_sdk": summarize(http),
        "ptxas_and_lints": summarize(check),
        "verify": summarize(verify),
        "everything_else": summarize(rest),
    }


def machine() -> dict:
    import os
    import platform

    from ptxls.toolchain.discovery import find_ptxas

    try:
        ptxas = find_ptxas().describe()
    except Exception as e:
        ptxas = f"none ({e})"
    return {
        "host": platform.node(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "ptxas": ptxas,
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


def run(coro):
    return asyncio.run(coro)
