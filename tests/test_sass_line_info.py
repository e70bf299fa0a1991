"""frontend.line_info: `.loc` directives that point at the original PTX lines.

The round-trip tests use the real ptxas and nvdisasm (the nvidia-cuda-nvcc and
nvidia-cuda-nvdisasm wheels): every library kernel still assembles after the transform, and every
SASS instruction nvdisasm attributes to a line attributes it to an instruction line of the
ORIGINAL file.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from ptxls.frontend.line_info import add_line_info, with_line_info
from ptxls.toolchain.discovery import wheel_bin_dirs

ROOT = Path(__file__).resolve().parent.parent
MODULES = sorted([*ROOT.glob("examples/*.ptx"), *ROOT.glob("fewshot/kernels/*/kernel.ptx")])

HEADER = ".version 8.0\n.target sm_90\n.address_size 64\n"


def _lines_with_loc(text: str) -> list[int]:
    return [int(m) for m in re.findall(r"^\s*\.loc 1 (\d+) 0$", text, flags=re.M)]


def test_each_instruction_line_gets_its_own_loc_and_directives_none():
    src = HEADER + (
        ".visible .entry k(.param .u64 p)\n"  # 4
        "{\n"  # 5
        "    .reg .b32 %r<3>;\n"  # 6
        "    // mov.u32 %r9, 1;  (a comment, not an instruction)\n"  # 7
        "    mov.u32 %r1, 1; add.s32 %r2, %r1, 1;\n"  # 8: two instructions, one line
        "L1: mov.u32 %r1, 2;\n"  # 9: label then instruction
        "$L__BB0_2:\n"  # 10: label alone
        "    ret;\n"  # 11
        "}\n"
    )
    result = add_line_info(src, "k.ptx")
    assert result.maps_to == "ptx"
    assert result.instruction_lines == (8, 9, 11)
    assert _lines_with_loc(result.text) == [8, 9, 11]
    assert result.text.rstrip().endswith('.file 1 "k.ptx"')
    assert "L1: \n.loc 1 9 0\nmov.u32 %r1, 2;" in result.text


def test_braces_inside_statements_are_operands_not_blocks():
    src = HEADER + (
        ".global .align 4 .b32 table[2] = {1, 2};\n"  # 4: module-scope initialiser
        ".visible .entry k()\n"  # 5
        "{\n"
        "    .reg .b32 %r<3>;\n"
        "    .reg .b64 %rd<2>;\n"
        "    mov.b64 %rd1, {%r1,\n"  # 9: a vector operand over two lines
        "        %r2};\n"
        "    {\n"  # 11: a nested scope
        "    .reg .b32 t;\n"
        "    mov.u32 t, 3;\n"  # 13
        "    }\n"
        "    ret;\n"  # 15
        "}\n"
    )
    result = add_line_info(src, "k.ptx")
    assert result.instruction_lines == (9, 13, 15)


def test_existing_loc_is_kept_and_reported_as_source():
    src = HEADER + '.file 1 "k.cu"\n.visible .entry k()\n{\n.loc 1 3 5\nret;\n}\n'
    result = add_line_info(src, "k.ptx")
    assert result.maps_to == "source"
    assert result.text == src


def test_existing_file_without_loc_gets_a_new_index_and_quotes_are_safe():
    src = HEADER + '.file 1 "other.cu"\n.visible .entry k()\n{\nret;\n}\n'
    result = add_line_info(src, 'we"ird\nname.ptx')
    assert result.file_index == 2
    assert ".loc 2 7 0" in result.text
    assert result.text.rstrip().endswith('.file 2 "we\'irdname.ptx"')


@pytest.mark.parametrize("text", ["", "garbage {{{ ;;; }}}", "}}}}", "\x00\xff", ".entry x {"])
def test_bad_text_never_raises(text):
    assert isinstance(with_line_info(text, "x.ptx"), str)


def _tool(name: str) -> Path:
    for d in wheel_bin_dirs():
        if (d / name).exists():
            return d / name
    pytest.skip(f"{name} wheel not installed")


def _target(text: str) -> str:
    m = re.search(r"^\s*\.target\s+(sm_\w+)", text, flags=re.M)
    return m.group(1) if m else "sm_90"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_library_modules_still_assemble_and_map_back(path, tmp_path):
    ptxas, nvdisasm = _tool("ptxas"), _tool("nvdisasm")
    text = path.read_text()
    arch = _target(text)
    before = subprocess.run(
        [ptxas, f"-arch={arch}", "-o", tmp_path / "a.cubin", path], capture_output=True
    )
    if before.returncode != 0:
        pytest.skip("ptxas rejects the original too (a planted-error example)")
    result = add_line_info(text, path.name)
    (tmp_path / "li.ptx").write_text(result.text)
    after = subprocess.run(
        [ptxas, f"-arch={arch}", "-lineinfo", "-o", tmp_path / "b.cubin", tmp_path / "li.ptx"],
        capture_output=True,
        text=True,
    )
    assert after.returncode == 0, after.stderr
    listing = subprocess.run(
        [nvdisasm, "-c", "-g", tmp_path / "b.cubin"], capture_output=True, text=True, check=True
    ).stdout
    mapped = [int(n) for n in re.findall(rf'File "{re.escape(path.name)}", line (\d+)', listing)]
    assert mapped, "nvdisasm named no line"
    original = text.splitlines()
    for line in mapped:
        assert line in result.instruction_lines
        statement = original[line - 1].split("//")[0].strip()
        assert statement and not statement.startswith("."), (line, statement)


def test_original_line_maps_a_line_of_the_new_text_back():
    src = HEADER + (
        ".visible .entry k()\n"  # 4
        "{\n"  # 5
        "    .reg .b32 %r<3>;\n"  # 6
        "L1: mov.u32 %r1, 2;\n"  # 7: label then instruction (split in two)
        "    add.s32 %r2, %r1, 1;\n"  # 8
        "    ret;\n"  # 9
        "}\n"  # 10
    )
    result = add_line_info(src, "k.ptx")
    out = result.text.splitlines()
    original = src.splitlines()
    for n, line in enumerate(out, start=1):
        if n in result.added_lines or line.startswith(".file"):
            continue
        assert line.strip() in original[result.original_line(n) - 1], (n, line)
    add_line = next(n for n, line in enumerate(out, start=1) if line.strip().startswith("add"))
    assert result.original_line(add_line) == 8


def test_ptxas_errors_name_original_lines_through_original_line(tmp_path):
    ptxas = _tool("ptxas")
    broken = ROOT / "examples" / "broken.ptx"
    text = broken.read_text()
    plain = subprocess.run([ptxas, "-arch=sm_90", broken, "-o", "/dev/null"], capture_output=True)
    result = add_line_info(text, "broken.ptx")
    (tmp_path / "b.ptx").write_text(result.text)
    moved = subprocess.run(
        [ptxas, "-arch=sm_90", tmp_path / "b.ptx", "-o", "/dev/null"], capture_output=True
    )
    want = [int(n) for n in re.findall(rb"line (\d+);", plain.stderr)]
    got = [result.original_line(int(n)) for n in re.findall(rb"line (\d+);", moved.stderr)]
    assert want and got == want
