"""The wheel must carry every subpackage and data file the editable install sees, and
`pip install -e .` must be quiet (issue 21): every listed package is importable from src/
(src/ptxls/<room> links to the room's folder at the top of the repository), so setuptools
installs a plain .pth instead of its import hook and that hook's "be careful" warning."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
SRC = ROOT / "src"


def _folder(package: str) -> Path:
    return SRC.joinpath(*package.split("."))


def test_every_python_package_in_a_room_is_listed():
    listed = set(CONFIG["packages"])
    for link in (SRC / "ptxls").iterdir():
        if not link.is_symlink():
            continue
        room = link.resolve()
        for init in room.rglob("__init__.py"):
            rel = init.parent.relative_to(room)
            name = ".".join(["ptxls", link.name, *rel.parts])
            assert name in listed, f"{name} ({init.parent}) is not in [tool.setuptools].packages"


def test_every_package_is_a_folder_under_src_reaching_its_room():
    assert CONFIG["package-dir"] == {"": "src"}
    assert "ptxls" in CONFIG["packages"]  # setuptools sees one parent folder for all of them
    for name in CONFIG["packages"]:
        folder = _folder(name)
        assert (folder / "__init__.py").is_file(), f"{name}: no {folder}/__init__.py"
        room = folder.resolve()
        if name != "ptxls":  # a room's files live at the top of the repository, not under src/
            assert room.is_relative_to(ROOT) and not room.is_relative_to(SRC), (name, room)


def test_package_data_globs_match_files():
    for package, globs in CONFIG["package-data"].items():
        folder = _folder(package)
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
        folder = _folder(package)
        prefix = package.replace(".", "/")
        for pattern in globs:
            for f in folder.glob(pattern):
                assert f"{prefix}/{f.relative_to(folder).as_posix()}" in names, f


def test_editable_install_prints_no_warning(tmp_path):
    """The README's `pip install -e` into a fresh venv (no dependencies: only ptxls's own
    packaging speaks) says nothing of setuptools' editable-install warnings."""
    import subprocess
    import sys

    venv = tmp_path / "venv"
    # a venv without pip, installed into by this environment's pip (--python): ensurepip
    # would add 5 s of CPU (20 s wall on a busy machine) to put a second pip there
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)  # fmt: skip
    proc = subprocess.run(
        # -v: a pip older than 24 shows the build backend's warnings only when verbose
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-v"]
        + ["--no-deps", "--disable-pip-version-check", "-e", str(ROOT)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-3000:]
    for said in ("Editable installation", "be careful", "InformationOnly", "BackendWarning"):
        assert said not in output, output[-3000:]
    (pth,) = (venv / "lib").glob("python3*/site-packages/__editable__.ptxls-*.pth")
    assert pth.read_text().strip() == str(SRC)
