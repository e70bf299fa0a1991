"""Writes that stay inside their folder and never follow a symlink (lowering/safe_write.py)."""

from __future__ import annotations

import os

import pytest

from ptxls.lowering import safe_write
from ptxls.lowering.safe_write import UnsafeWrite


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    return root, victim


def test_writes_creates_folders_and_replaces_atomically(ws):
    root, _ = ws
    out = safe_write.write_text(root / "a" / "b" / "k.ptx", "one\n", root=root)
    assert out.read_text() == "one\n"
    safe_write.write_text(root / "a" / "b" / "k.ptx", "two\n", root=root)
    assert out.read_text() == "two\n"
    assert sorted(os.listdir(out.parent)) == ["k.ptx"]  # no temporary file left behind


def test_symlinked_file_is_refused_or_replaced_never_written_through(ws):
    root, victim = ws
    link = root / "k.ptx"
    link.symlink_to(victim)
    with pytest.raises(UnsafeWrite, match="symbolic link"):
        safe_write.write_text(link, "evil\n", root=root)
    assert victim.read_text() == "precious\n"
    safe_write.write_text(link, "mine\n", root=root, replace_symlink=True)
    assert not link.is_symlink() and link.read_text() == "mine\n"
    assert victim.read_text() == "precious\n"


def test_symlinked_folder_leading_out_is_refused(ws):
    root, victim = ws
    (root / ".ptxls").symlink_to(victim.parent, target_is_directory=True)
    with pytest.raises(UnsafeWrite, match="outside"):
        safe_write.write_text(root / ".ptxls" / "victim.txt", "evil\n", root=root)
    assert victim.read_text() == "precious\n"


def test_symlinked_folder_inside_the_workspace_is_fine(ws):
    root, _ = ws
    (root / "real").mkdir()
    (root / "alias").symlink_to(root / "real", target_is_directory=True)
    out = safe_write.write_text(root / "alias" / "k.ptx", "ok\n", root=root)
    assert (root / "real" / "k.ptx").read_text() == "ok\n" and out == root / "real" / "k.ptx"


def test_dot_dot_and_absolute_escapes_are_refused(ws):
    root, victim = ws
    with pytest.raises(UnsafeWrite):
        safe_write.write_text(root / ".." / "victim.txt", "evil\n", root=root)
    with pytest.raises(UnsafeWrite):
        safe_write.write_text(victim, "evil\n", root=root)
    assert victim.read_text() == "precious\n"


def test_create_new_and_append_never_follow_links(ws):
    root, victim = ws
    t = safe_write.create_new(root / ".ptxls" / "transcripts" / "t.jsonl", root=root)
    safe_write.append_text(t, "a\n")
    safe_write.append_text(t, "b\n")
    assert t.read_text() == "a\nb\n"
    with pytest.raises(FileExistsError):
        safe_write.create_new(t, root=root)
    t.unlink()
    t.symlink_to(victim)  # swapped for a link after creation
    with pytest.raises(UnsafeWrite):
        safe_write.append_text(t, "evil\n")
    assert victim.read_text() == "precious\n"
    link = root / "x.jsonl"
    link.symlink_to(victim)
    with pytest.raises(FileExistsError):  # O_EXCL: a dangling or live link is "exists"
        safe_write.create_new(link, root=root)


def test_is_inside(ws):
    root, victim = ws
    assert safe_write.is_inside(root / "a" / "b.cu", root)
    assert not safe_write.is_inside(victim, root)
    (root / "out").symlink_to(victim.parent, target_is_directory=True)
    assert not safe_write.is_inside(root / "out" / "victim.txt", root)
