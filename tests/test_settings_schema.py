"""One settings schema: server/settings.py SCHEMA (the editor's settings, the client's own and
lowering.settings.LLM_SETTINGS). These tests fail when vscode-client/package.json, the server's
Settings and the lowering's LlmSettings disagree on a setting's name, type, default, enum,
pattern or bounds, when a bound is declared but not enforced, and when package.json declares a
setting (or names a tool flag or environment variable) that no code reads.

To add a setting: a row in SERVER_SETTINGS or LLM_SETTINGS and a field in Settings/LlmSettings,
then ``.venv/bin/python scripts/sync_settings.py`` and write its description in package.json.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from pathlib import Path

import pytest

from ptxls.lowering.settings import LLM_SETTINGS, LlmSettings, SettingSpec, from_config
from ptxls.server.settings import CLIENT_SETTINGS, SCHEMA, SERVER_SETTINGS, settings_from_dict

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = json.loads((ROOT / "vscode-client" / "package.json").read_text(encoding="utf-8"))
PROPERTIES = PACKAGE["contributes"]["configuration"]["properties"]
EDITOR = {name: spec for name, spec in SCHEMA.items() if spec.in_editor}
PYTHON_ROOMS = ("server", "cli", "lowering", "diagnostics", "gputest", "toolchain", "frontend")


def _schema_json(spec: SettingSpec) -> dict:
    """What package.json must say, written out here rather than taken from the generator. An
    array is a list of strings; its enum is what each item may be (``items.enum``)."""
    array = spec.type == "array"
    return {
        "type": [spec.type, "null"] if spec.nullable else spec.type,
        "default": spec.default,
        "enum": None if array else list(spec.enum) or None,
        "items": {"type": "string", **({"enum": list(spec.enum)} if spec.enum else {})}
        if array
        else None,
        "pattern": spec.pattern,
        "minimum": spec.minimum,
        "maximum": spec.maximum,
    }


def test_package_json_declares_exactly_the_editor_settings_of_the_schema():
    missing = sorted(set(EDITOR) - set(PROPERTIES))
    unknown = sorted(set(PROPERTIES) - set(EDITOR))
    assert missing == [], (
        f"in the schema, not in package.json (scripts/sync_settings.py): {missing}"
    )
    assert unknown == [], f"package.json settings no code reads (or not in the schema): {unknown}"


@pytest.mark.parametrize("name", sorted(EDITOR))
def test_package_json_says_what_the_schema_says(name):
    prop = PROPERTIES[name]
    declared = {key: prop.get(key) for key in _schema_json(EDITOR[name])}
    assert declared == _schema_json(EDITOR[name]), f"{name}: package.json vs schema"
    assert prop.get("markdownDescription") or prop.get("description"), f"{name}: no description"
    if prop.get("enumDescriptions"):
        assert len(prop["enumDescriptions"]) == len(prop["enum"]), name


def _python_default(spec: SettingSpec) -> object:
    return None if spec.default == "" else spec.default


def test_server_settings_fields_and_defaults_are_the_schema_rows():
    defaults = dataclasses.asdict(_server_defaults())
    assert set(defaults) == {s.attr for s in SERVER_SETTINGS}
    for spec in SERVER_SETTINGS:
        assert defaults[spec.attr] == _python_default(spec), spec.key


def _server_defaults():
    settings, problems = settings_from_dict({})
    assert problems == []
    return settings


def test_lowering_settings_fields_and_defaults_are_the_schema_rows():
    s = LlmSettings()
    fields = {f.name for f in dataclasses.fields(LlmSettings)} - {"api_key"}  # environment only
    assert fields == {spec.attr for spec in LLM_SETTINGS}
    for spec in LLM_SETTINGS:
        assert getattr(s, spec.attr) == _python_default(spec), spec.attr


# ---- every bound, enum and pattern is enforced where the value is read


def _read(spec: SettingSpec, value):
    """(value the reader kept, its messages) for one setting given ``value``."""
    if any(spec is s for s in LLM_SETTINGS):
        s, problems = from_config({spec.key: value}, env={})
        return getattr(s, spec.attr), problems
    sent: object = value
    for part in reversed(spec.key.split(".")):  # "sanitizer.tools": {"sanitizer": {"tools": v}}
        sent = {part: sent}
    s, problems = settings_from_dict(sent)
    return getattr(s, spec.attr), problems


READ = [s for s in SERVER_SETTINGS + LLM_SETTINGS if s.key and s.type != "object"]
BOUNDED = [(s, b) for s in READ for b in ("minimum", "maximum") if getattr(s, b) is not None]


@pytest.mark.parametrize(
    "spec, bound", BOUNDED, ids=[f"{s.key}-{b}" for s, b in BOUNDED]
)  # fmt: skip
def test_a_bound_is_accepted_and_one_step_past_it_is_refused(spec, bound):
    edge = getattr(spec, bound)
    step = 1 if spec.type == "integer" else 0.5
    past = edge - step if bound == "minimum" else edge + step
    value, problems = _read(spec, edge)
    assert (value, problems) == (edge, []), f"{spec.key}={edge} is inside its bounds"
    value, problems = _read(spec, past)
    assert value != past and len(problems) == 1 and spec.key in problems[0], (spec.key, past)


@pytest.mark.parametrize("spec", [s for s in READ if s.enum], ids=lambda s: s.key)
def test_every_enum_value_is_accepted_and_others_are_refused(spec):
    array = spec.type == "array"  # its enum is what each item may be
    for choice in spec.enum:
        value, problems = _read(spec, [choice] if array else choice)
        expected = [choice] if array else choice or _python_default(spec)
        assert problems == [] and value == expected, choice
    value, problems = _read(spec, [spec.enum[0], "not-a-choice"] if array else "not-a-choice")
    assert len(problems) == 1 and spec.key in problems[0]
    assert value == _python_default(spec)


@pytest.mark.parametrize("spec", [s for s in READ if s.pattern], ids=lambda s: s.key)
def test_a_pattern_is_enforced(spec):
    assert _read(spec, "sm_100a") == ("sm_100a", [])
    value, problems = _read(spec, "compute_90")
    assert value != "compute_90" and len(problems) == 1 and spec.key in problems[0]


@pytest.mark.parametrize("spec", READ, ids=lambda s: s.key)
def test_a_value_of_another_type_is_refused_with_one_message(spec):
    wrong = 7 if spec.type == "string" else "7"
    value, problems = _read(spec, wrong)
    assert value == _python_default(spec) and len(problems) == 1 and spec.key in problems[0]


# ---- nobody declares what nobody reads


def _python_sources() -> str:
    return "\n".join(
        p.read_text(encoding="utf-8")
        for room in PYTHON_ROOMS
        for p in (ROOT / room).rglob("*.py")
        if p.name != "settings.py"
    )


@pytest.mark.parametrize("spec", SERVER_SETTINGS + LLM_SETTINGS, ids=lambda s: s.attr)
def test_every_setting_is_read_by_code_outside_the_settings_modules(spec):
    assert re.search(rf"\.{spec.attr}\b", _python_sources()), f"nothing reads .{spec.attr}"


def test_client_only_settings_are_read_by_the_client():
    client = "\n".join(p.read_text() for p in (ROOT / "vscode-client" / "src").glob("*.ts"))
    for spec in CLIENT_SETTINGS:
        if spec.key == "trace.server":
            # vscode-languageclient reads <client id>.trace.server itself
            assert re.search(r'new LanguageClient\(\s*"ptxls"', client)
        else:
            assert f'"{spec.key}"' in client, spec.key


def _described_words(pattern: str, specs) -> set[str]:
    words = set()
    for name, spec in SCHEMA.items():
        if spec in specs and name in PROPERTIES:
            words.update(re.findall(pattern, PROPERTIES[name].get("markdownDescription", "")))
    return words


def test_environment_variables_the_descriptions_name_are_read():
    sources = _python_sources()
    for var in _described_words(r"`([A-Z][A-Z0-9_]{3,})`", SERVER_SETTINGS + LLM_SETTINGS):
        assert var in sources, f"package.json names {var}, which no code reads"


FLAG = r"`(--?[a-z][\w-]*)`"


def test_tool_flags_the_descriptions_name_are_passed():
    tools = "\n".join(p.read_text() for p in (ROOT / "toolchain").glob("*.py"))
    flags = _described_words(FLAG, SERVER_SETTINGS + LLM_SETTINGS)
    assert "-arch" in flags, "the arch setting names the flag it sets"
    for flag in flags:
        assert re.search(rf'["\']{re.escape(flag)}\b', tools), f"no tool is given {flag}"


# ---- trust: the settings a cloned repository may not set for you


def test_restricted_settings_are_the_same_for_vscode_and_the_server():
    from ptxls.server.app import RESTRICTED_SETTINGS

    restricted = {name for name, spec in SCHEMA.items() if spec.restricted}
    declared = PACKAGE["capabilities"]["untrustedWorkspaces"]["restrictedConfigurations"]
    assert sorted(declared) == sorted(restricted)
    server_side = {name for name in restricted if SCHEMA[name].attr}
    assert {"ptxls." + ".".join(path) for path in RESTRICTED_SETTINGS} == server_side


# ---- every ptxls.<name> the code and docs mention is a setting or a command

REFUSED = {"ptxls.llm.apiKey"}  # named in the message that refuses it: the key is env-only
MENTION = re.compile(r"\bptxls\.(?:llm\.)?[a-z]+[A-Z][A-Za-z]*\b")


def _commands() -> set[str]:
    names = {c["command"] for c in PACKAGE["contributes"]["commands"]}
    for path in (ROOT / "server").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            text = node.value if isinstance(node, ast.Constant) else None
            if isinstance(text, str) and re.fullmatch(r"ptxls\.[a-z]+[A-Za-z]*", text):
                names.add(text)
    return names


def test_every_setting_named_in_code_and_docs_exists():
    known = set(SCHEMA) | _commands() | REFUSED
    files = [
        p
        for pattern in ("*.py", "*.md", "*.ts", "*.sh")
        for p in ROOT.rglob(pattern)
        if not {"node_modules", ".venv", "build", ".git", "out", "out-test"} & set(p.parts)
    ]
    unknown = {
        f"{name} ({path.relative_to(ROOT)})"
        for path in files
        for name in MENTION.findall(path.read_text(encoding="utf-8", errors="replace"))
        if name not in known
    }
    assert sorted(unknown) == [], "no such setting or command"
