"""The editor's result of "Lower to PTX with LLM" says what the run cost: rounds and tokens in the
summary the notification shows, and the whole accounting in the command's result (the real
server process through pytest-lsp, the scripted endpoint on loopback)."""

from __future__ import annotations

import os

import pytest
from pytest_lsp import LanguageClient
from test_lowering_lsp_results import _actions, _copy_vec_add, _editor, _execute, _init, open_doc

from scripted_llm import GOOD_VEC_ADD, ScriptedLLM, Step, fenced

LLM = ScriptedLLM().start()
ENV = {**os.environ, "OPENAI_BASE_URL": LLM.base_url, "PTXLS_MODEL": "scripted-model",
       "PTXLS_LLM_RETRY_BACKOFF": "0.01"}  # fmt: skip
ENV.pop("OPENAI_API_KEY", None)
USAGE = {"prompt_tokens": 2500, "completion_tokens": 500, "total_tokens": 3000}

pytestmark = pytest.mark.lsp(
    env=ENV, init=_init, on_start=_editor, options={"candidates": 1, "maxRounds": 3}
)


@pytest.fixture(scope="module", autouse=True)
def _stop_llm():
    yield
    LLM.stop()


async def test_the_result_notification_shows_rounds_and_tokens(client: LanguageClient, tmp_path):
    cu = _copy_vec_add(tmp_path)
    open_doc(client, cu.as_uri(), cu.read_text(), language="cuda")
    actions = await _actions(client, cu.as_uri(), 3)
    broken = GOOD_VEC_ADD.replace("add.f32             %f3, %f1, %f2;", "add.f32 %f3, %f1, %rd2;")
    LLM.set_script([Step(fenced(broken), usage=USAGE), Step(fenced(GOOD_VEC_ADD), usage=USAGE)])
    result = await _execute(client, actions["Lower to PTX with LLM (vec_add)"].command)
    assert "— 2 rounds, 6,000 tokens" in result["summary"], result["summary"]
    acc = result["accounting"]
    assert acc["model"] == "scripted-model" and acc["rounds"] == 2
    assert [r["verdict"] for r in acc["candidates"][0]["rounds"]][0] == "ptxas"
    assert acc["tokens"]["prompt_tokens"] == 5000
