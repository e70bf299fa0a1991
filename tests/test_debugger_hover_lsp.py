""" "Debug first wrong element" in the GPU-test hover, through the real server process: after a
failed test of a planted wrong vec_add on the CPU emulator, the kernel's hover holds a command
link (for a client that says it runs ``ptxls.debugFirstWrong``: the VS Code extension) whose
argument is the launch configuration of the failed case at its first wrong element; another
client gets the same values as text, never a ``command:`` link it cannot run."""

from __future__ import annotations

import json
import os
from urllib.parse import unquote

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_helpers import EXAMPLES, init_params, open_doc

ENV = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
OPTIONS = {"debounceMs": 50, "test": {"device": "cpu"}}


def _with_links(root, options):
    params = init_params(root, options)
    params.initialization_options = {"ptxls": options, "client": {"debugLinks": True}}
    return params


pytestmark = [
    pytest.mark.lsp(env=ENV, options=OPTIONS),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]


def _planted(tmp_path) -> tuple[str, str]:
    text = (EXAMPLES / "vec_add.ptx").read_text()
    text = text.replace(".reg .pred  %p<2>;", ".reg .pred  %p<3>;").replace(
        "    add.f32         %f3, %f1, %f2;\n",
        "    setp.ge.s32     %p2, %r5, 200;\n    add.f32         %f3, %f1, %f2;\n"
        "    @%p2 sub.f32    %f3, %f1, %f2;\n",
    )
    text = text.replace(
        ".visible .entry vec_add(",
        "// @gputest a: in f32[n]; b: in f32[n]; c: out f32[n]; n: size; ref: c = a + b\n"
        "// @gputest sizes: 255 3007\n.visible .entry vec_add(",
    )
    (tmp_path / ".git").mkdir()
    path = tmp_path / "wrong_add.ptx"
    path.write_text(text)
    return str(path), text


async def _hover_after_failed_test(client: LanguageClient, tmp_path) -> tuple[str, str]:
    path, text = _planted(tmp_path)
    uri = "file://" + path
    open_doc(client, uri, text, "ptx")
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="ptxls.runGpuTest", arguments=[uri, "vec_add"])
    )
    assert result["status"] == "fail", result
    line = next(i for i, t in enumerate(text.splitlines()) if ".entry vec_add" in t)
    h = await client.text_document_hover_async(
        types.HoverParams(
            types.TextDocumentIdentifier(uri=uri),
            types.Position(line, text.splitlines()[line].index("vec_add")),
        )
    )
    assert h is not None
    return path, h.contents.value


@pytest.mark.lsp(init=_with_links)
async def test_hover_links_the_failed_case_to_the_debugger(client: LanguageClient, tmp_path):
    path, shown = await _hover_after_failed_test(client, tmp_path)
    assert "[▶ Debug first wrong element (c\\[200\\])](command:ptxls.debugFirstWrong?" in shown
    target = shown.split("](command:ptxls.debugFirstWrong?", 1)[1].split(" ", 1)[0]
    (config,) = json.loads(unquote(target))
    assert config["type"] == "ptxls" and config["request"] == "launch"
    assert config["program"] == path and config["kernel"] == "vec_add"
    assert config["n"] == 255 and config["watch"] == "c[200]"
    assert "failed case n=255 (seed " + str(config["seed"]) + "," in shown
    # the test left the project's last failed test for the debugger's default thread
    record = json.loads((tmp_path / ".ptxls" / "debug" / "last-failed.json").read_text())
    assert (record["n"], record["seed"], record["watch"]) == (255, config["seed"], "c[200]")


async def test_a_client_without_links_gets_the_values(client: LanguageClient, tmp_path):
    _, shown = await _hover_after_failed_test(client, tmp_path)
    assert "command:" not in shown
    assert "Debug first wrong element: launch `ptxls debug-adapter` with {" in shown
    assert 'watch: "c[200]"' in shown and "n: 255," in shown
