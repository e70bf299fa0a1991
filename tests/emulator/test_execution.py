"""emulator.Execution, the steppable launch the debugger builds on: step by step it reaches the
same result as launch(), hooks see every instruction and store, registers and shared memory
of any thread can be read between steps."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ptxls import emulator

VEC_ADD = (Path(__file__).resolve().parents[2] / "examples" / "vec_add.ptx").read_text()


def _setup(n=100):
    module = emulator.load(VEC_ADD)
    mem = emulator.Memory()
    a, b, c = (mem.alloc(4 * n, name) for name in "abc")
    x = np.arange(n, dtype=np.float32)
    mem.write(a, x.tobytes())
    mem.write(b, (2 * x).tobytes())
    params = [
        a.to_bytes(8, "little"),
        b.to_bytes(8, "little"),
        c.to_bytes(8, "little"),
        n.to_bytes(4, "little"),
    ]
    return module, mem, params, c, x


def test_stepping_reaches_the_launch_result_and_hooks_see_everything():
    module, mem, params, c, x = _setup()
    ex = emulator.Execution(module, "vec_add", 2, 64, 0, params, mem)
    lines, stores = [], []
    ex.hooks.on_instruction.append(lambda ins, threads: lines.append((ins.line, len(threads))))
    ex.hooks.on_write.append(
        lambda space, addr, size, threads: stores.append((space, len(threads)))
    )
    steps = 0
    seen_i = None
    while ex.step():
        steps += 1
        for _pc, line, _count in ex.current():
            if line == 31 and seen_i is None:  # at the setp, after mad.lo: i = ctaid * ntid + tid
                t = ex.thread_index((1, 0, 0), (5, 0, 0))
                seen_i = ex.register("%r5", t, "s32")
    assert steps > 10 and ex.result.findings == []
    assert seen_i == 64 + 5
    assert np.frombuffer(mem.read(c, 400), np.float32).tolist() == (3 * x).tolist()
    assert stores == [("global", 100)]  # one store, by the 100 threads with i < n
    assert sum(n for line, n in lines if line == 43) == 100  # the add.f32 line
    assert sum(n for line, n in lines if line == 25) == 128  # mov %ctaid.x: every thread


def test_registers_of_one_thread():
    module, mem, params, _c, _x = _setup(10)
    ex = emulator.Execution(module, "vec_add", 1, 32, 0, params, mem)
    for _ in range(12):
        ex.step()
    regs = ex.registers(3)
    assert regs["%r4"] == 3 and regs["%r1"] == 10  # %tid.x and n
