"""What `ptxls --version`, `ptxls check` and the lowering's spec reading import (issue 22: both
commands within 0.25 s on the 2-core machine; bench/cli_startup.py times them).

Each command runs in a fresh interpreter the way the console script runs it (``from
ptxls.cli.main import main``), and the modules loaded by the time it returns are read from
``sys.modules``: a heavy import that comes back on one of these paths fails here, whatever the
machine's speed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SMALL = ROOT / "examples" / "vec_add.ptx"

# Each costs tens to hundreds of ms to import on the 2-core machine, and none is needed to print
# a version or to run ptxas on a file.
HEAVY = ("numpy", "pydantic", "openai", "httpx2", "lsprotocol", "pygls", "cuda")

_RUN_MAIN = """
import json, sys
sys.argv = ["ptxls", *sys.argv[1:]]
from ptxls.cli.main import main
try:
    code = main()
except SystemExit as e:
    code = e.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def _modules_after(*args: str) -> tuple[int, set[str], str]:
    r = subprocess.run(
        [sys.executable, "-c", _RUN_MAIN, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    report = json.loads(r.stderr.strip().splitlines()[-1])
    return report["code"], set(report["modules"]), r.stdout


def _tops(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def test_version_imports_no_command_module_and_no_metadata_reader():
    code, modules, out = _modules_after("--version")
    assert code == 0 and out.startswith("ptxls ")
    assert not _tops(modules) & set(HEAVY), sorted(_tops(modules) & set(HEAVY))
    # no other command's module, no event loop, no importlib.metadata (40 ms on its own)
    assert not {m for m in modules if m.startswith("ptxls.cli.") and m not in (
        "ptxls.cli.main", "ptxls.cli.grammar", "ptxls.cli.output_format")}  # fmt: skip
    assert "asyncio" not in modules and "importlib.metadata" not in modules


def test_version_is_the_installed_distributions():
    from importlib.metadata import version

    from ptxls.cli.main import version as read_cheaply

    assert read_cheaply() == version("ptxls")


def test_check_imports_only_the_check():
    code, modules, _ = _modules_after("check", str(SMALL))
    assert code in (0, 2)  # 2 where no ptxas is installed: the imports are the point here
    assert not _tops(modules) & set(HEAVY), sorted(_tops(modules) & set(HEAVY))
    assert not {m for m in modules if m.startswith(("ptxls.gputest", "ptxls.server",
                                                    "ptxls.lowering", "ptxls.emulator"))}  # fmt: skip
    assert "importlib.metadata" not in modules
    assert "ptxls.cli.gpu_test" not in modules and "ptxls.cli.lower" not in modules


def test_help_still_lists_every_command():
    for args in (["--help"], ["-h", "check"]):  # the main help, whatever follows it
        r = subprocess.run(
            [sys.executable, "-m", "ptxls.cli", *args], capture_output=True, text=True, cwd=ROOT
        )
        assert r.returncode == 0
        for command in (
            "check",
            "test",
            "lower",
            "replay",
            "bench",
            "sass",
            "eval",
            "debug-adapter",
        ):
            assert re.search(rf"^    {command}(\s|$)", r.stdout, re.MULTILINE), (args, command)


def test_reading_a_test_spec_does_not_import_numpy():
    """`ptxls lower` reads the spec before its first request, even with --compile-only; numpy
    there was a fifth of the start-up (bench/lowering_startup.py)."""
    code = (
        "import sys\n"
        "from ptxls.gputest.spec_source import SpecSource, resolve_spec\n"
        "from ptxls.gputest.dtypes import DTYPES\n"
        f"text = open({str(ROOT / 'examples' / 'vec_add.cu')!r}).read()\n"
        "res = resolve_spec(SpecSource('cuda', text, 'vec_add', 'vec_add.cu'))\n"
        "assert res.ok and res.spec.params, res\n"
        "print(DTYPES['f32'].storage, 'numpy' in sys.modules)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["float32", "False"]


def test_the_client_made_ahead_is_the_one_the_lowering_uses_and_only_once():
    """prefetch_sdk(settings) / warm_sdk make the SDK client off the caller's path; the first
    LlmClient with the same settings takes that very client, a second one or other settings
    get a new one (a client is never shared)."""
    import asyncio

    from ptxls.lowering.llm_client import LlmClient, warm_sdk
    from ptxls.lowering.settings import from_config

    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "PTXLS_MODEL": "m"}
    settings, _ = from_config(None, env)
    other, _ = from_config({"timeoutSeconds": 7}, env)
    warm_sdk(settings)
    from ptxls.lowering import llm_sdk

    made = dict(llm_sdk._made_ahead)
    assert len(made) == 1
    first, second, third = LlmClient(settings), LlmClient(settings), LlmClient(other)
    try:
        assert first._client is next(iter(made.values()))
        assert second._client is not first._client and third._client is not first._client
        assert third._client.timeout == 7
        assert not llm_sdk._made_ahead
    finally:
        for c in (first, second, third):
            asyncio.run(c.aclose())
