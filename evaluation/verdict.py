"""One sample's verdict from what the loop returned: passed or not, how far it was verified,
and — when it failed — the category of the furthest point any of its rounds reached (a
candidate that once reached the GPU test and failed there is "wrong-result", even if its last
round had a ptxas error). Token counts come from the transcript's reply records, so a replayed
run counts what the original endpoint reported.
"""

from __future__ import annotations

import re

# the round outcomes of lowering/loop.py, furthest first
_STAGE = {"gpu": 5, "race": 5, "interface": 4, "ptxas": 3, "truncated": 2, "no_ptx": 1,
          "incomplete": 1, "llm_error": 0}  # fmt: skip
_OOB = re.compile(
    r"out-of-bounds|guard band|illegal (memory )?address|misaligned|\brace\b|hazard|"
    r"outside (any|its|the) (allocation|buffer)",
    re.IGNORECASE,
)
_TRUNCATED = re.compile(r"cut off|token limit", re.IGNORECASE)
_HANG = re.compile(r"\btimeout\b|\bhung\b|did not finish|instruction budget", re.IGNORECASE)


def gpu_failure_category(summary: str, feedback: str = "") -> str:
    text = f"{summary}\n{feedback[:2000]}"
    if summary.startswith("interface:"):
        return "interface"
    if summary.startswith("gpu: timeout") or _HANG.search(summary):
        return "timeout"
    if _OOB.search(text):
        return "race-or-oob"
    return "wrong-result"


def round_category(outcome: str, summary: str, feedback: str = "") -> str:
    if outcome == "gpu":
        return gpu_failure_category(summary, feedback)
    return {
        "race": "race-or-oob",
        "interface": "interface",
        "ptxas": "ptxas-error",
        "truncated": "truncation",
        "no_ptx": "refusal",
        "incomplete": "refusal",
        "llm_error": "endpoint-error",
    }.get(outcome, "wrong-result")


def failure_category(loop_result, outcome_message: str = "") -> str:
    """The category of a failed lowering (``LoopResult`` or None when it never ran)."""
    if loop_result is None:
        return "endpoint-error" if _endpoint_words(outcome_message) else "not-run"
    if getattr(loop_result, "never_answered", False):
        return "endpoint-error"
    rounds = [r for c in loop_result.candidates for r in c.rounds]
    if not rounds:
        if "budget" in (loop_result.message or ""):
            return "timeout"
        return "endpoint-error" if _endpoint_words(loop_result.message or "") else "not-run"
    furthest = max(rounds, key=lambda r: (_STAGE.get(r.outcome, 0), r.round))
    if furthest.outcome == "llm_error" and any(
        "budget" in (c.error or "") for c in loop_result.candidates
    ):
        return "timeout"
    if furthest.outcome == "ptxas" and _TRUNCATED.search((furthest.feedback or "")[:300]):
        # the reply was cut at the token limit and its half module failed ptxas: the cut is
        # the cause (the loop puts the cut first in the feedback)
        return "truncation"
    return round_category(furthest.outcome, furthest.summary, furthest.feedback)


def _endpoint_words(text: str) -> bool:
    return bool(re.search(r"endpoint|LLM request|HTTP|status|connect|rate limit|API key|model",
                          text, re.IGNORECASE))  # fmt: skip


def token_counts(records: list[dict]) -> dict:
    """Tokens the endpoint reported in a transcript's replies (OpenAI's usage fields; reasoning
    tokens under completion_tokens_details or top-level ``reasoning_tokens``)."""
    out = {"prompt_tokens": 0, "completion_tokens": 0, "reasoning_tokens": 0, "requests": 0,
           "retries": 0, "usage_missing": 0}  # fmt: skip
    for r in records:
        kind = r.get("kind")
        if kind == "retry":
            out["retries"] += 1
        if kind not in ("reply", "llm_error"):
            continue
        out["requests"] += 1
        usage = r.get("usage") or {}
        if not isinstance(usage, dict) or not usage:
            # a streamed reply carries usage only where the endpoint adds it unasked
            out["usage_missing"] += kind == "reply"
            continue
        out["prompt_tokens"] += _int(usage.get("prompt_tokens"))
        out["completion_tokens"] += _int(usage.get("completion_tokens"))
        details = usage.get("completion_tokens_details") or {}
        reasoning = details.get("reasoning_tokens") if isinstance(details, dict) else None
        out["reasoning_tokens"] += _int(
            reasoning if reasoning is not None else usage.get("reasoning_tokens")
        )
    return out


def _int(v) -> int:
    try:
        return int(v or 0)
    except (TypeError, ValueError):
        return 0
