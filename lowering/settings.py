"""Settings of the LLM lowering: endpoint, model, sampling and loop sizes.

Sources, later ones winning: defaults → environment (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``,
``PTXLS_MODEL``, ``PTXLS_LLM_*``) → the LSP configuration section ``ptxls.llm`` (camelCase keys,
see ``from_config``). The API key is read from the environment only: the VS Code client keeps it
in SecretStorage and passes it through the server's environment, never through settings or LSP
messages (a verbose LSP trace would log it). Invalid values fall back to the default with one
message each, so a typo never stops lowering.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

STRATEGIES = ("direct", "plan")

# LSP config key (under ptxls.llm) → dataclass field
CONFIG_KEYS = {
    "baseUrl": "base_url",
    "model": "model",
    "temperature": "temperature",
    "seed": "seed",
    "maxTokens": "max_tokens",
    "timeout": "timeout_s",
    "candidates": "candidates",
    "rounds": "rounds",
    "strategy": "strategy",
    "retries": "retries",
    "fewshot": "fewshot_count",
    "arch": "arch",
    "stream": "stream",
    "reasoningEffort": "reasoning_effort",
    "maxReplyChars": "max_reply_chars",
    "budgetSeconds": "budget_s",
    # the spellings of the VS Code extension's contributed settings
    "maxRounds": "rounds",
    "timeoutSeconds": "timeout_s",
}

# environment variable → dataclass field (the OpenAI SDK's own names where they exist)
ENV_KEYS = {
    "OPENAI_BASE_URL": "base_url",
    "PTXLS_MODEL": "model",
    "PTXLS_LLM_TEMPERATURE": "temperature",
    "PTXLS_LLM_SEED": "seed",
    "PTXLS_LLM_MAX_TOKENS": "max_tokens",
    "PTXLS_LLM_TIMEOUT": "timeout_s",
    "PTXLS_LLM_CANDIDATES": "candidates",
    "PTXLS_LLM_ROUNDS": "rounds",
    "PTXLS_LLM_STRATEGY": "strategy",
    "PTXLS_LLM_RETRIES": "retries",
    "PTXLS_LLM_RETRY_BACKOFF": "retry_backoff_s",
    "PTXLS_LLM_STREAM": "stream",
    "PTXLS_LLM_REASONING_EFFORT": "reasoning_effort",
    "PTXLS_REASONING_EFFORT": "reasoning_effort",
    "PTXLS_LLM_MAX_REPLY_CHARS": "max_reply_chars",
    "PTXLS_LLM_BUDGET_SECONDS": "budget_s",
}
REASONING_EFFORTS = ("low", "medium", "high")


@dataclass
class LlmSettings:
    base_url: str | None = None  # None: the OpenAI API
    api_key: str | None = field(default=None, repr=False)  # from OPENAI_API_KEY only
    model: str | None = None
    temperature: float = 0.1  # low: PTX is not creative writing, and repeats should agree
    seed: int | None = 1234  # sent where the endpoint accepts one
    max_tokens: int = 8192
    # Per request. Non-streamed: the whole reply; streamed: the longest silence between two
    # chunks (a slow model that keeps sending is never cut). A timeout is retried once only, so
    # a hung endpoint gives up after about 2 × timeout_s (3 minutes) with the defaults.
    timeout_s: float = 90.0
    candidates: int = 2
    rounds: int = 5  # generate + up to rounds-1 repairs per candidate
    strategy: str = "direct"  # "plan": ask for a step plan first, then the PTX
    retries: int = 4  # on 429, 5xx, connection errors (a timeout: once)
    retry_backoff_s: float = 1.0  # first wait; doubles each retry (Retry-After wins)
    fewshot_count: int = 2
    arch: str = "sm_90"
    stream: bool = True
    # "low" | "medium" | "high", sent as reasoning_effort; None: not sent (the model's default)
    reasoning_effort: str | None = None
    # a reply longer than this is refused (a stream stops being read there): 400 KB is ~100k
    # tokens, far more than any kernel, and keeps a runaway endpoint from filling memory
    max_reply_chars: int = 400_000
    # total seconds one lowering may spend (all candidates and rounds); the loop stops there
    budget_s: float = 600.0

    @property
    def endpoint_configured(self) -> bool:
        return bool(self.base_url or self.api_key)

    @property
    def ready(self) -> bool:
        return self.endpoint_configured and bool(self.model)

    def not_ready_message(self) -> str:
        """What to set, in the words of both the editor and the shell. Empty when ready."""
        missing = []
        if not self.endpoint_configured:
            missing.append(
                "an endpoint: OPENAI_API_KEY for api.openai.com, or OPENAI_BASE_URL "
                "(setting ptxls.llm.baseUrl) for a local server such as vLLM, llama.cpp "
                "or Ollama, e.g. http://localhost:11434/v1"
            )
        if not self.model:
            missing.append("a model: PTXLS_MODEL or the setting ptxls.llm.model")
        if not missing:
            return ""
        return (
            "LLM lowering is not configured; set "
            + " and ".join(missing)
            + ". The API key is read from the environment only (in VS Code: the command "
            "'ptxls: Set LLM API key'). 'Lower to PTX with nvcc (reference)' works offline."
        )

    def public_dict(self) -> dict:
        """Everything but the key, for transcripts and reports."""
        from .secrets import public_url

        d = dataclasses.asdict(self)
        d.pop("api_key", None)
        d["base_url"] = public_url(self.base_url)
        d["api_key_set"] = bool(self.api_key)
        return d


def _coerce(name: str, value: object) -> object:
    """Convert a config/env value to the field's type; raise ValueError when it cannot be."""
    default = getattr(LlmSettings, name, None)
    if name == "reasoning_effort":
        v = "" if value is None else str(value).strip().lower()
        if v in ("", "none", "default"):
            return None
        if v not in REASONING_EFFORTS:
            raise ValueError(f"must be one of {', '.join(REASONING_EFFORTS)} or empty")
        return v
    if name in ("base_url", "model", "arch"):
        if value is None or value == "":
            return None if name != "arch" else "sm_90"
        return str(value).strip()
    if name == "seed":
        if value is None or value == "" or (isinstance(value, str) and value.lower() == "none"):
            return None
        return int(value)
    if name == "strategy":
        v = str(value).strip().lower()
        if v not in STRATEGIES:
            raise ValueError(f"must be one of {', '.join(STRATEGIES)}")
        return v
    if name == "stream":
        if isinstance(value, str):
            return value.strip().lower() not in ("0", "false", "no", "off")
        return bool(value)
    if isinstance(default, bool):
        return bool(value)
    if isinstance(default, int):
        v = int(value)
        low = {"candidates": 1, "rounds": 1, "max_tokens": 1, "max_reply_chars": 1000}.get(name, 0)
        if v < low:
            raise ValueError(f"must be at least {low}")
        return v
    if isinstance(default, float):
        v = float(value)
        if v < 0:
            raise ValueError("must not be negative")
        if name == "temperature" and v > 2:
            raise ValueError("must be between 0 and 2")
        return v
    return value


def _apply(
    s: LlmSettings, values: Mapping[str, object], names: Mapping[str, str], where: str
) -> list[str]:
    problems = []
    for key, name in names.items():
        if key not in values or values[key] is None:
            continue
        try:
            setattr(s, name, _coerce(name, values[key]))
        except (TypeError, ValueError) as e:
            problems.append(
                f"{where} {key}={values[key]!r} ignored ({e}); using {getattr(s, name)!r}"
            )
    return problems


def from_env(env: Mapping[str, str] | None = None) -> tuple[LlmSettings, list[str]]:
    env = os.environ if env is None else env
    s = LlmSettings(api_key=env.get("OPENAI_API_KEY") or None)
    problems = _apply(s, env, ENV_KEYS, "environment")
    return s, problems


def from_config(
    config: Mapping[str, object] | None, env: Mapping[str, str] | None = None
) -> tuple[LlmSettings, list[str]]:
    """Settings from the ``ptxls.llm`` section (a dict with camelCase keys) over the
    environment. Returns the settings and one message per ignored value."""
    s, problems = from_env(env)
    if config:
        if "apiKey" in config:
            problems.append(
                "ptxls.llm.apiKey ignored: the key is read from OPENAI_API_KEY in the server's "
                "environment only, so it never travels in settings or LSP traces"
            )
        problems += _apply(s, config, CONFIG_KEYS, "setting ptxls.llm.")
    return s, problems
