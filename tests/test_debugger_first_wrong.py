"""From a failed test to the debugger: `ptxls test` of a planted wrong vec_add prints (and in
--json carries) the launch configuration of "Debug first wrong element" and leaves the project's
last-failed record; the adapter launched with that configuration, or with nothing but the
program (the record), follows the thread that writes the first wrong element from the start.

The planted bug: elements from 600 on get a - b. With 256 threads a block (examples/vec_add.ptx's
spec), element 600 is written by block 600 // 256 = 2, thread 600 % 256 = 88."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from dap_client import ROOT, DapClient

from ptxls.gputest import debug_launch

STORE_LINE = 47  # st.global.f32 [%rd10], %f3; (three lines lower than in vec_add.ptx)
FIRST_WRONG = 600
WRITER = "block (2,0,0) thread (88,0,0)"


def _planted(folder) -> str:
    text = (ROOT / "examples" / "vec_add.ptx").read_text()
    wrong = text.replace(".reg .pred  %p<2>;", ".reg .pred  %p<3>;").replace(
        "    add.f32         %f3, %f1, %f2;\n",
        f"    setp.ge.s32     %p2, %r5, {FIRST_WRONG};\n    add.f32         %f3, %f1, %f2;\n"
        "    @%p2 sub.f32    %f3, %f1, %f2;\n",
    )
    annotated = "// @gputest a: in f32[n]; b: in f32[n]; c: out f32[n]; n: size; ref: c = a + b\n"
    wrong = wrong.replace(".visible .entry vec_add(", annotated + ".visible .entry vec_add(")
    (folder / ".git").mkdir()  # a project: the record goes to its .ptxls/debug/
    path = folder / "wrong_add.ptx"
    path.write_text(wrong)
    assert wrong.splitlines()[STORE_LINE - 1].strip().startswith("st.global.f32")
    return str(path)


def _ptxls_test(program: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ptxls.cli", "test", program, "--device", "cpu",
         "--sizes", "1000", "3000", *extra],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip


@pytest.fixture
def dap():
    c = DapClient()
    yield c
    c.close()


def _stop(dap) -> tuple[dict, dict]:
    dap.request("configurationDone")
    ev = dap.wait_event("stopped")["body"]
    return ev, dap.top_frame(ev["threadId"])


def test_report_offers_the_launch_and_the_debugger_starts_at_the_writer(dap, tmp_path):
    program = _planted(tmp_path)
    run = _ptxls_test(program, "--json")
    assert run.returncode == 1, run.stderr
    (report,) = json.loads(run.stdout)
    case = report["cases"][0]
    config = report["debug"]
    assert config["type"] == "ptxls" and config["request"] == "launch"
    assert config["program"] == program and config["kernel"] == "vec_add"
    assert (config["n"], config["seed"]) == (case["n"], case["seed"]) == (1000, case["seed"])
    assert config["watch"] == f"c[{FIRST_WRONG}]"
    text = _ptxls_test(program).stdout
    assert "Debug first wrong element (c[600])" in text and '"watch": "c[600]"' in text

    # the launch as the editor starts it, with a breakpoint on the store: the first stop is
    # the store of the writing thread (followed from the start), then the data breakpoint
    launch = {k: v for k, v in config.items() if k not in ("type", "request", "name")}
    dap.start(launch.pop("program"), breakpoints=[STORE_LINE], **launch)
    # as VS Code does after every launch: its own data breakpoints (none) replace nothing of
    # the launch's watch
    r = dap.request("setDataBreakpoints", {"breakpoints": []})
    assert r["success"] and r["body"]["breakpoints"] == []
    ev, frame = _stop(dap)
    assert ev["reason"] == "breakpoint" and frame["line"] == STORE_LINE
    assert WRITER in frame["name"]
    regs = dap.variables(frame["id"], "Registers")
    assert regs["%r5"]["value"] == f"0x{FIRST_WRONG:08x} ({FIRST_WRONG})"
    dap.request("continue", {"threadId": ev["threadId"]})
    ev = dap.wait_event("stopped")["body"]
    assert ev["reason"] == "data breakpoint" and ev["description"] == "c[600] written"


def test_default_thread_is_the_last_failed_tests_writer(dap, tmp_path):
    program = _planted(tmp_path)
    assert _ptxls_test(program).returncode == 1
    record = tmp_path / ".ptxls" / "debug" / "last-failed.json"
    saved = json.loads(record.read_text())
    assert saved["watch"] == "c[600]" and saved["n"] == 1000
    dap.start(program, breakpoints=[STORE_LINE])  # no n, seed, block, thread
    ev, frame = _stop(dap)
    assert ev["reason"] == "breakpoint" and WRITER in frame["name"]
    said = "".join(e["body"]["output"] for e in dap.events if e["event"] == "output")
    assert "last failed test" in said and "n=1000" in said


def test_a_stale_or_forged_record_is_not_used(dap, tmp_path):
    program = _planted(tmp_path)
    assert _ptxls_test(program).returncode == 1
    record = tmp_path / ".ptxls" / "debug" / "last-failed.json"
    saved = json.loads(record.read_text())
    # a record naming an element by an expression is refused, whatever the file's hash
    record.write_text(json.dumps({**saved, "watch": "c[__import__('os')]"}))
    found, why = debug_launch.last_failed_test(program)
    assert found is None and "name[index]" in why
    # an edit of the file: the record is for another version of it
    record.write_text(json.dumps(saved))
    with open(program, "a") as f:
        f.write("\n// edited\n")
    found, why = debug_launch.last_failed_test(program)
    assert found is None and "another version" in why
    dap.start(program, breakpoints=[STORE_LINE], n=1000)
    ev, frame = _stop(dap)
    assert "block (0,0,0) thread (0,0,0)" in frame["name"]


def test_first_wrong_follows_its_writer_before_the_store(dap, tmp_path):
    program = _planted(tmp_path)
    dap.start(program, breakpoints=[STORE_LINE], n=1000, seed=9, watch="first-wrong")
    ev, frame = _stop(dap)
    assert ev["reason"] == "breakpoint" and WRITER in frame["name"]


def test_hover_link_carries_the_configuration():
    config = {"type": "ptxls", "request": "launch", "program": "/p/k.ptx", "kernel": "k",
              "n": 1000, "seed": 7, "watch": "c[600]"}  # fmt: skip
    link = debug_launch.hover_markdown(config, links=True)
    assert link.startswith(
        "[▶ Debug first wrong element (c\\[600\\])](command:ptxls.debugFirstWrong?"
    )
    from urllib.parse import unquote

    target = link.split("](", 1)[1].split(" ", 1)[0]
    assert json.loads(unquote(target.split("?", 1)[1])) == [config]
    plain = debug_launch.hover_markdown(config, links=False)
    assert "command:" not in plain and '"c[600]"' in plain
