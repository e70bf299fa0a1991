"""Typed settings of the ``ptxls`` configuration section.

Clients send camelCase keys (``ptxls.debounceMs``); unknown keys are ignored and a value of
the wrong type or out of its bounds falls back to its default with one message, so a typo (or a
cloned repository's own settings file) never breaks the server.

``SCHEMA`` is every setting of the section, with ``lowering.settings.SettingSpec`` rows: the
editor's settings here (``SERVER_SETTINGS``), the client's own (``CLIENT_SETTINGS``, read by the
VS Code extension only) and the ``ptxls.llm`` section (``lowering.settings.LLM_SETTINGS``).
vscode-client/package.json declares the same names, types, defaults, enums and bounds;
tests/test_settings_schema.py fails when they drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ptxls.lowering.settings import (
    ARCH_PATTERN,
    LLM_SETTINGS,
    SettingSpec,
    from_config,
    read_value,
    short_repr,
)


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


# Bounds: a value of the right type can still be absurd. A ptxas timeout of 1e308 or NaN never
# fires (a hung ptxas runs until the next edit); -1 times every run out at once (no diagnostics).
SERVER_SETTINGS = (
    SettingSpec("ptxasPath", "ptxas_path", "string", "", restricted=True),
    SettingSpec("nvccPath", "nvcc_path", "string", "", restricted=True),
    SettingSpec("arch", "arch", "string", "", pattern=ARCH_PATTERN),
    SettingSpec("debounceMs", "debounce_ms", "integer", 150, minimum=0, maximum=5000),
    SettingSpec(
        "saveOnlyAboveBytes", "save_only_above_bytes", "integer", 400_000,
        minimum=0, maximum=1 << 40,
    ),
    SettingSpec(
        "ptxasTimeoutSeconds", "ptxas_timeout_seconds", "number", 60, minimum=1, maximum=3600
    ),
    SettingSpec("maxProblems", "max_problems", "integer", 500, minimum=1, maximum=100_000),
    SettingSpec("llm", "llm", "object", {}, in_editor=False),  # its keys: LLM_SETTINGS
)  # fmt: skip

# Read by the VS Code client to start the server or log its messages; the server never sees them.
CLIENT_SETTINGS = (
    SettingSpec("server.pythonPath", None, "string", "", restricted=True),
    SettingSpec("server.command", None, "array", [], restricted=True),
    SettingSpec("trace.server", None, "string", "off", enum=("off", "messages", "verbose")),
)

SCHEMA: dict[str, SettingSpec] = {
    **{f"ptxls.{s.key}": s for s in CLIENT_SETTINGS + SERVER_SETTINGS},
    **{f"ptxls.llm.{s.key}": s for s in LLM_SETTINGS if s.key},
}


def settings_from_dict(raw: dict | None) -> tuple[Settings, list[str]]:
    """Settings from the client's ``ptxls`` section, and a message per ignored value."""
    if raw is not None and not isinstance(raw, dict):
        return Settings(), [f"the ptxls settings should be an object, got {type(raw).__name__}"]
    settings, problems = Settings(), []
    for spec in SERVER_SETTINGS:
        if (raw or {}).get(spec.key) is None:  # not sent, or null: the default
            continue
        value, default = raw[spec.key], getattr(settings, spec.attr)
        try:
            setattr(settings, spec.attr, read_value(spec, value, default))
        except (TypeError, ValueError) as e:
            problems.append(
                f"setting ptxls.{spec.key}={short_repr(value)} ignored ({e}); "
                f"using the default {default!r}"
            )
    if settings.llm:
        _, llm_problems = from_config(settings.llm)
        problems += llm_problems
    return settings, problems
