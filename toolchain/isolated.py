"""How ptxls starts a Python process of its own: isolated from the folder it was started in.

``python -m ptxls.gputest.worker`` puts the current directory first on ``sys.path``, so a cloned
repository holding ``ptxls/__init__.py``, ``numpy.py``, ``numpy/`` or ``cuda/`` would have its own
code imported in place of the installed packages, and a ``sitecustomize.py`` or
``usercustomize.py`` on ``PYTHONPATH`` or in the user site would run at start-up. Every Python
child of ptxls (the GPU worker, the same under compute-sanitizer, the Triton compile, the GPU
probe, doctor's Triton version) is therefore started as::

    python -I -u -c BOOT '["/abs/dir", ...]' ptxls.some.module ARGS...

in a private working directory (``private_cwd()``, mode 0700, empty). ``-I`` (isolated mode,
every Python ptxls supports, 3.4+ and so also an older ``PTXLS_GPU_PYTHON``) leaves the script's
and the current directory off ``sys.path``, ignores every ``PYTHON*`` variable and skips the
user site. ``PYTHONPATH`` is still how the GPU machine's carried wheels and a tree linked as
``ptxls/`` are found (``scripts/device-env.sh``), so the parent passes the entries it vetted —
absolute paths of existing folders from its own ``PYTHONPATH``, never '' or a relative entry
(those mean "the current directory") — as BOOT's first argument; BOOT puts them first on
``sys.path`` and runs the module as ``-m`` would. ``-u`` replaces ``PYTHONUNBUFFERED``, which
``-I`` ignores.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import sys
import tempfile
import threading

# Runs in the child, before anything else is imported: the vetted folders first on sys.path,
# then the module as __main__ (what `python -m` does, minus the current directory).
BOOT = (
    "import sys, json, runpy; "
    "sys.path[:0] = json.loads(sys.argv.pop(1)); "
    "module = sys.argv.pop(1); sys.argv[0] = module; "
    "runpy.run_module(module, run_name='__main__', alter_sys=True)"
)

_cwd_lock = threading.Lock()
_cwd: str | None = None


def vetted_path(environ: dict[str, str] | None = None) -> list[str]:
    """The parent's ``PYTHONPATH`` entries a child may import from: absolute, existing folders.
    An empty or relative entry means the working directory, which is exactly what is kept out."""
    env = os.environ if environ is None else environ
    out: list[str] = []
    for entry in (env.get("PYTHONPATH") or "").split(os.pathsep):
        if entry and os.path.isabs(entry) and os.path.isdir(entry) and entry not in out:
            out.append(entry)
    return out


def python_command(
    module: str, *args: str, python: str | None = None, environ: dict[str, str] | None = None
) -> list[str]:
    """The command line that runs ``module`` (a ``ptxls.*`` module with a ``__main__`` block)
    under ``python`` (default: this interpreter), isolated as the module docstring says."""
    return [
        python or sys.executable,
        "-I",
        "-u",
        "-c",
        BOOT,
        json.dumps(vetted_path(environ)),
        module,
        *args,
    ]


def python_code_command(code: str, python: str | None = None) -> list[str]:
    """``python -I -c CODE``: a one-line probe (no ptxls import) run isolated."""
    return [python or sys.executable, "-I", "-c", code]


def private_cwd() -> str:
    """An empty folder only this user can enter, made once per process and removed at exit:
    the working directory of every Python child, so nothing it resolves relative to its working
    directory (``sys.path``'s '' in an interpreter that would add it, a relative file name) can
    land in a user's folder."""
    global _cwd
    with _cwd_lock:
        if _cwd is None or not os.path.isdir(_cwd):
            _cwd = tempfile.mkdtemp(prefix="ptxls-cwd-")
            atexit.register(shutil.rmtree, _cwd, True)
        return _cwd
