"""SASS: the listing reader on captured nvdisasm/cuobjdump output, the PTX-line mapping with the
real ptxas + nvdisasm (nvidia-cuda-nvdisasm wheel) on hand-written and nvcc PTX, and
`ptxls sass` as a process. No GPU is needed for any of it.

tests/data/sass/: saxpy_norm.cu; its nvcc -lineinfo PTX assembled by ptxas -lineinfo and listed by
`nvdisasm -c -g -gp` (saxpy_norm.nvdisasm.txt), `cuobjdump -sass` and `cuobjdump -res-usage`;
examples/vec_add.ptx with frontend.line_info's .loc, listed by `nvdisasm -c -g -gp`.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ptxls.diagnostics.sass import SassOptions, sass_for_cuda, sass_for_ptx
from ptxls.diagnostics.sass_view import hover_markdown, render_text, to_json
from ptxls.frontend.sass import parse_res_usage, parse_sass

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "sass"
VEC_ADD = ROOT / "examples" / "vec_add.ptx"
LIBRARY = sorted(ROOT.glob("fewshot/kernels/*/kernel.ptx"))


# ---- the reader, on captured listings


def test_nvdisasm_listing_functions_instructions_and_lines():
    listing = parse_sass((DATA / "saxpy_norm.nvdisasm.txt").read_text())
    assert listing.arch == "sm_90"
    assert [f.name for f in listing.functions] == ["_Z4normPKfPfi", "_Z5saxpyfPKfPfi"]
    assert all(f.is_entry for f in listing.functions)
    saxpy = listing.function("_Z5saxpyfPKfPfi")
    exit_ = next(i for i in saxpy.instructions if i.predicate)
    assert (exit_.address, exit_.predicate, exit_.opcode, exit_.operands) == (
        0x70,
        "@P0",
        "EXIT",
        "",
    )
    ffma = next(i for i in saxpy.instructions if i.opcode == "FFMA")
    assert ffma.operands == "R7, R2, UR6, R7"
    assert (ffma.source_file, ffma.source_line) == ("saxpy_norm.cu", 4)
    assert ffma.ptx_line == 51  # fma.rn.f32 in nvcc's PTX
    assert ffma.op_class == "float"
    # a line comment holds until the next one: every instruction up to the padding has lines
    body = [i for i in saxpy.instructions if i.base != "NOP"]
    assert all(i.source_line and i.ptx_line for i in body)
    assert saxpy.instruction_count == len(body) == 20
    assert saxpy.class_counts()["memory"] == 3  # two LDG, one STG
    assert saxpy.opcode_counts()["LDG"] == 2
    assert any(labels == [".L_x_7"] for labels in saxpy.labels.values())


def test_cuobjdump_listing_has_the_same_instructions_without_lines():
    nvdisasm = parse_sass((DATA / "saxpy_norm.nvdisasm.txt").read_text())
    cuobjdump = parse_sass((DATA / "saxpy_norm.cuobjdump.txt").read_text())
    assert cuobjdump.arch == "sm_90"
    for function in nvdisasm.functions:
        other = cuobjdump.function(function.name)
        assert other is not None
        assert [i.opcode for i in other.instructions] == [i.opcode for i in function.instructions]
        assert all(i.ptx_line is None and i.source_line is None for i in other.instructions)


def test_res_usage():
    usage = parse_res_usage((DATA / "saxpy_norm.res-usage.txt").read_text())
    assert usage["_Z4normPKfPfi"].registers == 14
    assert usage["_Z5saxpyfPKfPfi"].registers == 10
    assert usage["_Z5saxpyfPKfPfi"].stack == 0


def test_hand_written_listing_names_the_ptx_file():
    listing = parse_sass((DATA / "vec_add.nvdisasm.txt").read_text())
    (function,) = listing.functions
    fadd = next(i for i in function.instructions if i.opcode == "FADD")
    assert fadd.source_file == "examples/vec_add.ptx"
    assert VEC_ADD.read_text().splitlines()[fadd.source_line - 1].strip().startswith("add.f32")


@pytest.mark.parametrize(
    "text",
    ["", "garbage", "/*zz*/ X ;", "        /*0010*/ @P0 ;", "//## File \"x\", line q\n" * 3,
     ".section .text.k\n/*0000*/ {", "Function : \n", "\x00\xff" * 100],
)  # fmt: skip
def test_reader_never_raises(text):
    parse_sass(text)
    parse_res_usage(text)


# ---- the mapping, with the real ptxas and nvdisasm


def _report(text: str, **kw):
    return asyncio.run(sass_for_ptx(text, SassOptions(**kw)))


def _line(text: str, n: int) -> str:
    return text.splitlines()[n - 1].strip()


def test_hand_written_ptx_maps_each_sass_instruction_to_its_ptx_line():
    text = VEC_ADD.read_text()
    report = _report(text, file_name="vec_add.ptx")
    assert report.ok and report.lines_map_to == "ptx"
    (entry,) = report.entries
    assert entry.name == "vec_add" and entry.is_entry
    assert entry.registers and entry.registers > 4
    assert entry.instruction_count == sum(entry.class_counts.values())
    by_opcode = {i.opcode: _line(text, i.ptx_line) for i in entry.instructions if i.ptx_line}
    assert by_opcode["FADD"].startswith("add.f32")
    assert by_opcode["STG.E"].startswith("st.global.f32")
    assert by_opcode["LDG.E"].startswith("ld.global.f32")
    assert by_opcode["EXIT"].startswith(("ret", "@%p1 bra"))
    for i in entry.instructions:  # never a directive, a comment or a blank line
        if i.ptx_line is not None and i.base != "NOP":
            assert not _line(text, i.ptx_line).startswith((".", "//")) and _line(text, i.ptx_line)


def test_hover_lists_the_sass_of_one_ptx_line():
    text = VEC_ADD.read_text()
    report = _report(text, file_name="vec_add.ptx")
    add_line = next(
        n for n, s in enumerate(text.splitlines(), 1) if s.strip().startswith("add.f32")
    )
    hover = hover_markdown(report, add_line)
    assert hover and "FADD" in hover and "1 instruction from this line" in hover
    comment_line = next(n for n, s in enumerate(text.splitlines(), 1) if s.startswith("//"))
    assert hover_markdown(report, comment_line) is None


def test_nvcc_ptx_maps_to_the_cuda_line_and_the_ptx_line():
    source = (DATA / "saxpy_norm.cu").read_text()
    report = asyncio.run(
        sass_for_cuda(source, SassOptions(arch="sm_90"), file_path=str(DATA / "saxpy_norm.cu"))
    )
    assert report.ok and report.lines_map_to == "source", report.errors
    saxpy = report.find("saxpy")
    assert saxpy is not None and saxpy.name == "_Z5saxpyfPKfPfi" and saxpy.registers == 10
    ffma = next(i for i in saxpy.instructions if i.opcode == "FFMA")
    assert "a * x[i] + y[i]" in _line(source, ffma.source_line)
    assert _line(report.ptx_text, ffma.ptx_line).startswith("fma.rn.f32")
    view = render_text(report, saxpy.name)
    assert "// saxpy_norm.cu:4: y[i] = a * x[i] + y[i];" in view
    assert "_Z4normPKfPfi" not in view


def test_ptx_errors_are_reported_on_the_original_lines():
    text = (ROOT / "examples" / "broken.ptx").read_text()
    report = _report(text, file_name="broken.ptx")
    assert not report.ok
    assert any("broken.ptx, line 28;" in e and "mad.lo" in e for e in report.errors)


@pytest.mark.parametrize("path", LIBRARY, ids=lambda p: p.parent.name)
def test_every_library_kernel_has_mapped_sass(path):
    text = path.read_text()
    report = _report(text, file_name="kernel.ptx")
    assert report.ok, report.errors
    entries = [e for e in report.entries if e.is_entry]
    assert entries
    for entry in entries:
        assert entry.registers is not None
        mapped = [i for i in entry.instructions if i.ptx_line is not None]
        assert len(mapped) >= entry.instruction_count * 0.9
    assert to_json(report)["functions"][0]["instructions"]


# ---- the CLI, as a process


def _ptxls(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ptxls.cli", "sass", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def test_cli_prints_the_sass_under_each_ptx_line():
    res = _ptxls("examples/vec_add.ptx", "--arch", "sm_90")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    at = lines.index("// vec_add.ptx:43: add.f32         %f3, %f1, %f2;")
    assert "FADD" in lines[at + 1]
    assert "// ==== vec_add (entry, sm_90):" in res.stdout and "registers" in res.stdout


def test_cli_json_and_kernel_selection():
    res = _ptxls("tests/data/sass/saxpy_norm.cu", "--kernel", "norm", "--format", "json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert [f["name"] for f in data["functions"]] == ["_Z4normPKfPfi"]
    assert data["functions"][0]["registers"] == 14
    assert data["lines_map_to"] == "source"


def test_cli_exit_codes():
    broken = _ptxls("examples/broken.ptx", "--arch", "sm_90")
    # ptxas's errors printed as ptxls check prints them: the cascade folded, the fix noted
    assert broken.returncode == 1 and "broken.ptx:28:21: error: Unknown symbol '%r6'" in (
        broken.stdout
    )
    assert "note: fix: Declare %r<7>" in broken.stdout and "ptxas fatal" not in broken.stderr
    missing = _ptxls("examples/vec_add.ptx", "--nvdisasm", "/nonexistent/nvdisasm")
    assert missing.returncode == 2
    assert "pip install nvidia-cuda-nvdisasm" in missing.stderr
    unknown = _ptxls("examples/vec_add.ptx", "--arch", "sm_90", "--kernel", "nope")
    assert unknown.returncode == 2 and "has: vec_add" in unknown.stderr
    unreadable = _ptxls("no/such/file.ptx")
    assert unreadable.returncode == 2
    too_slow = _ptxls("examples/vec_add.ptx", "--arch", "sm_90", "--timeout", "0.001")
    assert too_slow.returncode == 2 and "did not finish within 0.001 s" in too_slow.stderr


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton not installed")
def test_cli_on_a_triton_kernel():
    res = _ptxls("examples/vec_add_triton.py", "--arch", "sm_90", "--format", "json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["lines_map_to"] == "source" and data["arch"] == "sm_90a"
    (kernel,) = data["functions"]
    assert kernel["name"] == "add_kernel" and kernel["registers"]
    text = (ROOT / "examples" / "vec_add_triton.py").read_text().splitlines()
    loads = {i["source_line"] for i in kernel["instructions"] if i["opcode"].startswith("LDG")}
    assert loads and all("tl.load" in text[n - 1] for n in loads)
    unknown = _ptxls("examples/vec_add_triton.py", "--kernel", "nope")
    assert unknown.returncode == 2 and "has: add_kernel" in unknown.stderr


def test_registers_from_cuobjdump_when_ptxas_v_names_none(tmp_path):
    """The fallback for a ptxas whose -v says less: cuobjdump -res-usage reads the cubin."""
    from ptxls.diagnostics.sass import SassEntry, SassReport, _fill_missing_registers
    from ptxls.toolchain.discovery import find_ptxas

    cubin = tmp_path / "k.cubin"
    subprocess.run(
        [find_ptxas().path, "-arch=sm_90", "-o", cubin, VEC_ADD], check=True, capture_output=True
    )
    report = SassReport(ok=True, arch="sm_90", file_name="vec_add.ptx", ptx_text="")
    report.entries = [SassEntry(name="vec_add", is_entry=True, instructions=[])]
    asyncio.run(_fill_missing_registers(report, cubin.read_bytes(), SassOptions()))
    with_v = _report(VEC_ADD.read_text(), file_name="vec_add.ptx", arch="sm_90")
    assert report.entries[0].registers == with_v.entries[0].registers > 0
