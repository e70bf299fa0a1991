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


def test_wheel_builds_quietly_and_carries_the_data(tmp_path):
    """No setuptools warnings (each data folder used to print a "Package ... is absent" screen)."""
    import subprocess
    import sys
    import zipfile

    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps"]
        + ["--no-cache-dir", str(ROOT), "-w", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    output = proc.stdout + proc.stderr
    assert "is absent from the `packages`" not in output, output[-3000:]
    assert "SetuptoolsDeprecationWarning" not in output, output[-3000:]
    (wheel,) = tmp_path.glob("ptxls-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for package, globs in CONFIG["package-data"].items():
        folder = ROOT / CONFIG["package-dir"][package]
        prefix = package.replace(".", "/")
        for pattern in globs:
            for f in folder.glob(pattern):
                assert f"{prefix}/{f.relative_to(folder).as_posix()}" in names, f
