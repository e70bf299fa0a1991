"""Typed settings of the ``ptxls`` configuration section.

Clients send camelCase keys (``ptxls.debounceMs``); unknown keys are ignored and a value of
the wrong type falls back to its default with one message, so a typo never breaks the server.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Settings:
    ptxas_path: str | None = None
    nvcc_path: str | None = None
    arch: str | None = None
    debounce_ms: int = 150
    save_only_above_bytes: int = 400_000
    ptxas_timeout_seconds: float = 60.0
    max_problems: int = 500
    # The ``ptxls.llm`` section as the client sent it (camelCase). lowering/settings.py owns its
    # meaning, defaults and validation (from_config), with the environment underneath.
    llm: dict = field(default_factory=dict)


def _snake(key: str) -> str:
    out = []
    for ch in key:
        if ch.isupper():
            out.append("_" + ch.lower())
        else:
            out.append(ch)
    return "".join(out)


def _coerce(value: Any, default: Any, annotation: str) -> Any:
    if value is None:
        return None if "None" in annotation else default
    if annotation == "dict":
        if isinstance(value, dict):
            return dict(value)
        raise TypeError(f"expected an object, got {type(value).__name__}")
    if "float" in annotation and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if "int" in annotation and isinstance(value, int) and not isinstance(value, bool):
        return value
    if "str" in annotation and isinstance(value, str):
        return value or (None if "None" in annotation else default)
    raise TypeError(f"expected {annotation}, got {type(value).__name__}")


def _fill(cls, raw: dict, problems: list[str], prefix: str):
    obj = cls()
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key, value in (raw or {}).items():
        name = _snake(key)
        if name not in fields:
            continue
        f = fields[name]
        if dataclasses.is_dataclass(getattr(obj, name)):
            if isinstance(value, dict):
                setattr(
                    obj, name, _fill(type(getattr(obj, name)), value, problems, f"{prefix}{key}.")
                )
            continue
        try:
            setattr(obj, name, _coerce(value, getattr(obj, name), str(f.type)))
        except TypeError as e:
            problems.append(f"setting {prefix}{key}: {e}; using the default {getattr(obj, name)!r}")
    return obj


def settings_from_dict(raw: dict | None) -> tuple[Settings, list[str]]:
    """Settings from the client's ``ptxls`` section, and a message per ignored value."""
    problems: list[str] = []
    if raw is not None and not isinstance(raw, dict):
        return Settings(), [f"the ptxls settings should be an object, got {type(raw).__name__}"]
    settings = _fill(Settings, raw or {}, problems, "ptxls.")
    if settings.llm:
        from ptxls.lowering.settings import from_config

        _, llm_problems = from_config(settings.llm)
        problems += llm_problems
    # A value of the right type can still be absurd, and settings may come from a cloned
    # repository's own settings file: a ptxas timeout of 1e308 or NaN never fires (a hung
    # ptxas runs until the next edit), -1 times every run out at once (no diagnostics at all).
    defaults = Settings()
    for name, key, low, high in _RANGES:
        value = getattr(settings, name)
        if not (isinstance(value, int | float) and math.isfinite(value) and low <= value <= high):
            default = getattr(defaults, name)
            problems.append(
                f"setting ptxls.{key}={value!r} is out of range {low}–{high}; using {default}"
            )
            setattr(settings, name, default)
    return settings, problems


_RANGES = (
    ("debounce_ms", "debounceMs", 0, 10_000),
    ("ptxas_timeout_seconds", "ptxasTimeoutSeconds", 1, 3600),
    ("max_problems", "maxProblems", 1, 100_000),
    ("save_only_above_bytes", "saveOnlyAboveBytes", 0, 1 << 40),
)
