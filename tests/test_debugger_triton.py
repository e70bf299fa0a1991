"""A Triton kernel debugged from its .py: the adapter lowers it the way Show PTX does (Triton's
own compiler for sm_90, in a separate process, no GPU needed, no code of the file run), takes
the test spec from the Triton signature, and places breakpoints on Python lines through the
PTX's ``.loc`` line info. examples/vec_add_triton.py: ``out = x + y`` with BLOCK_SIZE 1024, so
element i is written in program (block) i // 1024."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from dap_client import ROOT, DapClient

from ptxls.gputest.harness import _inputs
from ptxls.gputest.spec import ParamSpec

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("triton") is None, reason="no triton (the 'triton' extra)"
)

PY = str(ROOT / "examples" / "vec_add_triton.py")
LINES = (ROOT / "examples" / "vec_add_triton.py").read_text().splitlines()
LOAD_X = next(i for i, t in enumerate(LINES, 1) if "x = tl.load(" in t)
STORE = next(i for i, t in enumerate(LINES, 1) if "tl.store(" in t)


@pytest.fixture
def dap():
    c = DapClient()
    yield c
    c.close()


def test_python_line_breakpoints_and_a_data_breakpoint(dap):
    n, seed, element = 3000, 4, 2053
    r = dap.request("initialize", {"adapterID": "ptxls"})
    r = dap.request("launch", {"program": PY, "n": n, "seed": seed, "block": 2, "thread": 5,
                               "watch": f"out_ptr[{element}]"}, timeout=300)  # fmt: skip
    assert r["success"], r
    dap.wait_event("initialized")
    r = dap.request("setBreakpoints", {"source": {"path": PY},
                                       "breakpoints": [{"line": LOAD_X}]})  # fmt: skip
    assert r["body"]["breakpoints"][0]["verified"] and r["body"]["breakpoints"][0]["line"] == LOAD_X
    dap.request("configurationDone")
    ev = dap.wait_event("stopped")["body"]
    assert ev["reason"] == "breakpoint"
    frame = dap.top_frame(ev["threadId"])
    assert frame["line"] == LOAD_X and frame["source"]["path"] == PY
    assert "PTX line" in frame["name"]
    r = dap.request("evaluate", {"expression": "%ctaid.x", "frameId": frame["id"]})
    assert r["body"]["result"] == "2"

    dap.request("continue", {"threadId": ev["threadId"]})
    ev = dap.wait_event("stopped")["body"]
    assert ev["reason"] == "data breakpoint"
    frame = dap.top_frame(ev["threadId"])
    assert frame["line"] == STORE and "block (2,0,0)" in frame["name"]
    rng = np.random.default_rng(seed)
    x = _inputs(ParamSpec("x_ptr", "in", "f32"), n, rng)
    y = _inputs(ParamSpec("y_ptr", "in", "f32"), n, rng)
    r = dap.request("evaluate", {"expression": f"out_ptr[{element}]", "frameId": frame["id"]})
    assert np.float32(r["body"]["result"]) == np.float32(x[element] + y[element])
