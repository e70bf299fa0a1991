""".func calls (inlined): arguments and results through .param variables, nested calls, a
callee that returns from two places on divergent paths; recursion is refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ptxls import emulator

DATA = Path(__file__).parent / "data"


def test_nested_calls_with_divergent_returns():
    module = emulator.load((DATA / "calls.ptx").read_text())
    mem = emulator.Memory()
    out = mem.alloc(4 * 64, "out", initialized=False)
    res = emulator.launch(module, "k", 1, 64, 0, [out.to_bytes(8, "little")], mem)
    assert res.findings == []
    got = np.frombuffer(mem.read(out, 256), np.uint32)
    t = np.arange(64)
    # twice(x) = 2 * square_plus(x, 1); square_plus(x, y) = x*x + y, or 999 when x > 10
    assert got.tolist() == (2 * np.where(t > 10, 999, t * t + 1)).tolist()


def test_recursion_is_refused():
    text = (DATA / "calls.ptx").read_text().replace("square_plus, (a0, a1)", "twice, (a0)")
    with pytest.raises(emulator.Refused) as e:
        emulator.load(text)
    assert "recursive" in str(e.value)


def test_call_of_a_function_without_body_is_refused():
    text = (
        (DATA / "calls.ptx").read_text().replace("call.uni (r0), twice", "call.uni (r0), vprintf")
    )
    with pytest.raises(emulator.Refused) as e:
        emulator.load(text)
    assert "vprintf" in str(e.value)
