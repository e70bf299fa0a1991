"""What a lowering cost: tokens of every reply, summed, and (with prices set) money; the caps.

Endpoints report usage in a few shapes: OpenAI's ``prompt_tokens``/``completion_tokens`` with
``completion_tokens_details.reasoning_tokens``, Anthropic-style ``input_tokens``/
``output_tokens``, and some report none (then the run's totals say "not reported" rather than
0). OpenAI counts reasoning tokens inside the completion tokens, and so does the cost here.

The caps: ``ptxls.llm.maxTotalTokens`` (prompt + completion of every reply together) and, with
prices set, ``ptxls.llm.maxCost``; the reply that crosses one is the last, and the loop stops
with the reason.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ptxls.toolchain.secrets import Endpoint

TOKENS_CAP_SETTING = "ptxls.llm.maxTotalTokens (PTXLS_LLM_MAX_TOTAL_TOKENS)"
COST_CAP_SETTING = "ptxls.llm.maxCost (PTXLS_LLM_MAX_COST)"


def _int(value) -> int:
    return value if isinstance(value, int) and value > 0 else 0


def usage_of(reply) -> tuple[int, int, int]:
    """(prompt, completion, reasoning) tokens of one reply; zeros where not reported."""
    usage = getattr(reply, "usage", None)
    if not isinstance(usage, dict):
        return 0, 0, 0
    prompt = _int(usage.get("prompt_tokens")) or _int(usage.get("input_tokens"))
    completion = _int(usage.get("completion_tokens")) or _int(usage.get("output_tokens"))
    details = usage.get("completion_tokens_details") or usage.get("output_tokens_details") or {}
    reasoning = _int(details.get("reasoning_tokens")) if isinstance(details, dict) else 0
    return prompt, completion, reasoning


@dataclass
class Spend:
    """Totals of one lowering, shared by its candidates (thread-safe: the server may read it)."""

    replies: int = 0
    replies_with_usage: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    cost: float | None = None  # None: no prices set
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, reply, opts) -> str:
        """Count one reply; the reason to stop when a cap is crossed, else ""."""
        p, c, r = usage_of(reply)
        price_p = float(getattr(opts, "price_prompt", 0) or 0)
        price_c = float(getattr(opts, "price_completion", 0) or 0)
        with self._lock:
            self.replies += 1
            self.replies_with_usage += bool(p or c)
            self.prompt_tokens += p
            self.completion_tokens += c
            self.reasoning_tokens += r
            if price_p or price_c:
                self.cost = (self.cost or 0.0) + (p * price_p + c * price_c) / 1e6
            cap = int(getattr(opts, "max_total_tokens", 0) or 0)
            if cap and self.total_tokens >= cap:
                return (
                    f"token cap reached: {self.total_tokens} tokens spent (prompt "
                    f"{self.prompt_tokens} + completion {self.completion_tokens}), the cap is "
                    f"{cap} ({TOKENS_CAP_SETTING})"
                )
            max_cost = float(getattr(opts, "max_cost", 0) or 0)
            if max_cost and self.cost is not None and self.cost >= max_cost:
                return f"cost cap reached: {self.cost:.4f} spent, the cap is {max_cost:g} ({COST_CAP_SETTING})"
        return ""

    def as_dict(self) -> dict:
        return {
            "replies": self.replies,
            "usage_reported": self.replies_with_usage,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "total_tokens": self.total_tokens,
            "cost": None if self.cost is None else round(self.cost, 6),
        }

    def line(self) -> str:
        """'12,345 tokens (prompt 10,000, completion 2,345, reasoning 800), cost 0.0123' or
        'tokens not reported by the endpoint'."""
        if not self.replies_with_usage:
            return "tokens not reported by the endpoint" if self.replies else "no reply"
        text = (
            f"{self.total_tokens:,} tokens (prompt {self.prompt_tokens:,}, completion "
            f"{self.completion_tokens:,}"
            + (f", reasoning {self.reasoning_tokens:,}" if self.reasoning_tokens else "")
            + ")"
        )
        if self.replies_with_usage < self.replies:
            text += f" in {self.replies_with_usage} of {self.replies} replies"
        if self.cost is not None:
            text += f", cost {self.cost:.4f}"
        return text


def run_summary(loop, settings, seconds: float, endpoint: Endpoint | None = None) -> dict:
    """What one LLM lowering was and cost, for ``--format json``, the header and the editor:
    model, endpoint, candidates, rounds with each round's verdict, tokens, duration, cost.
    ``endpoint``: the one the lowering made at its start (else made here)."""
    from ptxls.toolchain.secrets import endpoint_of

    shown = endpoint or endpoint_of(settings.base_url)

    spend: Spend = getattr(loop, "spend", None) or Spend()
    candidates = sorted(getattr(loop, "candidates", []) or [], key=lambda c: c.index)
    models = sorted({c.model for c in candidates if c.model})
    return {
        "model": ", ".join(models) or (settings.model or ""),
        "endpoint": shown.url or "https://api.openai.com/v1",
        "endpoint_host": shown.host or "api.openai.com",
        "candidates": [
            {
                "index": c.index,
                "passed": c.passed,
                "stopped": c.error or None,
                "rounds": [
                    {
                        "round": r.round,
                        "verdict": r.outcome,
                        "summary": r.summary,
                        "prompt_tokens": r.prompt_tokens,
                        "completion_tokens": r.completion_tokens,
                        "reasoning_tokens": r.reasoning_tokens,
                        "seconds": round(r.total_s, 3),
                        "fixes": r.fixes or None,
                    }  # fmt: skip
                    for r in c.rounds
                ],
            }
            for c in candidates
        ],
        "rounds": sum(len(c.rounds) for c in candidates),
        "tokens": spend.as_dict(),
        "duration_s": round(seconds, 3),
        "cost": None if spend.cost is None else round(spend.cost, 6),
    }


def header_line(summary: dict) -> str:
    """'model gpt-x at api.example.com; 3 rounds; 12,345 tokens (…)' for the provenance header
    and the editor's notification."""
    tokens = summary["tokens"]
    spend = Spend(replies=tokens["replies"], replies_with_usage=tokens["usage_reported"],
                  prompt_tokens=tokens["prompt_tokens"],
                  completion_tokens=tokens["completion_tokens"],
                  reasoning_tokens=tokens["reasoning_tokens"], cost=tokens["cost"])  # fmt: skip
    rounds = summary["rounds"]
    return (
        f"model {summary['model'] or '?'} at {summary['endpoint_host']}; {rounds} round"
        f"{'s' if rounds != 1 else ''}; {spend.line()}; {summary['duration_s']:.1f} s"
    )
