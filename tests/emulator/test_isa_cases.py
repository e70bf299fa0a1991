"""Data-driven instruction tests: each case in data/isa_cases.json is a single-thread PTX
snippet with the words it must store, worked out from the PTX ISA's definitions."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ptxls import emulator

CASES = json.loads((Path(__file__).parent / "data" / "isa_cases.json").read_text())["cases"]

TEMPLATE = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry probe(.param .u64 out)
{{
    .reg .b32 %r<32>;
    .reg .b64 %rd<16>;
    .reg .f32 %f<16>;
    .reg .b16 %h<8>;
    .reg .pred %p<8>;
    .local .align 16 .b8 buf[16];
    ld.param.u64 %rd0, [out];
{body}
    ret;
}}
"""


def run_snippet(lines: list[str], words: int = 16):
    module = emulator.load(TEMPLATE.format(body="\n".join("    " + x for x in lines)))
    mem = emulator.Memory()
    out = mem.alloc(4 * words, "out")
    mem.write(out, bytes(4 * words))
    res = emulator.launch(module, "probe", 1, 1, 0, [out.to_bytes(8, "little")], mem)
    return np.frombuffer(mem.read(out, 4 * words), np.uint32), res


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_isa_case(case):
    got, res = run_snippet(case["ptx"])
    want = [int(x, 16) for x in case["expect"]]
    assert [f"{v:#010x}" for v in got[: len(want)]] == [f"{v:#010x}" for v in want], case["isa"]
    assert res.findings == [] and not res.hang


def test_line_info_directives_do_not_swallow_instructions():
    """nvcc -lineinfo and Triton put '.loc' lines (no ';') before instructions and labels."""
    got, res = run_snippet([
        ".file 1 \"k.cu\"",
        ".loc 1 3 5",
        "mov.b32 %r1, 7;",
        ".loc 1 4 5",
        "$L__tail:",
        ".loc 1 5 5",
        "add.u32 %r1, %r1, 1;",
        "st.global.b32 [%rd0], %r1;",
    ])  # fmt: skip
    assert got[0] == 8 and res.findings == []
