"""The wheel must carry every subpackage and data file the editable install sees."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_python_package_in_a_room_is_listed():
    listed = set(CONFIG["packages"])
    rooms = CONFIG["package-dir"]
    for dotted, folder in rooms.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            name = ".".join([dotted, *rel.parts]) if rel.parts else dotted
            assert name in listed, f"{name} ({init.parent}) is not in [tool.setuptools].packages"


def test_package_data_globs_match_files():
    for package, globs in CONFIG["package-data"].items():
        folder = ROOT / CONFIG["package-dir"][package]
        for pattern in globs:
            assert list(folder.glob(pattern)), f"{package}: {pattern} matches nothing"
