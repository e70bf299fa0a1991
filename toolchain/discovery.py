"""Finding the CUDA tools ptxls runs: ptxas and nvcc.

Search order (the same for both): an explicit path (setting or --ptxas flag) → the environment
variable (PTXLS_PTXAS / PTXLS_NVCC) → PATH → the binary inside the ``nvidia-cuda-nvcc`` wheel, so
a plain ``pip install ptxls`` is enough for diagnostics with no CUDA toolkit on the machine.

Which binary ran, and its version, matters to the user (a CUDA 13.0 ptxas refuses the ``.version
9.5`` PTX the 13.5 wheel writes), so every tool carries where it came from and its version, and
callers can ask for the first candidate that accepts a given PTX ISA version.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import sysconfig
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from .process import ProcessResult, run_capped


class ToolNotFound(Exception):
    """Raised when no usable binary exists; the message says how to fix it."""


@dataclass(frozen=True)
class Tool:
    name: str  # "ptxas" or "nvcc"
    path: str
    origin: str  # "setting", "PTXLS_PTXAS", "PATH", "nvidia-cuda-nvcc wheel"
    version: str  # "13.5" ("" when it could not be read)
    max_ptx_isa: tuple[int, int] | None = None  # highest .version it accepts (ptxas only)

    def describe(self) -> str:
        isa = (
            f", PTX ISA <= {self.max_ptx_isa[0]}.{self.max_ptx_isa[1]}" if self.max_ptx_isa else ""
        )
        return f"{self.name} {self.version or '?'} ({self.origin}: {self.path}{isa})"


def wheel_bin_dirs() -> list[Path]:
    """bin/ folders of the nvidia-cuda-nvcc wheel in this interpreter's site-packages."""
    dirs: list[Path] = []
    roots = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    roots.update(p for p in sys.path if p.endswith("site-packages"))
    for root in sorted(roots):
        base = Path(root) / "nvidia"
        for sub in ("cu13", "cuda_nvcc", "cu12"):
            candidate = base / sub / "bin"
            if candidate.is_dir():
                dirs.append(candidate)
    return dirs


def _candidates(name: str, explicit: str | None) -> list[tuple[str, str]]:
    """(path, origin) pairs in search order, existing executables only, no duplicates."""
    env_var = f"PTXLS_{name.upper()}"
    found: list[tuple[str, str]] = []
    if explicit:
        found.append((explicit, "setting"))
    if os.environ.get(env_var):
        found.append((os.environ[env_var], env_var))
    on_path = shutil.which(name)
    if on_path:
        found.append((on_path, "PATH"))
    for d in wheel_bin_dirs():
        found.append((str(d / name), "nvidia-cuda-nvcc wheel"))
    seen: set[str] = set()
    result = []
    for path, origin in found:
        real = os.path.realpath(path)
        if real in seen:
            continue
        seen.add(real)
        result.append((path, origin))
    return result


# Seconds a version probe may take. A tool that hangs on --version is killed with its whole
# process group after this (and the empty answer is cached: it is not asked again). Callers
# probe from a worker thread, never on the event loop; the server sets this from
# ptxls.ptxasTimeoutSeconds (capped: a probe is not a build).
PROBE_TIMEOUT_S = 10.0
PROBE_OUTPUT_BYTES = 64 << 10


def set_probe_timeout(seconds: float) -> None:
    global PROBE_TIMEOUT_S
    PROBE_TIMEOUT_S = max(1.0, min(float(seconds), 30.0))


def _probe(args: list[str]) -> ProcessResult | None:
    try:
        res = run_capped(args, timeout=PROBE_TIMEOUT_S, cap=PROBE_OUTPUT_BYTES)
    except OSError:
        return None
    return None if res.timed_out else res


_Answer = TypeVar("_Answer")
_Key = tuple[str, int | None, int | None]  # path, size, modification time


def _once_per_binary(
    unknown: Any,
) -> Callable[[Callable[[str], _Answer]], Callable[[str], _Answer]]:
    """Ask each binary once, however many callers ask at the same time: a ptxas that hangs on
    the probe used to get a new probe per edit (each waiting out the timeout, 6 process groups
    for one open and four edits). Callers that arrive while the probe runs wait for its answer
    (they are worker threads, never the event loop); the answer, an empty one after a timeout
    too, is kept for that binary (path, size and modification time: a replaced file is asked
    again)."""
    return lambda probe: _OncePerBinary(probe, unknown)


class _OncePerBinary(Generic[_Answer]):
    def __init__(self, probe: Callable[[str], _Answer], unknown: _Answer) -> None:
        self.probe, self.unknown = probe, unknown
        self.answers: dict[_Key, _Answer] = {}
        self.running: dict[_Key, threading.Event] = {}
        self.lock = threading.Lock()

    def __call__(self, path: str) -> _Answer:
        answers, running, lock, probe = self.answers, self.running, self.lock, self.probe
        key: _Key
        try:
            st = os.stat(path)
            key = (path, st.st_size, st.st_mtime_ns)
        except OSError:
            key = (path, None, None)
        with lock:
            if key in answers:
                return answers[key]
            running_done = running.get(key)
            first = running_done is None
            done = running[key] = threading.Event() if running_done is None else running_done
        if not first:
            done.wait(PROBE_TIMEOUT_S * 2 + 5)
            with lock:
                return answers.get(key, self.unknown)
        answer = self.unknown
        try:
            answer = probe(path)
        finally:
            with lock:
                if len(answers) > 64:
                    answers.clear()
                answers[key] = answer
                running.pop(key, None)
            done.set()
        return answer


@_once_per_binary(unknown="")
def _version_of(path: str) -> str:
    res = _probe([path, "--version"])
    m = re.search(r"release (\d+\.\d+)", res.stdout) if res else None
    return m.group(1) if m else ""


_PROBE = ".version 99.9\n.target sm_90\n.address_size 64\n"


@_once_per_binary(unknown=None)
def _max_isa_of(path: str) -> tuple[int, int] | None:
    """Ask ptxas itself which PTX ISA it supports: it answers a too-new .version with
    "Unsupported .version 99.9; current version is '9.0'". Exact, and no table to keep up."""
    with tempfile.TemporaryDirectory(prefix="ptxls-probe-") as tmp:
        probe = Path(tmp) / "probe.ptx"
        probe.write_text(_PROBE)
        res = _probe([path, "-arch=sm_90", str(probe), "-o", os.devnull])
    if res is None:
        return None
    m = re.search(r"current version is '(\d+)\.(\d+)'", res.stderr)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _usable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _make(name: str, path: str, origin: str) -> Tool:
    return Tool(
        name=name,
        path=path,
        origin=origin,
        version=_version_of(path),
        max_ptx_isa=_max_isa_of(path) if name == "ptxas" else None,
    )


def _not_found_message(name: str, explicit: str | None) -> str:
    hint = (
        f"{name} not found. Install the wheel that ships it (pip install nvidia-cuda-nvcc), "
        f"put a CUDA toolkit's bin/ on PATH, or set PTXLS_{name.upper()} / the ptxls.{name}Path "
        "setting to the binary."
    )
    if explicit and not _usable(explicit):
        hint = f"the configured {name} '{explicit}' does not exist or is not executable. " + hint
    return hint


def all_tools(name: str, explicit: str | None = None) -> list[Tool]:
    return [_make(name, p, o) for p, o in _candidates(name, explicit) if _usable(p)]


def find_tool(
    name: str, explicit: str | None = None, *, needs_isa: tuple[int, int] | None = None
) -> Tool:
    """The first usable candidate; with ``needs_isa``, the first that accepts that PTX ISA
    version (falling back to the newest when none does, so ptxas itself reports it).

    An explicit path that is unusable is an error, not something to silently skip: the user
    asked for that binary.
    """
    if explicit and not _usable(explicit):
        raise ToolNotFound(_not_found_message(name, explicit))
    env_var = f"PTXLS_{name.upper()}"
    from_env = os.environ.get(env_var)
    if not explicit and from_env and not _usable(from_env):
        # The person asked for this binary: say it is missing rather than use another one.
        raise ToolNotFound(
            f"{env_var}={from_env} does not exist or is not executable; fix or unset it"
        )
    candidates = [(p, o) for p, o in _candidates(name, explicit) if _usable(p)]
    if not candidates:
        raise ToolNotFound(_not_found_message(name, explicit))
    if explicit or needs_isa is None:
        return _make(name, *candidates[0])
    tools: list[Tool] = []
    for p, o in candidates:  # probed one by one: the next only when this one is too old
        tool = _make(name, p, o)
        if tool.max_ptx_isa is None or tool.max_ptx_isa >= needs_isa:
            return tool
        tools.append(tool)
    # None accepts it: the newest one gives the most useful "current version is …" message.
    return max(tools, key=lambda t: t.max_ptx_isa or (0, 0))


def find_ptxas(explicit: str | None = None, *, needs_isa: tuple[int, int] | None = None) -> Tool:
    return find_tool("ptxas", explicit, needs_isa=needs_isa)


def find_nvcc(explicit: str | None = None) -> Tool:
    return find_tool("nvcc", explicit)


def cuda_include_dirs() -> list[str]:
    """Header folders nvcc/NVRTC need beyond their own (cuda_fp16.h wants <nv/target> from
    the nvidia-cuda-cccl wheel)."""
    dirs = []
    for d in wheel_bin_dirs():
        for inc in (d.parent / "include", d.parent / "include" / "cccl"):
            if inc.is_dir():
                dirs.append(str(inc))
    return dirs
