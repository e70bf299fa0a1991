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
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ptxls.toolchain.secrets import Endpoint

STRATEGIES = ("direct", "plan")
REASONING_EFFORTS = ("low", "medium", "high")


@dataclass(frozen=True)
class SettingSpec:
    """One setting: its name, JSON type, default and bounds, the field it fills and the
    environment variables read for it.

    The one schema of the settings. The VS Code client's ``package.json`` must declare the same
    name, type, default, enum and bounds (tests/test_settings_schema.py fails when it does not);
    ``read_value`` enforces them here and in server/settings.py (``SERVER_SETTINGS``)."""

    key: str | None  # camelCase key in its section ("maxRounds" under ptxls.llm); None: env only
    attr: str | None  # the dataclass field it fills; None: read by the VS Code client only
    type: str  # JSON type: "string" | "integer" | "number" | "boolean" | "array" | "object"
    default: object  # as package.json declares it: "" for an unset string
    minimum: float | None = None
    maximum: float | None = None
    enum: tuple[str, ...] = ()
    pattern: str | None = None  # a non-empty string value must match it
    nullable: bool = False  # null is a value of its own (seed: no seed)
    aliases: tuple[str, ...] = ()  # more keys read for the same field (the CLI's, older ones)
    env: tuple[str, ...] = ()  # environment variables read for it, in order
    in_editor: bool = True  # declared in package.json; False: CLI, environment or internal only
    # It chooses a program to run or the host that gets the API key: a workspace's own settings
    # file may set it only in a trusted workspace (package.json restrictedConfigurations).
    restricted: bool = False


ARCH_PATTERN = r"^(|sm_[0-9]+[af]?)$"  # empty: chosen from the file's .target or the GPU

# The ptxls.llm section. Bounds: a round count of 1000 or a 10 ms timeout is a typo, refused with
# a message rather than left to run.
LLM_SETTINGS = (
    SettingSpec("baseUrl", "base_url", "string", "", env=("OPENAI_BASE_URL",), restricted=True),
    SettingSpec("model", "model", "string", "", env=("PTXLS_MODEL",)),
    SettingSpec(
        "temperature", "temperature", "number", 0.1, minimum=0, maximum=2,
        env=("PTXLS_LLM_TEMPERATURE",),
    ),
    SettingSpec("seed", "seed", "integer", 1234, nullable=True, env=("PTXLS_LLM_SEED",)),
    SettingSpec(
        "maxTokens", "max_tokens", "integer", 8192, minimum=256, env=("PTXLS_LLM_MAX_TOKENS",)
    ),
    SettingSpec(
        "timeoutSeconds", "timeout_s", "number", 90, minimum=1, maximum=3600,
        aliases=("timeout",), env=("PTXLS_LLM_TIMEOUT",),
    ),
    SettingSpec(
        "candidates", "candidates", "integer", 2, minimum=1, maximum=16,
        env=("PTXLS_LLM_CANDIDATES",),
    ),
    SettingSpec(
        "maxRounds", "rounds", "integer", 5, minimum=1, maximum=50,
        aliases=("rounds",), env=("PTXLS_LLM_ROUNDS",),
    ),
    SettingSpec(
        "strategy", "strategy", "string", "direct", enum=STRATEGIES, env=("PTXLS_LLM_STRATEGY",)
    ),
    SettingSpec(
        "retries", "retries", "integer", 4, minimum=0, maximum=10, env=("PTXLS_LLM_RETRIES",)
    ),
    SettingSpec(
        None, "retry_backoff_s", "number", 1.0, minimum=0, maximum=60,
        env=("PTXLS_LLM_RETRY_BACKOFF",), in_editor=False,
    ),
    SettingSpec(
        "fewshot", "fewshot_count", "integer", 2, minimum=0, maximum=8,
        env=("PTXLS_LLM_FEWSHOT",),
    ),
    # filled by the server from ptxls.arch and by the CLI from --arch
    SettingSpec("arch", "arch", "string", "sm_90", pattern=ARCH_PATTERN, in_editor=False),
    SettingSpec("stream", "stream", "boolean", True, env=("PTXLS_LLM_STREAM",)),
    SettingSpec(
        "reasoningEffort", "reasoning_effort", "string", "", enum=("", *REASONING_EFFORTS),
        env=("PTXLS_LLM_REASONING_EFFORT", "PTXLS_REASONING_EFFORT"),
    ),
    SettingSpec(
        "maxReplyChars", "max_reply_chars", "integer", 400_000, minimum=1000,
        env=("PTXLS_LLM_MAX_REPLY_CHARS",),
    ),
    SettingSpec(
        "budgetSeconds", "budget_s", "number", 600, minimum=0, env=("PTXLS_LLM_BUDGET_SECONDS",)
    ),
    SettingSpec(
        "maxTotalTokens", "max_total_tokens", "integer", 0, minimum=0,
        env=("PTXLS_LLM_MAX_TOTAL_TOKENS",),
    ),
    SettingSpec(
        "pricePromptPerMTok", "price_prompt", "number", 0, minimum=0,
        env=("PTXLS_LLM_PRICE_PROMPT",),
    ),
    SettingSpec(
        "priceCompletionPerMTok", "price_completion", "number", 0, minimum=0,
        env=("PTXLS_LLM_PRICE_COMPLETION",),
    ),
    SettingSpec("maxCost", "max_cost", "number", 0, minimum=0, env=("PTXLS_LLM_MAX_COST",)),
    SettingSpec("extraBody", "extra_body", "object", {}, env=("PTXLS_LLM_EXTRA_BODY",)),
    # they go only to baseUrl's host, which only a trusted workspace may set
    SettingSpec("extraHeaders", "extra_headers", "object", {}, env=("PTXLS_LLM_EXTRA_HEADERS",)),
)  # fmt: skip

# LSP config key (under ptxls.llm) → dataclass field, aliases included (every row here fills a
# field: ``attr`` is None only for the client's own settings, in server/settings.py)
CONFIG_KEYS = {
    key: spec.attr
    for spec in LLM_SETTINGS
    if spec.attr
    for key in ((spec.key,) if spec.key else ()) + spec.aliases
}
# environment variable → dataclass field (the OpenAI SDK's own names where they exist)
ENV_KEYS = {var: spec.attr for spec in LLM_SETTINGS if spec.attr for var in spec.env}
_SPEC_OF_FIELD = {spec.attr: spec for spec in LLM_SETTINGS if spec.attr}


def read_value(spec: SettingSpec, value: object, default: object) -> object:
    """``value`` as the field holds it, checked against the spec's type, enum, pattern and
    bounds; ``default`` for an empty string. ValueError/TypeError say what is wrong."""
    if value is None:
        if spec.nullable:
            return None
        raise TypeError(f"expected {_type_words(spec)}, got null")
    if spec.type == "string":
        return _read_string(spec, value, default)
    if spec.type == "boolean":
        if not isinstance(value, bool):
            raise TypeError(f"expected true or false, got {type(value).__name__}")
        return value
    if spec.type in ("integer", "number"):
        return _read_number(spec, value)
    if spec.type == "object":
        return _read_object(spec, value)
    if spec.type == "array":
        if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise TypeError("expected a list of strings")
        return list(value)
    raise TypeError(f"setting type {spec.type} is not known")


# what extraBody may not set: the loop sets these itself (and adapts them when refused)
RESERVED_BODY = ("model", "messages", "stream", "stream_options", "n")


def _read_object(spec: SettingSpec, value: object) -> dict:
    if not isinstance(value, dict):
        raise TypeError(f"expected an object, got {type(value).__name__}")
    if spec.attr == "extra_headers":
        bad = [k for k, v in value.items() if not isinstance(v, str) or "\n" in v or "\r" in v]
        if bad:
            raise ValueError(f"header values must be one-line strings ({', '.join(bad[:3])})")
        if any(k.lower() == "authorization" for k in value):
            raise ValueError("the key goes in OPENAI_API_KEY, not in a header setting")
    if spec.attr == "extra_body":
        taken = [k for k in value if k in RESERVED_BODY]
        if taken:
            raise ValueError(f"{', '.join(taken)} are set by ptxls itself")
    return dict(value)


def _read_string(spec: SettingSpec, value: object, default: object) -> object:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    v = value.strip().lower() if spec.enum else value.strip()
    if spec.enum and v not in spec.enum:
        raise ValueError(f"must be one of {', '.join(repr(e) for e in spec.enum)}")
    if spec.pattern and not re.match(spec.pattern, v):
        raise ValueError(f"must match {spec.pattern}")
    return v or default


def _read_number(spec: SettingSpec, value: object) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"expected {_type_words(spec)}, got {type(value).__name__}")
    if spec.type == "integer":
        if isinstance(value, float) and not value.is_integer():
            raise TypeError(f"expected a whole number, got {value!r}")
        v: int | float = int(value) if math.isfinite(value) else value
    else:
        v = float(value)
    low = -math.inf if spec.minimum is None else spec.minimum
    high = math.inf if spec.maximum is None else spec.maximum
    # NaN compares false both ways, so it is out of every range
    if not (math.isfinite(v) and low <= v <= high):
        raise ValueError(f"out of range {_bounds_words(spec)}")
    return v


def read_text(spec: SettingSpec, text: str, default: object) -> object:
    """An environment variable's text as the field holds it (the environment has only text)."""
    t = text.strip()
    if spec.nullable and t.lower() in ("", "none", "null"):
        return None
    if spec.type == "boolean":
        return t.lower() not in ("0", "false", "no", "off")
    if spec.type in ("integer", "number"):
        try:
            number = int(t) if spec.type == "integer" else float(t)
        except ValueError:
            raise ValueError(f"expected {_type_words(spec)}") from None
        return read_value(spec, number, default)
    if spec.enum and "" in spec.enum and t.lower() in ("none", "default"):
        t = ""
    if spec.type == "object":  # JSON text: PTXLS_LLM_EXTRA_BODY='{"top_k": 20}'
        if not t:
            return dict(default) if isinstance(default, dict) else {}
        try:
            value = json.loads(t)
        except json.JSONDecodeError as e:
            raise ValueError(f"expected a JSON object ({e.msg})") from None
        return _read_object(spec, value)
    return read_value(spec, t, default)


def _type_words(spec: SettingSpec) -> str:
    words = {"integer": "a whole number", "number": "a number"}.get(spec.type, spec.type)
    return f"{words} or null" if spec.nullable else words


def _bounds_words(spec: SettingSpec) -> str:
    if spec.minimum is not None and spec.maximum is not None:
        return f"{spec.minimum:g}–{spec.maximum:g}"
    if spec.minimum is not None:
        return f"at least {spec.minimum:g}"
    return f"at most {spec.maximum:g}"


def short_repr(value: object, limit: int = 80) -> str:
    """repr for a message: a megabyte string in a settings file is not echoed whole."""
    r = repr(value)
    return r if len(r) <= limit else r[: limit - 3] + "..."


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
    # prompt + completion tokens of all replies together; 0: no cap
    max_total_tokens: int = 0
    # prices per million tokens (any currency): with them the run's cost is reported and
    # max_cost (0: none) caps it
    price_prompt: float = 0.0
    price_completion: float = 0.0
    max_cost: float = 0.0
    # sent with every request: {"chat_template_kwargs": {"enable_thinking": false}}, "top_k" …
    extra_body: dict = field(default_factory=dict)
    # sent with every request (OpenRouter's HTTP-Referer/X-Title …); values never logged
    extra_headers: dict = field(default_factory=dict, repr=False)

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

    def secrets(self) -> list[str | None]:
        """What is sent with every request and never shown: the key and the header values."""
        return [self.api_key, *self.extra_headers.values()]

    def public_dict(self, endpoint: Endpoint | None = None) -> dict:
        """Everything but the key, for transcripts and reports (``endpoint``: the one the
        lowering made at its start, else made here)."""
        from ptxls.toolchain.secrets import endpoint_of

        d = dataclasses.asdict(self)
        d.pop("api_key", None)
        d["extra_headers"] = {k: "(set)" for k in self.extra_headers}  # names only
        d["base_url"] = (endpoint or endpoint_of(self.base_url)).url
        d["api_key_set"] = bool(self.api_key)
        return d


def _apply(s: LlmSettings, values: Mapping[str, object], env: bool, where: str) -> list[str]:
    """Set the fields ``values`` names (environment variables or config keys); one message per
    value that is refused, which leaves the field as it was."""
    problems = []
    for key, name in (ENV_KEYS if env else CONFIG_KEYS).items():
        spec = _SPEC_OF_FIELD[name]
        default = getattr(LlmSettings, name, spec.default)  # a default_factory field: the spec's
        # null leaves the default, except where null means something (seed: none sent)
        if key not in values or (values[key] is None and not spec.nullable):
            continue
        try:
            if env:
                text = values[key]
                assert isinstance(text, str)  # the environment holds text
                value = read_text(spec, text, default)
            else:
                value = read_value(spec, values[key], default)
        except (TypeError, ValueError) as e:
            problems.append(
                f"{where}{key}={short_repr(values[key])} ignored ({e}); using {getattr(s, name)!r}"
            )
            continue
        setattr(s, name, value)
    return problems


def from_env(env: Mapping[str, str] | None = None) -> tuple[LlmSettings, list[str]]:
    env = os.environ if env is None else env
    s = LlmSettings(api_key=env.get("OPENAI_API_KEY") or None)
    problems = _apply(s, env, True, "environment ")
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
        problems += _apply(s, config, False, "setting ptxls.llm.")
    return s, problems
