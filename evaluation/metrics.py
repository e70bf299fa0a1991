"""Scores of a run, from its sample records alone (so a resumed, replayed or copied run scores
the same): pass@k, verification levels, speed against nvcc, rounds, tokens, cost, failures.

pass@k is the unbiased estimator of Chen et al. (2021): with n samples of a task of which c
passed, pass@k = 1 - C(n-c, k) / C(n, k), averaged over tasks. fast_1 is the share of tasks
whose first sample is verified on a GPU and faster than nvcc -O3 (beyond ``fast_margin``, the
run-to-run noise of the harness's timing) — KernelBench's fast_1 — and the speedup is nvcc's time
over the candidate's, both timed in the same GPU test.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import TypedDict

from .records import CATEGORIES, SampleRecord

DEFAULT_K = (1, 5, 10)


@dataclass(frozen=True)
class Pricing:
    """US dollars per million tokens; reasoning tokens are billed as completion tokens (they are
    counted inside ``completion_tokens`` by OpenAI-compatible endpoints)."""

    prompt: float = 0.0
    completion: float = 0.0

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.prompt + completion_tokens * self.completion) / 1e6


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k samples drawn from n (c of them correct) is correct."""
    if n < k or k <= 0:
        raise ValueError(f"pass@{k} needs at least {k} samples (have {n})")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def geomean(values: list[float]) -> float | None:
    vals = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


# One task's scores in a row's summary ("per_task" of the results document); "pass@k" is keyed
# by str(k), as JSON writes it.
TaskScores = TypedDict(
    "TaskScores",
    {
        "family": str,
        "samples": int,
        "passed": int,
        "pass@k": dict[str, float],
        "verified": dict[str, int],
        "speedup": float | None,
        "first_fast": bool,
        "first_timed": bool,
        "categories": dict[str, int],
        "rounds": float | None,
        "tokens": int,
        "device": str,
    },
)


def _row_summary(recs: list[SampleRecord], ks: tuple[int, ...], pricing: Pricing,
                 fast_margin: float) -> dict:  # fmt: skip
    by_task: dict[str, list[SampleRecord]] = defaultdict(list)
    for r in recs:
        by_task[r.task].append(r)
    n_min = min((len(v) for v in by_task.values()), default=0)
    usable_k = [k for k in ks if 1 <= k <= n_min]
    tasks: dict[str, TaskScores] = {}
    for name, rs in sorted(by_task.items()):
        rs.sort(key=lambda r: r.sample)
        n, c = len(rs), sum(r.passed for r in rs)
        speeds = [r.speedup for r in rs if r.speedup]
        tasks[name] = {
            "family": rs[0].family,
            "samples": n,
            "passed": c,
            "pass@k": {str(k): pass_at_k(n, c, k) for k in usable_k},
            "verified": dict(Counter(r.verified for r in rs if r.passed)),
            "speedup": geomean(speeds),
            "first_fast": bool(rs[0].speedup and rs[0].speedup > 1 + fast_margin),
            "first_timed": rs[0].speedup is not None,
            "categories": dict(Counter(r.category for r in rs if not r.passed)),
            "rounds": _mean([r.rounds for r in rs if r.passed]),
            "tokens": sum(r.prompt_tokens + r.completion_tokens for r in rs),
            "device": next((r.device for r in rs if r.device), ""),
        }
    families: dict[str, dict] = {}
    for fam in sorted({t["family"] for t in tasks.values()}):
        members = [t for t in tasks.values() if t["family"] == fam]
        families[fam] = {
            "tasks": len(members),
            "pass@k": {str(k): _mean([t["pass@k"][str(k)] for t in members]) for k in usable_k},
        }
    passed = [r for r in recs if r.passed]
    solved = sum(1 for t in tasks.values() if t["passed"])
    prompt = sum(r.prompt_tokens for r in recs)
    completion = sum(r.completion_tokens for r in recs)
    timed = [t for t in tasks.values() if t["first_timed"]]
    any_gpu = any(r.verified == "gpu" for r in recs)
    return {
        "tasks": len(tasks),
        "samples": len(recs),
        "passed_samples": len(passed),
        "solved_tasks": solved,
        "pass@k": {str(k): _mean([t["pass@k"][str(k)] for t in tasks.values()]) for k in usable_k},
        "verified": {
            kind: sum(1 for r in passed if r.verified == kind)
            for kind in ("gpu", "emulator", "compile-only")
        },
        "fast_1": (sum(t["first_fast"] for t in tasks.values()) / len(tasks)) if any_gpu and tasks else None,
        "fast_1_timed_tasks": len(timed),
        "speedup_geomean": geomean([r.speedup for r in recs if r.speedup]),
        "speedups": sorted(r.speedup for r in recs if r.speedup),
        "rounds_to_pass": _mean([r.rounds for r in passed if r.rounds]),
        "tokens": {"prompt": prompt, "completion": completion,
                   "reasoning": sum(r.reasoning_tokens for r in recs)},  # fmt: skip
        "tokens_per_solved_task": (prompt + completion) / solved if solved else None,
        "requests": sum(r.requests for r in recs),
        "retries": sum(r.retries for r in recs),
        "replies_without_usage": sum(r.usage_missing for r in recs),
        "cost_usd": pricing.cost(prompt, completion),
        "sample_wall_s": sum(r.wall_s for r in recs),
        "categories": {c: n for c in CATEGORIES if (n := sum(r.category == c for r in recs if not r.passed))},
        "families": families,
        "per_task": tasks,
    }  # fmt: skip


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarize(records: list[SampleRecord], *, ks: tuple[int, ...] = DEFAULT_K,
              pricing: Pricing | None = None, fast_margin: float = 0.02) -> dict:  # fmt: skip
    """Per row (llm, nvcc, triton): the scores above, overall, per family and per task."""
    rows: dict[str, list[SampleRecord]] = defaultdict(list)
    for r in records:
        rows[r.row].append(r)
    pricing = pricing or Pricing()
    return {
        row: _row_summary(rs, tuple(ks), pricing, fast_margin)
        for row, rs in sorted(rows.items(), key=lambda kv: ("llm", "nvcc", "triton").index(kv[0]) if kv[0] in ("llm", "nvcc", "triton") else 9)
    }  # fmt: skip


def verification_level(row: dict) -> str:
    """How far the passing samples of a row were checked, in words for the table's header."""
    v = row.get("verified", {})
    if v.get("gpu"):
        return "GPU-verified"
    if v.get("emulator"):
        return "emulator-verified (not GPU)"
    if v.get("compile-only"):
        return "compile-only (ptxas + interface; nothing ran)"
    return "nothing passed"
