"""diagnostics/fixes.py and ``ptxls check --fix``: fixes applied only where the text still says
what the check saw, conflicts left to a person, line endings kept."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ptxls.diagnostics.fixes import apply_fixes
from ptxls.diagnostics.model import Fix

ROOT = Path(__file__).resolve().parent.parent
BROKEN = (ROOT / "examples" / "broken.ptx").read_text()


def test_a_fix_replaces_its_token_and_keeps_every_line_ending():
    text = "a %r<6>;\r\nb %r<2>;\rc\n"
    out = apply_fixes(
        text, [Fix("t", 0, 5, "6", "7"), Fix("t", 0, 5, "6", "7"), Fix("u", 1, 5, "2", "10")]
    )
    assert out.text == "a %r<7>;\r\nb %r<10>;\rc\n"
    assert [f.title for f in out.applied] == ["t", "u"] and not out.left_out


def test_a_fix_whose_text_changed_is_left_out_with_the_reason():
    out = apply_fixes("a %r<9>;\n", [Fix("t", 0, 5, "6", "7"), Fix("v", 4, 0, "x", "y")])
    assert out.text == "a %r<9>;\n" and not out.applied
    assert [why for _, why in out.left_out] == [
        "line 1 no longer says '6' there",
        "its line is not in the file",
    ]


def test_two_fixes_of_one_place_are_both_left_to_a_person():
    out = apply_fixes(
        ".version 7.0\n", [Fix("a", 0, 9, "7.0", "7.5"), Fix("b", 0, 9, "7.0", "8.0")]
    )
    assert out.text == ".version 7.0\n" and len(out.left_out) == 2
    assert "edits the same place" in out.left_out[0][1]


def test_two_fixes_on_one_line_apply_right_to_left():
    out = apply_fixes(
        "bra Done; bra Lop;", [Fix("a", 0, 4, "Done", "DONE"), Fix("b", 0, 14, "Lop", "LOOP")]
    )
    assert out.text == "bra DONE; bra LOOP;"


def ptxls(*args):
    return subprocess.run(
        [sys.executable, "-m", "ptxls.cli", *args], capture_output=True, text=True, timeout=120
    )


def test_check_fix_writes_the_fix_and_checks_the_fixed_file(tmp_path):
    path = tmp_path / "broken.ptx"
    path.write_bytes(BROKEN.replace("\n", "\r\n").encode())
    path.chmod(0o640)
    r = ptxls("check", "--fix", str(path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == ""  # the fixed file is clean
    assert f"{path}:16:20: fixed: Declare %r<7> on line 16 (covers %r6)" in r.stderr
    fixed = path.read_bytes().decode()
    assert fixed == BROKEN.replace(".reg .b32   %r<6>;", ".reg .b32   %r<7>;").replace("\n", "\r\n")
    assert path.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["broken.ptx"]  # no temp file left


def test_check_fix_takes_as_many_rounds_as_the_fixes_need(tmp_path):
    wgmma = (ROOT / "fewshot" / "kernels" / "hgemm_wgmma" / "kernel.ptx").read_text()
    path = tmp_path / "old_header.ptx"
    path.write_text(wgmma.replace(".version 8.0", ".version 7.0").replace("sm_90a", "sm_90"))
    r = ptxls("check", "--fix", str(path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert (
        "fixed: Raise .version to 8.0" in r.stderr
        and "fixed: Change .target sm_90 to sm_90a" in r.stderr
    )
    assert ".version 8.0" in path.read_text() and ".target sm_90a" in path.read_text()


def test_check_without_fix_never_writes(tmp_path):
    path = tmp_path / "broken.ptx"
    path.write_text(BROKEN)
    r = ptxls("check", str(path))
    assert r.returncode == 1 and "note: fix: Declare %r<7>" in r.stdout
    assert path.read_text() == BROKEN


def test_check_fix_leaves_a_file_with_a_byte_order_mark_alone(tmp_path):
    """Rewriting it could change more than the fix (a non-UTF-8 file never gets this far: the
    binary-content guard answers for it, and it has no fixes)."""
    path = tmp_path / "bom.ptx"
    data = "\ufeff".encode() + BROKEN.encode()
    path.write_bytes(data)
    r = ptxls("check", "--fix", str(path))
    assert r.returncode == 1
    assert "--fix leaves a file with a byte-order mark alone" in r.stderr
    assert path.read_bytes() == data
