"""The debug adapter driven as a process over stdio by a DAP client (tests/dap_client.py):
breakpoints on PTX lines of examples/vec_add.ptx, stepping, the registers' values against what
the kernel must compute, a conditional breakpoint, a data breakpoint on an output element, and a
planted out-of-bounds kernel stopping on the emulator's finding."""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from dap_client import ROOT, DapClient

from ptxls.gputest.harness import _inputs
from ptxls.gputest.spec import ParamSpec

VEC_ADD = str(ROOT / "examples" / "vec_add.ptx")
STORE_LINE = 44  # st.global.f32 [%rd10], %f3;
MAD_LINE = 28  # mad.lo.s32 %r5, %r2, %r3, %r4;


@pytest.fixture
def dap():
    c = DapClient()
    yield c
    c.close()


def _inputs_of(seed: int, n: int):
    rng = np.random.default_rng(seed)
    a = _inputs(ParamSpec("a", "in", "f32"), n, rng)
    b = _inputs(ParamSpec("b", "in", "f32"), n, rng)
    return a, b


def _value(v: dict) -> str:
    return v["value"].split()[0]


def test_breakpoint_registers_and_step(dap):
    n, seed = 3007, 5
    dap.start(VEC_ADD, breakpoints=[STORE_LINE], n=n, seed=seed, block=2, thread=3)
    assert dap.request("configurationDone")["success"]
    ev = dap.wait_event("stopped")["body"]
    assert ev["reason"] == "breakpoint"
    frame = dap.top_frame(ev["threadId"])
    assert frame["line"] == STORE_LINE and frame["source"]["path"].endswith("vec_add.ptx")
    regs = dap.variables(frame["id"], "Registers")
    i = 2 * 256 + 3  # blockIdx.x * blockDim.x + threadIdx.x
    assert regs["%r5"]["value"] == f"0x{i:08x} ({i})"
    assert regs["%r1"]["value"].endswith(f"({n})")
    a, b = _inputs_of(seed, n)
    assert np.float32(_value(regs["%f1"])) == a[i]
    assert np.float32(_value(regs["%f2"])) == b[i]
    assert np.float32(_value(regs["%f3"])) == np.float32(a[i] + b[i])
    assert regs["%p1"]["value"] == "false"  # i < n: the thread did not branch to DONE
    specials = dap.variables(frame["id"], "Special registers")
    assert specials["%tid.x"]["value"] == "3" and specials["%ctaid.x"]["value"] == "2"
    r = dap.request("evaluate", {"expression": "%r5 == %ctaid.x * %ntid.x + %tid.x",
                                 "frameId": frame["id"], "context": "watch"})  # fmt: skip
    assert r["body"]["result"] == "true"
    r = dap.request("evaluate", {"expression": "c[%r5]", "frameId": frame["id"]})
    assert r["body"]["result"] == "nan"  # not stored yet: the harness's poison

    dap.request("next", {"threadId": ev["threadId"]})
    ev2 = dap.wait_event("stopped")["body"]
    assert ev2["reason"] == "step"
    assert dap.top_frame(ev2["threadId"])["line"] == 47  # DONE: ret
    r = dap.request("evaluate", {"expression": "c[%r5]", "frameId": frame["id"]})
    assert np.float32(r["body"]["result"]) == np.float32(a[i] + b[i])

    dap.request("continue", {"threadId": ev["threadId"]})
    dap.wait_event("terminated")
    assert dap.wait_event("exited")["body"]["exitCode"] == 0


def test_step_in_walks_each_instruction(dap):
    dap.start(VEC_ADD, breakpoints=[MAD_LINE], n=300, seed=1, block=1, thread=40)
    dap.request("configurationDone")
    ev = dap.wait_event("stopped")["body"]
    lines = [dap.top_frame(ev["threadId"])["line"]]
    for _ in range(3):
        dap.request("stepIn", {"threadId": ev["threadId"]})
        assert dap.wait_event("stopped")["body"]["reason"] == "step"
        lines.append(dap.top_frame(ev["threadId"])["line"])
    assert lines == [28, 31, 32, 34]


def test_out_of_range_thread_branches_past_the_body(dap):
    # n=300: block 1 thread 100 has i = 356 >= n, so `@%p1 bra DONE` is taken
    dap.start(VEC_ADD, breakpoints=[32], n=300, seed=1, block=1, thread=100)
    dap.request("configurationDone")
    ev = dap.wait_event("stopped")["body"]
    dap.request("stepIn", {"threadId": ev["threadId"]})
    dap.wait_event("stopped")
    assert dap.top_frame(ev["threadId"])["line"] == 47


def test_conditional_breakpoint_picks_the_thread(dap):
    dap.start(VEC_ADD, breakpoints=[{"line": STORE_LINE, "condition": "%r5 == 4097"}], n=8192)
    dap.request("configurationDone")
    ev = dap.wait_event("stopped")["body"]
    assert ev["reason"] == "breakpoint"
    frame = dap.top_frame(ev["threadId"])
    assert "block (16,0,0) thread (1,0,0)" in frame["name"]
    assert dap.variables(frame["id"], "Registers")["%r5"]["value"].endswith("(4097)")


def test_condition_on_thread_coordinates(dap):
    dap.start(VEC_ADD, breakpoints=[{"line": MAD_LINE, "condition": "%tid.x == 3 && %ctaid.x == 1"}],
              n=1000)  # fmt: skip
    dap.request("configurationDone")
    ev = dap.wait_event("stopped")["body"]
    assert "block (1,0,0) thread (3,0,0)" in dap.top_frame(ev["threadId"])["name"]


def test_data_breakpoint_stops_at_the_writing_thread(dap):
    n, seed, k = 8192, 7, 4097
    dap.start(VEC_ADD, n=n, seed=seed)
    info = dap.request("dataBreakpointInfo", {"name": f"c[{k}]"})["body"]
    assert info["dataId"] == f"c[{k}]"
    r = dap.request("setDataBreakpoints", {"breakpoints": [{"dataId": info["dataId"]}]})
    assert r["body"]["breakpoints"][0]["verified"]
    dap.request("configurationDone")
    ev = dap.wait_event("stopped")["body"]
    assert ev["reason"] == "data breakpoint"
    frame = dap.top_frame(ev["threadId"])
    assert "block (16,0,0) thread (1,0,0)" in frame["name"]
    a, b = _inputs_of(seed, n)
    r = dap.request("evaluate", {"expression": f"c[{k}]", "frameId": frame["id"]})
    assert np.float32(r["body"]["result"]) == np.float32(a[k] + b[k])
    bad = dap.request("dataBreakpointInfo", {"name": f"c[{n}]"})["body"]
    assert bad["dataId"] is None and str(n) in bad["description"]


def test_out_of_bounds_kernel_stops_on_the_finding(dap, tmp_path):
    text = (ROOT / "examples" / "vec_add.ptx").read_text()
    planted = text.replace("@%p1 bra        DONE;", "// bounds check removed")
    assert planted != text
    (tmp_path / "vec_add.ptx").write_text(planted)
    shutil.copy(ROOT / "examples" / "vec_add.cu", tmp_path / "vec_add.cu")  # the spec
    dap.start(str(tmp_path / "vec_add.ptx"), n=257)
    dap.request("configurationDone")
    ev = dap.wait_event("stopped")["body"]
    assert ev["reason"] == "exception" and "out-of-bounds" in ev["text"]
    frame = dap.top_frame(ev["threadId"])
    assert frame["line"] in (41, 42, 44)  # a load or the store past the end
    block, thread = frame["name"].split("block ")[1].split(" thread ")
    i = int(block.strip("()").split(",")[0]) * 256 + int(thread.strip("()").split(",")[0])
    assert i >= 257  # the faulting thread is one past the end


def test_bad_launch_is_answered_and_adapter_stays_up(dap):
    dap.request("initialize", {"adapterID": "ptxls"})
    r = dap.request("launch", {"program": str(ROOT / "examples" / "nope.ptx")})
    assert not r["success"] and "nope.ptx" in r["message"]
    r = dap.request("launch", {"program": VEC_ADD, "kernel": "vec_mul"})
    assert not r["success"] and "vec_mul" in r["message"]
    r = dap.request("launch", {"program": VEC_ADD, "n": 100})
    assert r["success"]
    r = dap.request("setBreakpoints", {"source": {"path": VEC_ADD},
                                       "breakpoints": [{"line": 44, "condition": "%r5 =="}]})  # fmt: skip
    assert r["body"]["breakpoints"][0]["verified"] is False


REDUCE = str(ROOT / "fewshot" / "kernels" / "reduce_sum" / "kernel.ptx")


def test_warp_and_shared_scopes_on_a_reduction(dap):
    # line 120: the first shfl.sync of the warp's tree; line 143: thread 0 reads warp_sums
    dap.start(REDUCE, breakpoints=[120, 143], n=100003, seed=3)
    dap.request("configurationDone")
    ev = dap.wait_event("stopped")["body"]
    frame = dap.top_frame(ev["threadId"])
    assert frame["line"] == 120
    warp = dap.variables(frame["id"], "Warp")
    assert warp["active mask"]["value"] == "0xffffffff"
    lanes_ref = warp["%f1"]["variablesReference"]
    lanes = dap.request("variables", {"variablesReference": lanes_ref})["body"]["variables"]
    assert len(lanes) == 32
    partials = np.array([np.float32(v["value"].split()[0]) for v in lanes], np.float32)
    dap.request("continue", {"threadId": ev["threadId"]})
    ev = dap.wait_event("stopped")["body"]
    frame = dap.top_frame(ev["threadId"])
    assert frame["line"] == 143
    shared = dap.variables(frame["id"], "Shared")
    assert shared["warp_sums"]["indexedVariables"] == 8
    elems = dap.request(
        "variables", {"variablesReference": shared["warp_sums"]["variablesReference"]}
    )
    warp0 = np.float32(elems["body"]["variables"][0]["value"])
    # warp 0's sum by the shuffle tree (float32, another order): close to the lanes' sum
    assert abs(float(warp0) - float(partials.astype(np.float64).sum())) < 1e-3 * max(
        1.0, float(np.abs(partials).sum())
    )
    r = dap.request("evaluate", {"expression": "%tid.x == 0", "frameId": frame["id"]})
    assert r["body"]["result"] == "true"


def test_missing_barrier_stops_on_the_race(dap, tmp_path):
    text = Path(REDUCE).read_text()
    lines = text.splitlines(keepends=True)
    assert lines[138].strip() == "bar.sync            0;"
    lines[138] = "    // bar.sync removed\n"
    folder = tmp_path / "reduce_sum"
    folder.mkdir()
    (folder / "kernel.ptx").write_text("".join(lines))
    for name in ("spec.json", "reference.cu"):
        shutil.copy(Path(REDUCE).with_name(name), folder / name)
    dap.start(str(folder / "kernel.ptx"), n=100003)
    dap.request("configurationDone")
    ev = dap.wait_event("stopped")["body"]
    assert ev["reason"] == "exception", ev
    assert "race" in ev["text"] or "uninitialized" in ev["text"], ev["text"]


def test_pause_a_spinning_kernel_then_restart_and_terminate(dap, tmp_path):
    text = (ROOT / "examples" / "vec_add.ptx").read_text()
    spin = text.replace("DONE:\n    ret;", "DONE:\n    bra DONE;")
    assert spin != text
    (tmp_path / "vec_add.ptx").write_text(spin)
    shutil.copy(ROOT / "examples" / "vec_add.cu", tmp_path / "vec_add.cu")
    dap.start(str(tmp_path / "vec_add.ptx"), n=256)
    dap.request("configurationDone")
    time.sleep(0.5)
    assert dap.request("pause", {"threadId": 1})["success"]
    ev = dap.wait_event("stopped")["body"]
    assert ev["reason"] == "pause"
    assert dap.top_frame(ev["threadId"])["line"] == 47  # spinning on `bra DONE`
    r = dap.request("restart", {"arguments": {"program": str(tmp_path / "vec_add.ptx"), "n": 256}})
    assert r["success"]
    time.sleep(0.3)
    assert dap.request("terminate", {})["success"]
    dap.wait_event("terminated")


def test_watch_in_the_launch_configuration(dap):
    dap.start(VEC_ADD, n=1000, seed=2, watch="c[777]")
    dap.request("configurationDone")
    ev = dap.wait_event("stopped")["body"]
    assert ev["reason"] == "data breakpoint"
    assert "block (3,0,0) thread (9,0,0)" in dap.top_frame(ev["threadId"])["name"]


@pytest.mark.skipif(
    shutil.which("nvcc") is None, reason="no nvcc: a .cu is debugged through its PTX"
)
def test_cuda_source_breakpoint_and_step_through_line_info(dap):
    cu = str(ROOT / "examples" / "vec_add.cu")
    r = dap.request("initialize", {"adapterID": "ptxls"})
    r = dap.request("launch", {"program": cu, "n": 1000, "seed": 4, "block": 1, "thread": 5})
    assert r["success"], r
    dap.wait_event("initialized")
    r = dap.request("setBreakpoints", {"source": {"path": cu}, "breakpoints": [{"line": 6}]})
    assert r["body"]["breakpoints"][0] == {
        **r["body"]["breakpoints"][0],
        "verified": True,
        "line": 6,
    }
    dap.request("configurationDone")
    ev = dap.wait_event("stopped")["body"]
    frame = dap.top_frame(ev["threadId"])
    assert frame["line"] == 6 and frame["source"]["path"] == cu
    assert "PTX line" in frame["name"]
    # nvcc's registers: the index is in some register; evaluate the CUDA expression's parts
    r = dap.request(
        "evaluate", {"expression": "%ctaid.x * %ntid.x + %tid.x", "frameId": frame["id"]}
    )
    assert r["body"]["result"] == "261"
    dap.request("next", {"threadId": ev["threadId"]})
    ev2 = dap.wait_event("stopped")["body"]
    assert dap.top_frame(ev2["threadId"])["line"] != 6  # on to another CUDA line


def test_first_wrong_element_against_the_numpy_reference(dap, tmp_path):
    # vec_add with a planted bug from element 600 on; the spec's numpy reference finds it
    text = (ROOT / "examples" / "vec_add.ptx").read_text()
    wrong = text.replace(".reg .pred  %p<2>;", ".reg .pred  %p<3>;").replace(
        "    add.f32         %f3, %f1, %f2;\n",
        "    setp.ge.s32     %p2, %r5, 600;\n    add.f32         %f3, %f1, %f2;\n"
        "    @%p2 sub.f32    %f3, %f1, %f2;\n",
    )
    annotated = "// @gputest a: in f32[n]; b: in f32[n]; c: out f32[n]; n: size; ref: c = a + b\n"
    wrong = wrong.replace(".visible .entry vec_add(", annotated + ".visible .entry vec_add(")
    (tmp_path / "wrong_add.ptx").write_text(wrong)
    dap.start(str(tmp_path / "wrong_add.ptx"), n=1000, seed=9, watch="first-wrong")
    dap.request("configurationDone")
    ev = dap.wait_event("stopped")["body"]
    assert ev["reason"] == "data breakpoint" and ev["description"] == "c[600] written"
    assert "block (2,0,0) thread (88,0,0)" in dap.top_frame(ev["threadId"])["name"]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc for the paired CUDA reference")
def test_first_wrong_element_against_the_paired_cuda(dap, tmp_path):
    text = (ROOT / "examples" / "vec_add.ptx").read_text()
    wrong = text.replace("add.f32         %f3, %f1, %f2;", "add.f32         %f3, %f1, %f1;")
    (tmp_path / "vec_add.ptx").write_text(wrong)
    shutil.copy(ROOT / "examples" / "vec_add.cu", tmp_path / "vec_add.cu")
    dap.start(str(tmp_path / "vec_add.ptx"), n=300, seed=1, watch="first-wrong")
    dap.request("configurationDone")
    ev = dap.wait_event("stopped")["body"]
    assert ev["reason"] == "data breakpoint" and ev["description"] == "c[0] written"


TWICE = """.func  (.param .b32 func_retval0) twice(
    .param .b32 twice_param_0
)
{
    .reg .f32   %g<3>;
    ld.param.f32    %g1, [twice_param_0];
    add.f32         %g2, %g1, %g1;
    st.param.f32    [func_retval0], %g2;
    ret;
}

"""
CALL = """    add.f32         %f3, %f1, %f2;
    {
    .param .b32 param0;
    st.param.f32    [param0], %f3;
    .param .b32 retval0;
    call.uni (retval0), twice, (param0);
    ld.param.f32    %f3, [retval0];
    }
"""


def _with_call(tmp_path) -> tuple[str, dict[str, int]]:
    text = (ROOT / "examples" / "vec_add.ptx").read_text()
    text = text.replace(".visible .entry vec_add(", TWICE + ".visible .entry vec_add(")
    text = text.replace("    add.f32         %f3, %f1, %f2;\n", CALL)
    lines = text.splitlines()
    where = {
        "store_arg": lines.index("    st.param.f32    [param0], %f3;") + 1,
        "callee_first": lines.index("    ld.param.f32    %g1, [twice_param_0];") + 1,
        "callee_add": lines.index("    add.f32         %g2, %g1, %g1;") + 1,
        "after_call": lines.index("    ld.param.f32    %f3, [retval0];") + 1,
    }
    (tmp_path / "vec_add.ptx").write_text(text)
    shutil.copy(ROOT / "examples" / "vec_add.cu", tmp_path / "vec_add.cu")
    return str(tmp_path / "vec_add.ptx"), where


@pytest.mark.parametrize(
    ("request_", "lands"), [("next", "after_call"), ("stepIn", "callee_first")]
)
def test_next_steps_over_a_call_and_step_in_enters_it(dap, tmp_path, request_, lands):
    program, where = _with_call(tmp_path)
    dap.start(program, breakpoints=[where["store_arg"]], n=64)
    dap.request("configurationDone")
    ev = dap.wait_event("stopped")["body"]
    assert dap.top_frame(ev["threadId"])["line"] == where["store_arg"]
    dap.request(request_, {"threadId": ev["threadId"]})
    dap.wait_event("stopped")
    assert dap.top_frame(ev["threadId"])["line"] == where[lands]


def test_step_out_of_a_call(dap, tmp_path):
    program, where = _with_call(tmp_path)
    dap.start(program, breakpoints=[where["callee_add"]], n=64)
    dap.request("configurationDone")
    ev = dap.wait_event("stopped")["body"]
    assert dap.top_frame(ev["threadId"])["line"] == where["callee_add"]
    dap.request("stepOut", {"threadId": ev["threadId"]})
    dap.wait_event("stopped")
    assert dap.top_frame(ev["threadId"])["line"] == where["after_call"]


def test_findings_filter_off_runs_past_the_finding(dap, tmp_path):
    text = (ROOT / "examples" / "vec_add.ptx").read_text()
    (tmp_path / "vec_add.ptx").write_text(text.replace("@%p1 bra        DONE;", "// no check"))
    shutil.copy(ROOT / "examples" / "vec_add.cu", tmp_path / "vec_add.cu")
    dap.start(str(tmp_path / "vec_add.ptx"), n=257)
    r = dap.request("setExceptionBreakpoints", {"filters": []})
    assert r["success"]
    dap.request("configurationDone")
    assert dap.wait_event("exited")["body"]["exitCode"] == 1  # findings, but no stop
    dap.wait_event("terminated")


def test_predicated_off_step_is_said_and_hover_names_work(dap):
    # block 1 thread 100 at n=300 has i >= n: `@%p1 bra DONE` runs (taken); thread 3 of
    # block 0 skips the branch: its step says the instruction was predicated off
    dap.start(VEC_ADD, breakpoints=[32], n=300, seed=1, block=0, thread=3)
    dap.request("configurationDone")
    ev = dap.wait_event("stopped")["body"]
    dap.request("stepIn", {"threadId": ev["threadId"]})
    step = dap.wait_event("stopped")["body"]
    assert "predicated off" in step.get("description", "")
    assert dap.top_frame(ev["threadId"])["line"] == 34
    r = dap.request("evaluate", {"expression": "r5", "context": "hover"})
    assert r["body"]["result"] == "3"


def test_buffers_page_and_other_threads_have_their_own_frames(dap):
    n, seed = 3007, 5
    dap.start(VEC_ADD, breakpoints=[STORE_LINE], n=n, seed=seed, block=2, thread=3)
    dap.request("configurationDone")
    ev = dap.wait_event("stopped")["body"]
    frame = dap.top_frame(ev["threadId"])
    a, _ = _inputs_of(seed, n)
    glob = dap.variables(frame["id"], "Globals")
    assert glob["a"]["indexedVariables"] == n and glob["c"]["indexedVariables"] == n
    page = dap.request("variables", {"variablesReference": glob["a"]["variablesReference"],
                                     "filter": "indexed", "start": 515, "count": 2})  # fmt: skip
    values = page["body"]["variables"]
    assert [v["name"] for v in values] == ["[515]", "[516]"]
    assert [np.float32(v["value"]) for v in values] == [a[515], a[516]]
    threads = dap.request("threads")["body"]["threads"]
    names = [t["name"] for t in threads]
    assert any("lane 31" in x for x in names) and any("block (11,0,0)" in x for x in names)
    # the last block's thread 3 (i = 11*256+3 = 2819 < n) is somewhere in the kernel too
    other = next(t for t in threads if "block (11,0,0)" in t["name"])
    frames = dap.request("stackTrace", {"threadId": other["id"]})["body"]["stackFrames"]
    assert frames and "block (11,0,0) thread (3,0,0)" in frames[0]["name"]
    regs = dap.variables(frames[0]["id"], "Special registers")
    assert regs["%ctaid.x"]["value"] == "11"


@pytest.mark.parametrize("stop_on_findings", [True, False])
def test_a_warning_finding_is_shown_but_does_not_fail_the_exit_code(
    dap, tmp_path, stop_on_findings
):
    """A register read before anything wrote it is an emulator warning (emulator/errors.py
    WARNING_KINDS: a value a kernel may never use; ptxls test passes it): the run exits 0; with
    the findings filter on it still stops there, the stop saying it is a warning."""
    text = (ROOT / "examples" / "vec_add.ptx").read_text()
    add = "    add.f32         %f3, %f1, %f2;"
    planted = text.replace(add, "    add.f32         %f0, %f0, %f1;  // %f0: never written\n" + add)
    assert planted != text
    (tmp_path / "vec_add.ptx").write_text(planted)
    shutil.copy(ROOT / "examples" / "vec_add.cu", tmp_path / "vec_add.cu")  # the spec
    read = 1 + planted.splitlines().index(
        "    add.f32         %f0, %f0, %f1;  // %f0: never written"
    )
    dap.start(str(tmp_path / "vec_add.ptx"), n=257)
    dap.request("setExceptionBreakpoints", {"filters": ["findings"] if stop_on_findings else []})
    dap.request("configurationDone")
    if stop_on_findings:
        ev = dap.wait_event("stopped")["body"]
        assert ev["reason"] == "exception" and ev["description"] == "uninitialized-register", ev
        assert ev["text"].startswith("warning (emulator-only, not a failure): "), ev
        assert dap.top_frame(ev["threadId"])["line"] == read
        dap.request("continue", {"threadId": ev["threadId"]})
    assert dap.wait_event("exited")["body"]["exitCode"] == 0  # a warning fails nothing
    dap.wait_event("terminated")


UNINIT_READ = ROOT / "tests" / "data" / "sanitizer" / "planted" / "uninit_read.ptx"


@pytest.mark.parametrize("stop_on_findings", [True, False])
def test_a_read_of_an_output_nothing_wrote_is_a_warning_stop(dap, stop_on_findings):
    """max_into_out reads y[i] (a pure output, role out) before writing it: the debugger's case
    holds the outputs unwritten as ``ptxls test --device cpu`` does, so with the findings filter
    on the run stops on that load with the emulator's ``uninitialized-global`` warning, the buffer
    and element named; a warning fails nothing (exit code 0), filter on or off."""
    lines = UNINIT_READ.read_text().splitlines()
    read = 1 + next(i for i, t in enumerate(lines) if "ld.global.f32" in t and "%rd5" in t)
    dap.start(str(UNINIT_READ), n=257)
    dap.request("setExceptionBreakpoints", {"filters": ["findings"] if stop_on_findings else []})
    dap.request("configurationDone")
    stops = 0
    while stop_on_findings and (ev := _stopped_or_exited(dap)) is not None:
        assert ev["reason"] == "exception" and ev["description"] == "uninitialized-global", ev
        assert ev["text"].startswith("warning (emulator-only, not a failure): "), ev
        assert re.search(r"\by\[\d+\]", ev["text"]), ev  # the output read, by name and element
        assert dap.top_frame(ev["threadId"])["line"] == read
        stops += 1
        dap.request("continue", {"threadId": ev["threadId"]})
    assert stops or not stop_on_findings
    assert dap.wait_event("exited")["body"]["exitCode"] == 0  # a warning fails nothing
    dap.wait_event("terminated")
    said = "".join(e["body"].get("output", "") for e in dap.events if e["event"] == "output")
    assert "emulator-only warnings, not failures" in said, said


def _stopped_or_exited(dap: DapClient) -> dict | None:
    """The next stop's body, or None once the run exited (the exited event left for the test)."""
    while True:
        for e in dap.events:
            if e["event"] == "exited":
                return None
            if e["event"] == "stopped":
                dap.events.remove(e)
                return e["body"]
        dap._next(60)
