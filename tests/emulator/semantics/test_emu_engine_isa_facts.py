"""The whole emulator on one-instruction kernels whose results are derived by hand from the
PTX ISA's text (tests/data/emulator/isa_int_facts.json): the integer and bit instructions
whose corner cases are easiest to get wrong (mul24's 48-bit product, prmt's modes, bfe/bfi
clamping, shift clamps, division by zero as the H200 gives it).

KNOWN_MISMATCHES lists what the emulator gets wrong or refuses today, with the fix; a listed
row that starts passing fails here so that the entry is removed (the list only shrinks)."""

from __future__ import annotations

import json
from pathlib import Path

import h200_probe as P
import numpy as np
import pytest

from ptxls import emulator

DATA = Path(__file__).resolve().parents[2] / "data" / "emulator"
ROWS = json.loads((DATA / "isa_int_facts.json").read_text())["rows"]

_MUL24 = (
    "ops_int computes mul24/mad24 from the full 32-bit operands (semantics.integer.mul24/mad24)"
)
KNOWN_MISMATCHES: dict[str, str] = {}  # every listed fact now matches on the engine


def _run(instr: str, ins: list[str], out: str, values: list[str]) -> int:
    ptx = ".version 8.7\n.target sm_90\n.address_size 64\n\n" + P.kernel("fact", instr, ins, out)
    module = emulator.load(ptx)
    mem = emulator.Memory()
    params = []
    for k, (t, v) in enumerate(zip(ins, values, strict=True)):
        dt = np.dtype(P.REG[t][2])
        host = np.array([int(v, 16)], dtype=f"u{dt.itemsize}")
        addr = mem.alloc(dt.itemsize, f"x{k}")
        mem.write(addr, host.tobytes())
        params.append(addr.to_bytes(8, "little"))
    odt = np.dtype(P.REG[out][2])
    y = mem.alloc(odt.itemsize, "y")
    params += [y.to_bytes(8, "little"), np.uint32(1).tobytes()]
    result = emulator.launch(module, "fact", (1, 1, 1), (32, 1, 1), 0, params, mem)
    assert not result.hang and not result.findings, result.findings[:3]
    return int(np.frombuffer(mem.read(y, odt.itemsize), dtype=f"u{odt.itemsize}")[0])


def _check(row) -> None:
    name, instr, ins, out, values, expected, why = row
    assert _run(instr, ins, out, values) == int(expected, 16), why


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_isa_fact_on_the_emulator(row):
    if row[0] in KNOWN_MISMATCHES:
        with pytest.raises((AssertionError, emulator.Refused)):
            _check(row)
        pytest.xfail(KNOWN_MISMATCHES[row[0]])
    _check(row)


def test_facts_agree_with_the_value_functions():
    """The same rows through emulator/semantics directly (which the engine can call)."""
    from ptxls.emulator.semantics import bits, cvt, integer

    names = {r[0]: r for r in ROWS}
    u = np.uint32
    assert int(integer.mul24(u(0xFFFFFF), u(0xFFFFFF), "u32", "lo")) == 0xFE000001
    assert int(integer.mul24(u(0xFFFFFFFF), u(0xFFFFFFFF), "u32", "hi")) == 0xFFFFFE00
    assert int(integer.sad(np.int32(-5), np.int32(5), np.int32(1), "s32")) == 11
    assert int(bits.prmt(u(0x03020100), u(0x07060504), u(1), "f4e")) == 0x04030201
    assert int(bits.prmt(u(0x03020100), u(0x07060504), u(0), "b4e")) == 0x05060700
    assert int(integer.div(np.int64(-(2**63)), np.int64(2), "s64")) == -(2**62)
    assert int(cvt.cvt_pack_x2(np.float32(448), np.float32(1), "e4m3x2", satfinite=True)) == 0x7E38
    assert len(names) == len(ROWS)  # unique names
