"""One grammar for every subcommand (issue 21), through the real CLI (``python -m ptxls.cli``)
on good and bad input: the exit code of the one table (0 ok, 1 the user's code is wrong,
2 cannot run, 3 no GPU, 5 passed on the CPU emulator only), messages that start
``ptxls <command>:``, the subcommand's own usage and the closest spelling on a mistake, --arch
checked against what ptxas accepts, and ptxas's problems printed like ``ptxls check``.

The table below is the test: one row per (command, input); a row says the exit code and what
stdout or stderr must contain. Exit 4 (compile-only, not tested) needs an LLM run and is
covered by the lowering tests."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cli_helpers import run_cli

from ptxls.cli.main import build_parser
from ptxls.toolchain.gpu_probe import probe_gpu

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
HAS_GPU = probe_gpu().available
NO_GPU = 0 if HAS_GPU else 3  # a GPU asked for explicitly
# every subcommand the parser has, including ones added later (eval, replay, ...)
COMMANDS = sorted(build_parser()[1])


@dataclass(frozen=True)
class Row:
    args: tuple[str, ...]
    exit: int
    stdout: tuple[str, ...] = ()  # each must be in stdout
    stderr: tuple[str, ...] = ()  # each must be in stderr
    said_as: str = ""  # the command every stderr message line must be named by
    env: dict = field(default_factory=dict)
    tools: bool = False  # runs nvcc, ptxas -v, the emulator or the demo: seconds, not ms

    def __str__(self) -> str:
        return " ".join(self.args)


def row(
    *args: str, exit: int, out=(), err=(), said_as: str = "", env=None, tools: bool = False
) -> Row:
    return Row(tuple(args), exit, tuple(out), tuple(err), said_as, env or {}, tools)


def _required_positionals() -> dict[str, list[str]]:
    """A file for each required positional of each command, so that an unknown option is
    the only mistake on the line."""
    parser = build_parser()[0]
    (subparsers,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {
        name: ["vec_add.ptx" for a in sub._actions if not a.option_strings and a.nargs in
               (None, "+")]
        for name, sub in subparsers.choices.items()
    }  # fmt: skip


FILE_OF = _required_positionals()
NO_LLM = {"OPENAI_API_KEY": "", "OPENAI_BASE_URL": "", "PTXLS_MODEL": ""}
ARCH_LIST = "it accepts: sm_75, sm_80"

GOOD = [
    row("check", "vec_add.ptx", exit=0),
    row("check", "--format", "json", "vec_add.ptx", exit=0, out=('"problems": []',)),
    row("check", "vec_add.cu", exit=0, tools=True),
    row("usage", "vec_add.ptx", exit=0, out=("registers",)),
    row("usage", "--format", "markdown", "vec_add.ptx", exit=0, out=("**kernel `vec_add`**",)),
    row(
        "sass",
        "vec_add.cu",
        exit=0,
        out=("vec_add(const float*, const float*, float*, int)",),
        tools=True,
    ),  # fmt: skip
    row("sass", "--format", "json", "vec_add.ptx", exit=0, out=('"name": "vec_add"',), tools=True),
    row("test", "vec_add.ptx", "--device", "gpu", exit=NO_GPU, out=("vec_add",), tools=True),
    row(
        "test",
        "vec_add.ptx",
        "--device",
        "cpu",
        "--sizes",
        "1",
        "100",
        exit=5,
        out=("not GPU-verified",),
        tools=True,
    ),  # fmt: skip
    row(
        "lower",
        "vec_add.cu",
        "--kernel",
        "vec_add",
        "--backend",
        "nvcc",
        "-o",
        "out.ptx",
        exit=0,
        out=("out.ptx",),
        tools=True,
    ),  # fmt: skip
    row("doctor", exit=0, out=("ptxas",)),
    row("doctor", "--format", "json", exit=0, out=('"ptxas"',)),
    row(
        "demo",
        "--no-gpu",
        "--no-lowering",
        "--examples",
        str(EXAMPLES),
        exit=0,
        out=("all steps behaved as expected",),
        tools=True,
    ),  # fmt: skip
    row(
        "demo",
        "--no-gpu",
        "--no-lowering",
        "--examples",
        str(EXAMPLES),
        "--format",
        "json",
        exit=0,
        out=('"ok": true',),
        tools=True,
    ),  # fmt: skip
    row("eval", "--list", exit=0, out=("tasks",)),
    *[row(c, "--help", exit=0, out=(f"usage: ptxls {c}",)) for c in COMMANDS],
]
if not HAS_GPU:  # with a GPU it would time the whole library
    GOOD.append(row("bench", "vec_add", exit=3, err=("no GPU",), said_as="bench", tools=True))

BAD = [
    row("check", "--format", "json", "broken.ptx", exit=1, out=('"severity": "error"',)),
    row("usage", "--format", "json", "broken.ptx", exit=1, out=('"exit_code": 1',)),
    # the user's code is wrong: 1, printed like check (the cascade folded, the fix noted)
    row(
        "check",
        "broken.ptx",
        exit=1,
        out=("broken.ptx:28:21: error: Unknown symbol '%r6'", "note: fix: Declare %r<7>"),
    ),  # fmt: skip
    row(
        "usage",
        "broken.ptx",
        exit=1,
        out=("broken.ptx:28:21: error: Unknown symbol '%r6'", "note: fix: Declare %r<7>"),
        err=("no usage for broken.ptx",),
        said_as="usage",
    ),  # fmt: skip
    row(
        "sass",
        "broken.ptx",
        exit=1,
        out=("broken.ptx:28:21: error: Unknown symbol '%r6'", "note: fix: Declare %r<7>"),
        err=("no SASS for broken.ptx",),
        said_as="sass",
    ),  # fmt: skip
    row(
        "lower",
        "bad.cu",
        "--kernel",
        "bad",
        "--backend",
        "nvcc",
        "-o",
        "bad.ptx",
        exit=1,
        out=('bad.cu:1:53: error: identifier "y" is undefined',),
        err=("no PTX written: nvcc found errors in bad.cu",),
        said_as="lower",
        tools=True,
    ),  # fmt: skip
    # cannot run: 2, said by the command
    *[
        row(c, f, exit=2, err=(f"ptxls {c}: no such file: {f}",), said_as=c)
        for c, f in (
            ("check", "nope.ptx"),
            ("usage", "nope.ptx"),
            ("sass", "nope.ptx"),
            ("test", "nope.ptx"),
            ("lower", "nope.cu"),
        )
    ],  # fmt: skip
    row("check", "README.md", exit=2, err=("README.md: not a PTX or CUDA file",), said_as="check"),
    row("usage", "vec_add.cu", exit=2, err=("not a PTX file",), said_as="usage"),
    row("sass", "README.md", exit=2, err=("not a PTX, CUDA or Triton file",), said_as="sass"),
    row(
        "sass",
        "vec_add.ptx",
        "--kernel",
        "nope",
        exit=2,
        err=("has: vec_add",),
        said_as="sass",
        tools=True,
    ),  # fmt: skip
    row("test", "vec_add.ptx", "--kernel", "nope", exit=2, err=("has: vec_add",), said_as="test"),
    row(
        "lower",
        "vec_add.cu",
        "--kernel",
        "nope",
        "--backend",
        "nvcc",
        exit=2,
        err=("no kernel 'nope'",),
        said_as="lower",
    ),  # fmt: skip
    row("test", "vec_add.ptx", "--sizes", "x", exit=2, err=("--sizes",), said_as="test"),
    row(
        "lower",
        "vec_add.cu",
        "--kernel",
        "vec_add",
        exit=2,
        env=NO_LLM,
        err=("no LLM endpoint is configured", "--backend nvcc"),
        said_as="lower",
    ),  # fmt: skip
    row(
        "bench",
        "nope",
        exit=2,
        err=("no library kernel or .ptx file named 'nope'",),
        said_as="bench",
    ),  # fmt: skip
    row("doctor", "--ptxas", "/nonexistent/ptxas", exit=2, out=("NOT FOUND",)),
    row(
        "demo", "--examples", "/nonexistent", exit=2, err=("no examples/ folder",), said_as="demo"
    ),  # fmt: skip
    # --arch: one ptxas accepts, else 2 with the list
    *[
        row(c, *a, "--arch", "banana", exit=2, err=(f"usage: ptxls {c}", ARCH_LIST))
        for c, a in (
            ("check", ["vec_add.ptx"]),
            ("usage", ["vec_add.ptx"]),
            ("sass", ["vec_add.ptx"]),
            ("test", ["vec_add.ptx"]),
            ("lower", ["vec_add.cu", "--backend", "nvcc"]),
            ("bench", ["vec_add"]),
        )
    ],
    row("check", "vec_add.ptx", "--arch", "80", exit=2, err=("did you mean sm_80?", ARCH_LIST)),
    row("usage", "vec_add.ptx", "--arch", "sm_9O", exit=2, err=("did you mean sm_90?",)),
    # a typo: the subcommand's usage and the closest spelling
    row(
        "check",
        "--fromat",
        "json",
        "vec_add.ptx",
        exit=2,
        err=(
            "usage: ptxls check",
            "ptxls check: unrecognized arguments: --fromat",
            "did you mean --format?",
        ),
    ),  # fmt: skip
    row(
        "lower",
        "--kernal",
        "vec_add",
        "vec_add.cu",
        exit=2,
        err=("usage: ptxls lower", "did you mean --kernel?"),
    ),  # fmt: skip
    row("chek", "vec_add.ptx", exit=2, err=("usage: ptxls [-h]", "did you mean 'check'?")),
    row("check", "--format", "yaml", "vec_add.ptx", exit=2, err=("usage: ptxls check",)),
    *[
        row(
            c,
            *FILE_OF.get(c, ()),
            "--no-such-option",
            exit=2,
            err=(f"usage: ptxls {c}", f"ptxls {c}: unrecognized arguments: --no-such-option"),
        )
        for c in COMMANDS
    ],  # fmt: skip
]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    here = tmp_path_factory.mktemp("cli")
    for name in ("vec_add.ptx", "vec_add.cu", "broken.ptx"):
        shutil.copy(EXAMPLES / name, here / name)
    shutil.copy(ROOT / "README.md", here / "README.md")
    (here / "bad.cu").write_text("__global__ void bad(float* x) { x[0] = y; }\n")
    return here


def _check(case: Row, r: subprocess.CompletedProcess) -> None:
    said = f"exit {r.returncode}\n--- stdout\n{r.stdout[-3000:]}\n--- stderr\n{r.stderr[-3000:]}"
    assert r.returncode == case.exit, said
    for text in case.stdout:
        assert text in r.stdout, said
    for text in case.stderr:
        assert text in r.stderr, said
    if case.said_as:  # every message line names the command the same way
        lines = [ln for ln in r.stderr.splitlines() if ln.strip() and not ln.startswith(" ")]
        assert lines and all(ln.startswith(f"ptxls {case.said_as}: ") for ln in lines), said
    if "--format" in case.args and "json" in case.args and r.stdout.strip():
        json.loads(r.stdout)  # the whole of stdout is the document, on failure too


# The table runs through ptxls.cli.main.main(argv) in this process (tests/cli_helpers.py):
# the grammar is the parser's, the runners' and the exit-code table's, not the interpreter's.
# Rows that run the tools are split off so that `make test-fast` keeps the quick ones
# (tests/conftest.py's SLOW names the other test).
QUICK = [c for c in GOOD + BAD if not c.tools]
TOOLS = [c for c in GOOD + BAD if c.tools]


@pytest.mark.parametrize("case", QUICK, ids=str)
def test_every_command_on_good_and_bad_input(case: Row, workdir: Path):
    _check(case, run_cli(*case.args, cwd=workdir, env=case.env))


@pytest.mark.parametrize("case", TOOLS, ids=str)
def test_every_command_on_input_that_runs_the_tools(case: Row, workdir: Path):
    _check(case, run_cli(*case.args, cwd=workdir, env=case.env))


# The console script end to end, one row of each kind: a clean run, the user's error, cannot
# run (with the environment reaching the child), a usage error, JSON on stdout.
END_TO_END = ["check vec_add.ptx", "check broken.ptx", "lower vec_add.cu --kernel vec_add",
              "chek vec_add.ptx", "check --format json broken.ptx", "doctor --format json"]  # fmt: skip


@pytest.mark.parametrize("case", [c for c in GOOD + BAD if str(c) in END_TO_END], ids=str)
def test_the_console_script_on_good_and_bad_input(case: Row, workdir: Path):
    script = Path(sys.executable).with_name("ptxls")  # the entry point pip installed
    r = subprocess.run(
        [str(script), *case.args],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **case.env},
    )
    _check(case, r)


def test_every_end_to_end_row_is_in_the_table():
    assert len({str(c) for c in GOOD + BAD} & set(END_TO_END)) == len(END_TO_END)


def test_the_exit_code_table_is_in_the_help():
    r = subprocess.run(
        [sys.executable, "-m", "ptxls.cli", "--help"], capture_output=True, text=True, timeout=60
    )
    for code in ("0  ok", "1  the code is wrong", "2  cannot run", "3  no GPU", "4  compile-only",
                 "5  passed on the CPU emulator only"):  # fmt: skip
        assert code in r.stdout, r.stdout
