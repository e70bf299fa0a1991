""" "Run GPU test" through the real server with a stand-in GPU worker: PTXLS_GPU_PYTHON points at
a script that answers the worker protocol like a GPU machine would (a slow run that the person
cancels through $/progress; a failing then a passing result), so the editor side of results —
cancellation, diagnostics that appear and clear, hovers — is tested without a GPU."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sys
import textwrap

from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_helpers import EXAMPLES, init_params, open_doc, server_config

# Stands in for "python -m ptxls.gputest.worker": the arguments are ignored. The mode file
# says how each run request is answered: "slow" (progress, then nothing until killed), or
# "fail"/"pass" (a result shaped like the real worker's).
STAND_IN = textwrap.dedent(
    """\
    #!{python}
    import json, sys, time
    MODE = {mode!r}
    def send(o):
        sys.stdout.write(json.dumps(o) + "\\n"); sys.stdout.flush()
    def case(i, n, ok):
        msgs = [] if ok else ["c: 1 of 1 wrong; first wrong: c[0] expected 1.5 got -0.5"]
        return {{"index": i, "n": n, "seed": 7 + i, "passed": ok, "max_rel_err": 0.0 if ok else 1.3,
                "messages": msgs, "launch": {{"grid": [1, 1, 1], "block": [256, 1, 1], "shared": 0}},
                "time_ms": 0.0034, "ref_time_ms": 0.0033, "outputs": [{{"name": "c"}}]}}
    for line in sys.stdin:
        req = json.loads(line)
        if req["op"] == "hello":
            send({{"ok": True, "device": {{"name": "stand-in GPU", "arch": "sm_90", "driver_cuda": "13.0",
                                         "max_ptx_isa": [9, 0]}}}})
            continue
        mode = open(MODE).read().strip()
        if mode == "slow":
            send({{"progress": "case 1/6 n=0: running vec_add"}})
            time.sleep(3600)
        ok = mode == "pass"
        cases = [case(i, n, ok or i == 0) for i, n in enumerate(req["spec"]["sizes"])]
        send({{"ok": True, "result": {{"cases": cases, "copy_ceiling_gbps": 4000.0,
              "load": {{"path": "cubin"}}, "device": {{"name": "stand-in GPU", "arch": "sm_90"}}}}}})
    """
)


def _stand_in(tmp_path, mode: str) -> tuple[dict, object]:
    mode_file = tmp_path / "mode"
    mode_file.write_text(mode)
    script = tmp_path / "gpu-python"
    script.write_text(STAND_IN.format(python=sys.executable, mode=str(mode_file)))
    script.chmod(0o755)
    return {**os.environ, "PTXLS_GPU_PYTHON": str(script)}, mode_file


def _doc(client: LanguageClient, tmp_path) -> tuple[str, int, int]:
    for name in ("vec_add.ptx", "vec_add.cu"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    text = (tmp_path / "vec_add.ptx").read_text()
    uri = (tmp_path / "vec_add.ptx").as_uri()
    open_doc(client, uri, text, "ptx")
    line = next(i for i, t in enumerate(text.splitlines()) if ".entry vec_add" in t)
    return uri, line, text.splitlines()[line].index("vec_add")


async def _hover(client, uri, line, col) -> str:
    h = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri=uri), types.Position(line, col))
    )
    return h.contents.value if h is not None else ""


def _run(client, uri):
    return client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="ptxls.runGpuTest", arguments=[uri, "vec_add"])
    )


def _gpu_test_diagnostics(client, uri):
    return [d for d in client.diagnostics.get(uri, []) if d.source == "gpu-test"]


async def test_cancel_through_progress_stops_the_run_and_the_server_carries_on(tmp_path):
    env, mode = _stand_in(tmp_path, "slow")
    async with _started(env, tmp_path) as client:
        uri, line, col = _doc(client, tmp_path)
        run = asyncio.ensure_future(_run(client, uri))
        token = await _progress_token(client, "case 1/6 n=0: running vec_add")
        client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
        result = await asyncio.wait_for(run, 60)
        assert result["status"] == "cancelled"
        assert "GPU test" not in await _hover(client, uri, line, col)  # nothing cached
        mode.write_text("pass")  # the next run gets a fresh worker and completes
        result = await asyncio.wait_for(_run(client, uri), 60)
        assert result["status"] == "pass", result


async def test_failure_is_a_diagnostic_that_a_passing_run_clears(tmp_path):
    env, mode = _stand_in(tmp_path, "fail")
    async with _started(env, tmp_path) as client:
        uri, line, col = _doc(client, tmp_path)
        result = await asyncio.wait_for(_run(client, uri), 60)
        assert result["status"] == "fail"
        [d] = _gpu_test_diagnostics(client, uri)
        assert d.severity == types.DiagnosticSeverity.Error and d.range.start.line == line
        assert "Case n=1 (case 2 of 6, seed 8), launch grid=1 block=256 shared=0:" in d.message
        assert "c[0] expected 1.5 got -0.5" in d.message
        shown = await _hover(client, uri, line, col)
        assert "**GPU test vec_add: FAIL** — 1/6 cases pass" in shown and "stand-in GPU" in shown
        mode.write_text("pass")
        result = await asyncio.wait_for(_run(client, uri), 60)
        assert result["status"] == "pass"
        assert _gpu_test_diagnostics(client, uri) == []
        shown = await _hover(client, uri, line, col)
        assert "**GPU test vec_add: PASS** — 6/6 cases pass" in shown
        assert "time vs reference at n=16777216: **1.03×**" in shown


@contextlib.asynccontextmanager
async def _started(env, tmp_path):
    """A real server process started with ``env`` (the stand-in's path differs per test, so
    the module-level pytest-lsp fixture cannot carry it), initialized, shut down afterwards."""
    client = await server_config(env).start()
    try:
        await client.initialize_session(init_params(tmp_path, {"debounceMs": 50}))
        yield client
        await client.shutdown_session()
    finally:
        await client.stop()


async def _progress_token(client, message: str, timeout: float = 60.0):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        for token, reports in client.progress_reports.items():
            if any(getattr(r, "message", None) == message for r in reports):
                return token
        await asyncio.sleep(0.05)
    raise AssertionError(
        f"no progress report {message!r}; got {json.dumps(str(client.progress_reports))[:500]}"
    )
