"""The CLI called in this process (``ptxls.cli.main.main(argv)``), for tests about what a command
prints and its exit code: the same parser, runners, scrubbed streams and exit-code table as
``ptxls ...`` without an interpreter start (about half a second each).

What it does not cover is the process boundary itself — the console script, ``python -m``,
the interpreter's exit status and what is printed at exit; each command keeps a few tests that
run the real ``ptxls`` for that (tests/test_cli.py, tests/test_cli_grammar.py)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

from ptxls.cli.main import main


def _stream() -> io.TextIOWrapper:
    # a text stream with a .buffer, like a pipe's (not a terminal), read back after the run
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="replace", write_through=True)


@contextlib.contextmanager
def _environment(cwd: Path | None, env: Mapping[str, str | None]) -> Iterator[None]:
    before_cwd, before_env = os.getcwd(), {k: os.environ.get(k) for k in env}
    for k, v in env.items():  # None: not set for this run
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    try:
        if cwd is not None:
            os.chdir(cwd)
        yield
    finally:
        os.chdir(before_cwd)
        for k, v in before_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_cli(
    *args: str, cwd: Path | None = None, env: Mapping[str, str | None] | None = None
) -> subprocess.CompletedProcess[str]:
    """``ptxls ARGS`` in this process: its exit code (argparse's SystemExit too), stdout and
    stderr, as ``subprocess.run(..., capture_output=True, text=True)`` gives them. ``env`` adds
    to this process's environment for the run (a None value unsets the variable)."""
    out, err = _stream(), _stream()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        with _environment(cwd, env or {}):
            try:
                code = main(list(args))
            except SystemExit as e:  # argparse: --help (0), a usage error (2)
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.stdout, sys.stderr = saved
    texts = []
    for s in (out, err):
        s.flush()
        texts.append(s.buffer.getvalue().decode("utf-8", "replace"))  # type: ignore[attr-defined]
    return subprocess.CompletedProcess(["ptxls", *args], code, texts[0], texts[1])
