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
from ptxls.toolchain.sanitizer import DEFAULT_TOOLS as SANITIZER_DEFAULT_TOOLS
from ptxls.toolchain.sanitizer import TOOLS as SANITIZER_TOOLS


@dataclass
class Settings:
    ptxas_path: str | None = None
    nvcc_path: str | None = None
    arch: str | None = None
    debounce_ms: int = 150
    save_only_above_bytes: int = 400_000
    ptxas_timeout_seconds: float = 60.0
    max_problems: int = 500
    # "Run with sanitizer": the compute-sanitizer tools a click runs, and the binary (None: the
    # discovery order of toolchain/sanitizer.py: PTXLS_COMPUTE_SANITIZER, PATH, toolkit, wheel)
    sanitizer_tools: list[str] = field(default_factory=lambda: list(SANITIZER_DEFAULT_TOOLS))
    sanitizer_path: str | None = None
    # Where "Run GPU test" and the lowering loop run a kernel: "auto" (the GPU when there is
    # one, else the CPU emulator), "gpu" or "cpu" (gputest/api.py GpuTestOptions.device)
    test_device: str = "auto"
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
    # A dotted key is a nested object in the client's section ({"sanitizer": {"tools": [...]}}),
    # as VS Code sends it. An array's enum names the values its items may take.
    SettingSpec(
        "sanitizer.tools", "sanitizer_tools", "array", list(SANITIZER_DEFAULT_TOOLS),
        enum=SANITIZER_TOOLS,
    ),
    SettingSpec("sanitizer.path", "sanitizer_path", "string", "", restricted=True),
    SettingSpec("test.device", "test_device", "string", "auto", enum=("auto", "gpu", "cpu")),
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
        assert spec.key is not None and spec.attr is not None  # every server row has both
        value = _sent(raw or {}, spec.key)
        if value is None:  # not sent, or null: the default
            continue
        default = getattr(settings, spec.attr)
        try:
            setattr(settings, spec.attr, _read(spec, value, default))
        except (TypeError, ValueError) as e:
            problems.append(
                f"setting ptxls.{spec.key}={short_repr(value)} ignored ({e}); "
                f"using the default {default!r}"
            )
    if settings.llm:
        _, llm_problems = from_config(settings.llm)
        problems += llm_problems
    return settings, problems


def _sent(raw: dict, key: str) -> object:
    """The value of ``key`` in the client's section; a dotted key is read from nested objects
    (``sanitizer.tools`` is ``raw["sanitizer"]["tools"]``), as VS Code and the restricted
    settings filter (server/app.py) see it. None when it was not sent."""
    value: object = raw
    for part in key.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _read(spec: SettingSpec, value: object, default: object) -> object:
    """``read_value``, and for an array with an enum, each item one of its values (lower case,
    each once); an empty list is the default."""
    got = read_value(spec, value, default)
    if spec.type != "array" or not spec.enum:
        return got
    assert isinstance(got, list) and isinstance(default, list)  # read_value's array: a list
    items: list[str] = []
    for item in got:
        word = item.strip().lower()
        if word not in spec.enum:
            raise ValueError(f"{item!r} is not one of {', '.join(repr(e) for e in spec.enum)}")
        if word not in items:
            items.append(word)
    return items or list(default)
