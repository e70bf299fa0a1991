"""Write the settings schema (server/settings.py SCHEMA) into vscode-client/package.json.

For every setting the editor shows, package.json's type, default, enum (an array's: its items'),
pattern, minimum and maximum are set from the schema; its prose (markdownDescription,
enumDescriptions, scope) is kept. The restricted settings (``restricted=True``: they choose a
program to run) are added to ``capabilities.untrustedWorkspaces.restrictedConfigurations``.
A setting new to package.json is added after the others of its section with an empty
description, which tests/test_settings_schema.py then asks you to write. A package.json setting
the schema does not know is left alone (the test names it).

    .venv/bin/python scripts/sync_settings.py          # rewrite package.json
    .venv/bin/python scripts/sync_settings.py --check  # exit 1 when it would change
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ptxls.lowering.settings import SettingSpec
from ptxls.server.settings import SCHEMA

PACKAGE_JSON = Path(__file__).resolve().parent.parent / "vscode-client" / "package.json"
MACHINE_KEYS = ("type", "default", "enum", "items", "pattern", "minimum", "maximum")


def json_fields(spec: SettingSpec) -> dict:
    """The machine-readable part of a package.json setting, as the schema says it."""
    out: dict = {"type": [spec.type, "null"] if spec.nullable else spec.type}
    out["default"] = spec.default
    if spec.type == "array":  # read_value takes lists of strings only
        out["items"] = {"type": "string", **({"enum": list(spec.enum)} if spec.enum else {})}
    elif spec.enum:
        out["enum"] = list(spec.enum)
    if spec.pattern:
        out["pattern"] = spec.pattern
    if spec.minimum is not None:
        out["minimum"] = spec.minimum
    if spec.maximum is not None:
        out["maximum"] = spec.maximum
    return out


def synced(properties: dict) -> dict:
    """``properties`` with every editor setting's machine fields taken from the schema."""
    result = dict(properties)
    for name, spec in SCHEMA.items():
        if not spec.in_editor:
            continue
        result[name] = _merged(result.get(name, {"markdownDescription": ""}), json_fields(spec))
    return _in_section_order(result, properties)


def restricted(declared: list[str]) -> list[str]:
    """``declared`` with every restricted setting of the schema that it lacks, after the last
    one of its section (a name no setting has is left for the test to name)."""
    result = list(declared)
    for name, spec in SCHEMA.items():
        if spec.restricted and name not in result:
            section = name.rsplit(".", 1)[0]
            at = max((i for i, n in enumerate(result) if n.startswith(section + ".")), default=-1)
            result.insert(at + 1 if at >= 0 else len(result), name)
    return result


def _merged(entry: dict, fields: dict) -> dict:
    """``entry`` with its machine fields replaced by ``fields``, keys in their old order (a new
    one after the last machine key), so the diff shows only what changed."""
    keys = [k for k in entry if k not in MACHINE_KEYS or k in fields]
    for key in fields:
        if key not in keys:
            last = max((i for i, k in enumerate(keys) if k in MACHINE_KEYS), default=-1)
            keys.insert(last + 1, key)
    return {k: fields[k] if k in fields else entry[k] for k in keys}


def _in_section_order(result: dict, before: dict) -> dict:
    """Existing settings keep their place; a new one goes after the last of its section."""
    order = list(before)
    for name in result:
        if name in order:
            continue
        section = name.rsplit(".", 1)[0]
        at = max((i for i, n in enumerate(order) if n.rsplit(".", 1)[0] == section), default=-1)
        order.insert(at + 1 if at >= 0 else len(order), name)
    return {name: result[name] for name in order}


def main(argv: list[str]) -> int:
    text = PACKAGE_JSON.read_text(encoding="utf-8")
    package = json.loads(text)
    config = package["contributes"]["configuration"]
    config["properties"] = synced(config["properties"])
    trust = package["capabilities"]["untrustedWorkspaces"]
    trust["restrictedConfigurations"] = restricted(trust["restrictedConfigurations"])
    new_text = json.dumps(package, indent=2, ensure_ascii=False) + "\n"
    if "--check" in argv:
        if new_text != text:
            print(f"{PACKAGE_JSON} differs from the settings schema; run {sys.argv[0]}")
            return 1
        return 0
    PACKAGE_JSON.write_text(new_text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
