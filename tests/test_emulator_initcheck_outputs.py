"""Through the harness, not only the engine: a kernel that reads its output before writing it
gets a warning on its line (buffer, element, thread), labelled emulator-only, and its verdict
comes from its values alone, as on a GPU: the harness poisoned that output, so from the PTX's
point of view the bytes are defined and a GPU reads the poison there. A poison that reaches an
output still fails (on the values); a read of shared memory never written still fails the case
(shared memory starts undefined, nothing can make that value right)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLANTED = ROOT / "tests" / "data" / "sanitizer" / "planted" / "uninit_read.ptx"


def _test(path: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ptxls.cli.main", "test", str(path), "--device", "cpu", *extra],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip


def _kernel(tmp_path: Path, name: str, annotations: str, body: str) -> Path:
    """A one-entry kernel over x (in) and y (out) with thread index %r4 < n checked."""
    path = tmp_path / f"{name}.ptx"
    path.write_text(f""".version 8.0
.target sm_90
.address_size 64

{annotations}
// @gputest launch: grid=ceil(n/256) block=256
// @gputest sizes: 1 257 1024
.visible .entry {name}(.param .u64 px, .param .u64 py, .param .u32 pn)
{{
    .reg .pred  %p<2>;
    .reg .b32   %r<8>;
    .reg .f32   %f<8>;
    .reg .b64   %rd<8>;
    .shared .align 4 .b8 tile[1024];
    ld.param.u64        %rd1, [px];
    ld.param.u64        %rd2, [py];
    ld.param.u32        %r1, [pn];
    cvta.to.global.u64  %rd1, %rd1;
    cvta.to.global.u64  %rd2, %rd2;
    mov.u32             %r2, %tid.x;
    mov.u32             %r3, %ctaid.x;
    mad.lo.s32          %r4, %r3, 256, %r2;
    setp.ge.u32         %p1, %r4, %r1;
    @%p1 bra            DONE;
    mul.wide.u32        %rd3, %r4, 4;
    add.s64             %rd4, %rd1, %rd3;
    add.s64             %rd5, %rd2, %rd3;
{body}
DONE:
    ret;
}}
""")
    return path


def test_a_read_of_an_output_before_any_write_is_a_warning_on_its_line_not_a_failure():
    p = _test(PLANTED)
    # max(NaN poison, x) = x: the outputs are right, as on the H200, where the test passes
    assert p.returncode == 5, p.stdout + p.stderr  # passed on the CPU emulator only
    assert "PASS" in p.stdout.splitlines()[0], p.stdout
    said = [line for line in p.stdout.splitlines() if "uninitialized-global" in line]
    assert len(said) == 1, p.stdout
    assert "warning (emulator-only, not a failure)" in said[0], said
    assert "line 38" in said[0] and "(y[0])" in said[0] and "thread (0,0,0)" in said[0], said
    assert "emulator-only warnings" in p.stdout and "do not change the verdict" in p.stdout


def test_the_warning_is_in_the_json_with_its_buffer_element_and_thread():
    p = _test(PLANTED, "--json")
    assert p.returncode == 5, p.stdout + p.stderr
    [report] = json.loads(p.stdout)
    assert report["status"] == "pass" and all(c["passed"] for c in report["cases"])
    [f] = report["findings"]
    assert (f["kind"], f["severity"], f["line"]) == ("uninitialized-global", "warning", 38)
    assert (f["buffer"], f["element"], f["thread"]) == ("y", 0, "(0, 0, 0)"), f
    assert f["fails_case"] is False and f["emulator_only"] is True


def test_a_poison_that_reaches_an_output_still_fails_on_the_values(tmp_path):
    # y = y + x: reads the poisoned output and stores what it read into it
    path = _kernel(tmp_path, "adds_into_out",
                   "// @gputest x: in f32[n]; y: out f32[n]; n: size\n// @gputest ref: y = x",
                   "    ld.global.f32 %f1, [%rd4];\n    ld.global.f32 %f2, [%rd5];\n"
                   "    add.f32 %f3, %f2, %f1;\n    st.global.f32 [%rd5], %f3;")  # fmt: skip
    p = _test(path)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "FAIL" in p.stdout.splitlines()[0]
    assert "y: 1 of 1 wrong" in p.stdout, p.stdout  # the values, as a GPU would say
    assert "warning (emulator-only, not a failure): uninitialized-global" in p.stdout


def test_a_read_of_shared_memory_never_written_still_fails_the_case(tmp_path):
    # y = x + 0 * tile[tid]: the emulator's shared memory starts as zeros, so the values come
    # out right here; only the finding can fail it (on a GPU the bytes are whatever was there)
    path = _kernel(tmp_path, "reads_unwritten_tile",
                   "// @gputest x: in f32[n]; y: out f32[n]; n: size\n// @gputest ref: y = x",
                   "    shl.b32 %r5, %r2, 2;\n    mov.u32 %r6, tile;\n    add.s32 %r7, %r6, %r5;\n"
                   "    ld.shared.f32 %f4, [%r7];\n    ld.global.f32 %f1, [%rd4];\n"
                   "    fma.rn.f32 %f3, %f4, 0f00000000, %f1;\n    st.global.f32 [%rd5], %f3;")  # fmt: skip
    p = _test(path, "--json")
    assert p.returncode == 1, p.stdout + p.stderr
    [report] = json.loads(p.stdout)
    assert report["status"] == "fail", report["summary"]
    case = report["cases"][0]
    assert not case["passed"] and case["max_rel_err"] == 0  # right values, failed on the finding
    [f] = [f for f in report["findings"] if f["kind"] == "uninitialized-shared"]
    assert f["severity"] == "error" and f["fails_case"] is True
    assert "uninitialized-shared" in report["summary"], report["summary"]


def test_an_honest_kernel_that_writes_its_output_first_still_passes():
    # sizes of one, two and twelve blocks (a partial last block in each): the default sizes'
    # 16M-element case ran the emulator for ~30 s and checks nothing more about the first write
    p = _test(ROOT / "examples" / "vec_add.ptx", "--sizes", "1", "257", "3007")
    assert p.returncode == 5, p.stdout + p.stderr  # passed on the CPU emulator only
    assert "uninitialized" not in p.stdout
