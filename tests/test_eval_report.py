"""The results people read: ptxls eval end to end from the command line (the compilers' rows of
three tasks, on whatever this machine tests with), then --compare of two results files as a
table and as a self-contained HTML report."""

from __future__ import annotations

import json
import re
import subprocess
import sys


def ptxls(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "ptxls.cli.main", *args], capture_output=True,
                          text=True, timeout=timeout)  # fmt: skip


def test_a_baseline_run_then_a_comparison(tmp_path):
    run = ptxls("eval", "--baseline-only", "--tasks", "relu_f32,row_argmax_f32,triton_relu",
                "--run-dir", str(tmp_path / "run"), "--out", str(tmp_path / "a.json"),
                "--html", str(tmp_path / "a.html"), "--test-workers", "1")  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    doc = json.loads((tmp_path / "a.json").read_text())
    assert doc["summary"]["nvcc"]["passed_samples"] == 2
    assert doc["summary"]["triton"]["passed_samples"] == 1
    assert re.search(r"^nvcc\s+2\s+2\s+100\.0%", run.stdout, re.M), run.stdout
    # the progress bar is one line per tenth off a terminal, never one per chunk
    assert run.stderr.count("\n") < 12
    # a second run in the same directory has nothing left to do
    again = ptxls("eval", "--baseline-only", "--tasks", "relu_f32,row_argmax_f32,triton_relu",
                  "--run-dir", str(tmp_path / "run"), "--out", str(tmp_path / "b.json"))  # fmt: skip
    assert again.returncode == 0
    b = json.loads((tmp_path / "b.json").read_text())
    assert b["info"]["skipped"] == 3 and b["info"]["jobs"] == 0
    cmp = ptxls("eval", "--compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"),
                "--html", str(tmp_path / "cmp.html"))  # fmt: skip
    assert cmp.returncode == 0, cmp.stderr
    assert re.search(r"^a\s+", cmp.stdout, re.M) and re.search(r"^b\s+", cmp.stdout, re.M)
    html = (tmp_path / "cmp.html").read_text()
    assert html.count("<svg") >= 1 and "pass@k per family" in html
    assert "http://" not in html and "https://" not in html and "<script" not in html
    assert "row_argmax_f32" in html


def _as_from_a_terminal() -> None:
    """In the child before exec: Ctrl-C's signal as a shell gives it (default action, not
    blocked). A pytest worker may hand down SIGINT blocked or ignored by something earlier in
    the same process, and Python then never raises KeyboardInterrupt in the child."""
    import signal

    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_a_run_stopped_by_ctrl_c_resumes_where_it_stopped(tmp_path):
    """A real interruption: SIGINT to `ptxls eval` once two samples are recorded, then the same
    command again — only the samples without a record ask the model."""
    import os
    import signal
    import time

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    from eval_scripted_models import nvcc_ptx, responder, suite_tasks

    from scripted_llm import ScriptedLLM

    tasks = ["relu_f32", "axpy_f32"]
    answer = responder(nvcc_ptx(suite_tasks(tasks)))

    def slow(body, i):
        step = answer(body, i)
        step.delay = 0.4  # each reply takes a while, so the run is caught in the middle
        return step

    run_dir = tmp_path / "run"
    args = [sys.executable, "-m", "ptxls.cli.main", "eval", "--no-baselines", "--tasks",
            ",".join(tasks), "--samples", "3", "--concurrency", "1", "--candidates", "1",
            "--run-dir", str(run_dir), "--device", "none", "-q"]  # fmt: skip
    with ScriptedLLM(slow) as server:
        env = dict(os.environ, OPENAI_BASE_URL=server.base_url, PTXLS_MODEL="scripted-model",
                   OPENAI_API_KEY="sk-interrupt-test-0123456789", PTXLS_LLM_STREAM="false")  # fmt: skip
        proc = subprocess.Popen(
            args,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=_as_from_a_terminal,
        )
        deadline = time.monotonic() + 120
        while len(list(run_dir.glob("samples/*/*.json"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err[-2000:]
        kept = sorted(p.name for p in run_dir.glob("samples/*/*.json"))
        assert 2 <= len(kept) < 6
        for p in run_dir.glob("samples/*/*.json"):
            json.loads(p.read_text())  # whole records only, never a torn one
        asked = len(server.chat_requests)
        again = subprocess.run(args + ["--out", str(tmp_path / "r.json")], env=env,
                               capture_output=True, text=True, timeout=300)  # fmt: skip
        assert again.returncode == 0, again.stderr
        # one request per sample still to do (a sample cut mid-request asks again)
        assert len(server.chat_requests) - asked == 6 - len(kept)
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["summary"]["llm"]["passed_samples"] == 6
    assert doc["info"]["skipped"] == len(kept)
