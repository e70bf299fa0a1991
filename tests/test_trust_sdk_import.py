"""The openai SDK is never imported on the server's event loop (issue 25: the first LLM lowering
imported it there, ~0.7 s of stall for every hover).

The real server process runs under an audit hook that records, for every module of the
``openai`` package Python actually loads, whether the loading thread is the main thread (the
one running the event loop); an LLM lowering then talks to the scripted endpoint on loopback.
"""

from __future__ import annotations

import shutil
import sys

import pytest
from raw_lsp import ROOT, RawServer

from scripted_llm import GOOD_VEC_ADD, ScriptedLLM, Step, fenced

pytest.importorskip("openai")

HOOKED_SERVER = (
    "import sys, threading\n"
    "log = open(sys.argv.pop(1), 'a')\n"
    "def hook(event, args):\n"
    "    if event == 'import' and str(args[0]).split('.')[0] == 'openai':\n"
    "        main = threading.current_thread() is threading.main_thread()\n"
    "        log.write(f'{args[0]} {main}\\n')\n"
    "        log.flush()\n"
    "sys.addaudithook(hook)\n"
    "sys.argv = ['ptxls.server', 'serve']\n"
    "import runpy\n"
    "runpy.run_module('ptxls.server', run_name='__main__', alter_sys=True)\n"
)


def test_an_llm_lowering_imports_the_sdk_off_the_loop(tmp_path):
    log = tmp_path / "imports.log"
    cu = tmp_path / "vec_add.cu"
    shutil.copy(ROOT / "examples" / "vec_add.cu", cu)
    with ScriptedLLM([Step(fenced(GOOD_VEC_ADD))] * 3) as llm:
        env = {"OPENAI_BASE_URL": llm.base_url, "PTXLS_MODEL": "scripted-model",
               "PTXLS_LLM_RETRY_BACKOFF": "0.01", "OPENAI_API_KEY": ""}  # fmt: skip
        command = [sys.executable, "-c", HOOKED_SERVER, str(log)]
        with RawServer(env=env, cwd=str(tmp_path), command=command) as server:
            server.initialize(str(tmp_path), {"llm": {"candidates": 1, "maxRounds": 1}})
            server.open(cu.as_uri(), cu.read_text(), language="cuda")
            rid = server.request("workspace/executeCommand", {
                "command": "ptxls.lowerToPtx", "arguments": [cu.as_uri(), "vec_add", "llm"]})  # fmt: skip
            reply = server.wait_reply(rid, 180)
    assert "result" in reply, reply
    loaded = [line.split() for line in log.read_text().splitlines()] if log.exists() else []
    assert loaded, ("the SDK was never imported", reply)
    on_loop = [name for name, main in loaded if main == "True"]
    assert not on_loop, f"imported on the event loop's thread: {on_loop[:10]}"
