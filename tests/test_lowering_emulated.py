"""The lowering loop without a GPU: each candidate that passes ptxas runs its tests on the CPU
emulator, and a wrong one goes back to the model like a GPU failure. Through the real CLI
(``ptxls lower``), a scripted OpenAI-compatible endpoint over real HTTP, real ptxas and nvcc, and
the GPU hidden (``CUDA_VISIBLE_DEVICES=""``), so ``--device auto`` falls back to the emulator.

The first reply is the elided repair the issue reports: it passes ptxas but its body is a comment
("// ... (address computation, loads and store unchanged) ..."), so it computes nothing. Only
running it shows that; it must be rejected, never written out.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from scripted_llm import GOOD_VEC_ADD, ROOT, ScriptedLLM, Step, fenced

VEC_ADD_CU = (ROOT / "examples" / "vec_add.cu").read_text()

ELIDED_VEC_ADD = """\
.version 8.0
.target sm_90
.address_size 64

.visible .entry vec_add(
    .param .u64 vec_add_param_0,
    .param .u64 vec_add_param_1,
    .param .u64 vec_add_param_2,
    .param .u32 vec_add_param_3
)
{
    .reg .b32   %r<4>;
    // ... (address computation, loads and store unchanged) ...
    ret;
}
"""


def _lower(tmp_path, script, *args):
    with ScriptedLLM(script) as llm:
        env = dict(os.environ, OPENAI_BASE_URL=llm.base_url, PTXLS_MODEL="scripted-model",
                   PTXLS_LLM_RETRY_BACKOFF="0.01", CUDA_VISIBLE_DEVICES="",
                   XDG_CACHE_HOME=str(tmp_path / "user-cache"))  # fmt: skip
        env.pop("OPENAI_API_KEY", None)
        p = subprocess.run(
            [sys.executable, "-m", "ptxls.cli.main", "lower", *args],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600,
        )  # fmt: skip
        return p, llm


@pytest.fixture
def work(tmp_path):
    (tmp_path / "vec_add.cu").write_text(VEC_ADD_CU)
    return tmp_path


def test_the_elided_repair_is_run_on_the_emulator_rejected_and_the_right_one_kept(work):
    p, llm = _lower(
        work,
        [Step(fenced(ELIDED_VEC_ADD)), Step(fenced(GOOD_VEC_ADD))],
        "vec_add.cu", "--candidates", "1", "--rounds", "3",
    )  # fmt: skip
    assert p.returncode == 5, p.stdout + p.stderr  # passed on the CPU emulator, not on a GPU
    assert len(llm.chat_requests) == 2
    # the model was told what running its kernel showed, as after a GPU failure
    feedback = llm.chat_requests[1].body["messages"][-1]["content"]
    assert "Test on the CPU emulator of kernel vec_add failed" in feedback, feedback
    assert "never written" in feedback, feedback
    last = p.stdout.strip().splitlines()[-1]
    assert "PASSED its tests on the CPU emulator" in last and "not GPU-verified" in last
    written = (work / "vec_add.ptx").read_text()
    header, body = written.split(".version", 1)
    assert (
        "emulated (CPU), not GPU-verified" in header
        and "passed on the ptxls PTX emulator" in header
    )
    assert "GPU-tested" not in header.replace("not GPU-tested", "")
    assert "address computation, loads and store unchanged" not in body  # the gutted one lost
    assert "add.f32" in body
    for bad in ("Traceback", "Exception ignored", "Event loop is closed"):
        assert bad not in p.stderr, p.stderr[-2000:]


def test_device_gpu_without_a_gpu_tests_nothing_and_says_so(work):
    """``--device gpu``: no fall-back to the emulator; the result is only ptxas-checked (exit 4)."""
    p, llm = _lower(
        work, [Step(fenced(ELIDED_VEC_ADD)), Step(fenced(GOOD_VEC_ADD))], "vec_add.cu",
        "--candidates", "1", "--device", "gpu",
    )  # fmt: skip
    assert p.returncode == 4, p.stdout + p.stderr
    last = p.stdout.strip().splitlines()[-1]
    assert "NOT GPU-tested" in last and "emulator" not in last
    assert "emulated" not in (work / "vec_add.ptx").read_text().split(".version")[0]
