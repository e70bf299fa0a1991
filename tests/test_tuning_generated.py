"""The tuning candidates in bench/tuning/ that a generator writes are exactly what it writes
today, byte for byte: each committed .ptx/.cu/.spec.json can be made again with one command
(``python bench/tuning/gen_scan.py`` and so on), and an edit of a generator, or of the library
spec a candidate's spec is made from, that would change one shows here."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

TUNING = Path(__file__).resolve().parent.parent / "bench" / "tuning"
GENERATORS = ["gen_scan", "gen_hgemm", "gen_histogram"]


@pytest.fixture(scope="module")
def made() -> dict[str, dict[str, str]]:
    sys.path.insert(0, str(TUNING))
    try:
        return {g: importlib.import_module(g).made() for g in GENERATORS}
    finally:
        sys.path.remove(str(TUNING))


@pytest.mark.parametrize("generator", GENERATORS)
def test_every_committed_candidate_is_what_its_generator_writes(made, generator):
    files = made[generator]
    assert files, f"{generator} makes nothing"
    for name, text in files.items():
        path = TUNING / name
        assert path.is_file(), f"{name}: made by {generator}, not committed"
        assert path.read_bytes() == text.encode(), (
            f"{name} is not what {generator}.py writes: run python bench/tuning/{generator}.py"
        )


def test_no_two_generators_write_the_same_file(made):
    names = [name for files in made.values() for name in files]
    assert len(names) == len(set(names))


def test_the_check_mode_sees_a_changed_file(tmp_path, made):
    sys.path.insert(0, str(TUNING))
    try:
        from generated import cli, differing
    finally:
        sys.path.remove(str(TUNING))
    files = made["gen_histogram"]
    assert cli(lambda: files, "test", ["--out", str(tmp_path)]) == 0
    assert differing(files, tmp_path) == []
    first = sorted(files)[0]
    (tmp_path / first).write_text(files[first] + " ")
    assert differing(files, tmp_path) == [first]
    assert cli(lambda: files, "test", ["--out", str(tmp_path), "--check"]) == 1
