"""Finding NVIDIA's compute-sanitizer and building its command line.

Search order: an explicit path (``ptxls test --sanitizer PATH``) → ``PTXLS_COMPUTE_SANITIZER``
(also how the editor's server is pointed at one) → PATH → the CUDA toolkit's usual homes (``$CUDA_HOME/bin``,
``/usr/local/cuda/bin``, ``/usr/local/cuda/compute-sanitizer``) → the binary inside the
``nvidia-cuda-sanitizer-api`` wheel (``pip install 'ptxls[sanitizer]'``). A toolkit's own copy
comes before the wheel's: it was installed with the driver it has to talk to.

compute-sanitizer runs the program it checks as its child, so whoever runs it must start it as
the leader of its own process group and kill the whole group on a timeout (the GPU worker it
wraps would otherwise outlive it, maybe still spinning in a kernel). ``gputest/sanitize.py`` does
that through the GPU worker's supervisor; ``run_sanitizer`` here does it through
``toolchain/process.py`` for a one-shot program.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from .discovery import ToolNotFound, wheel_bin_dirs
from .process import ProcessResult, run_capped, run_killable

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
DEFAULT_TOOLS = ("memcheck", "racecheck")
ENV_VAR = "PTXLS_COMPUTE_SANITIZER"
NAME = "compute-sanitizer"
# Records printed per run: a racy kernel reports one hazard per byte and thread pair; the first
# hundred say where the race is, the summary says how many there were.
PRINT_LIMIT = 100
LOG_BYTES = 4 << 20  # the most of a log that is read back


@dataclass(frozen=True)
class Sanitizer:
    path: str
    origin: str  # "given", ENV_VAR, "PATH", "CUDA toolkit", "nvidia-cuda-sanitizer-api wheel"
    version: str  # "2025.3.1" ("" when it could not be read)

    def describe(self) -> str:
        return f"compute-sanitizer {self.version or '?'} ({self.origin}: {self.path})"


def _toolkit_dirs() -> list[Path]:
    homes = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    dirs: list[Path] = []
    for home in filter(None, homes):
        dirs += [Path(home) / "bin", Path(home) / "compute-sanitizer"]
    return dirs


def _wheel_paths() -> list[Path]:
    """The wheel ships bin/compute-sanitizer (a launcher) and compute-sanitizer/ (the tool)."""
    paths = []
    for d in wheel_bin_dirs():
        paths += [d / NAME, d.parent / "compute-sanitizer" / NAME]
    return paths


def candidates(explicit: str | None = None) -> list[tuple[str, str]]:
    """(path, origin) in search order; existing executables only, no duplicates."""
    found: list[tuple[str, str]] = []
    if explicit:
        found.append((explicit, "given"))
    if os.environ.get(ENV_VAR):
        found.append((os.environ[ENV_VAR], ENV_VAR))
    if on_path := shutil.which(NAME):
        found.append((on_path, "PATH"))
    found += [(str(d / NAME), "CUDA toolkit") for d in _toolkit_dirs()]
    found += [(str(p), "nvidia-cuda-sanitizer-api wheel") for p in _wheel_paths()]
    seen: set[str] = set()
    result = []
    for path, origin in found:
        real = os.path.realpath(path)
        if real in seen or not _usable(path):
            continue
        seen.add(real)
        result.append((path, origin))
    return result


def _usable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


@functools.lru_cache(maxsize=8)
def _version_of(path: str) -> str:
    try:
        res = run_capped([path, "--version"], timeout=15, cap=64 << 10)
    except OSError:
        return ""
    m = re.search(r"Version\s+(\d+(?:\.\d+)+)", res.stdout)
    return m.group(1) if m else ""


NOT_FOUND = (
    "compute-sanitizer not found. Install the wheel that ships it "
    "(pip install 'ptxls[sanitizer]', i.e. nvidia-cuda-sanitizer-api), put a CUDA toolkit's bin/ "
    f"on PATH, or set {ENV_VAR} to the binary."
)


def find_sanitizer(explicit: str | None = None) -> Sanitizer:
    """The first usable compute-sanitizer. A configured path that is missing is an error, not
    something to skip silently: the person asked for that binary. Probes the version (a process
    start): call it from a worker thread, never the event loop."""
    if explicit and not _usable(explicit):
        raise ToolNotFound(f"the compute-sanitizer given '{explicit}' does not exist or is "
                           "not executable. " + NOT_FOUND)  # fmt: skip
    from_env = os.environ.get(ENV_VAR)
    if not explicit and from_env and not _usable(from_env):
        raise ToolNotFound(
            f"{ENV_VAR}={from_env} does not exist or is not executable; fix or unset it"
        )
    found = candidates(explicit)
    if not found:
        raise ToolNotFound(NOT_FOUND)
    path, origin = found[0]
    return Sanitizer(path, origin, _version_of(path))


def command(
    sanitizer: Sanitizer, tool: str, log_file: str, program: list[str], kernel: str | None = None
) -> list[str]:
    """The command line that runs ``program`` under ``tool`` with every report in ``log_file``
    (the program's own stdout stays its own: the GPU worker speaks JSON on it)."""
    if tool not in TOOLS:
        raise ValueError(f"unknown compute-sanitizer tool '{tool}' (known: {', '.join(TOOLS)})")
    args = [
        sanitizer.path,
        "--tool", tool,
        "--log-file", log_file,
        "--print-limit", str(PRINT_LIMIT),
        "--show-backtrace", "device",  # the device frames name .func callers; host frames are noise
        "--target-processes", "application-only",
    ]  # fmt: skip
    if kernel:
        # Only the kernel under test is checked (and slowed): the nvcc reference and baseline
        # kernels the harness also launches are not the person's to fix.
        args += ["--kernel-name", f"kne={kernel}"]
    if tool == "racecheck":
        # 'all': the analysis records (the two racing lines) and the hazard records (the shared
        # address and the two threads) the repair prompt quotes.
        args += ["--racecheck-report", "all"]
    return args + program


def read_log(path: str) -> str:
    """The log compute-sanitizer wrote, capped; '' when there is none."""
    try:
        with open(path, "rb") as f:
            data = f.read(LOG_BYTES + 1)
    except OSError:
        return ""
    text = data[:LOG_BYTES].decode("utf-8", errors="replace")
    if len(data) > LOG_BYTES:
        text += f"\n[ptxls: log cut at {LOG_BYTES} bytes]"
    return text


async def run_sanitizer(
    sanitizer: Sanitizer,
    tool: str,
    program: list[str],
    log_file: str,
    *,
    timeout: float,
    kernel: str | None = None,
    env: dict[str, str] | None = None,
) -> tuple[ProcessResult, str]:
    """Run a one-shot ``program`` under ``tool`` as a killable process group. Returns the process
    result and the log text. Raises OSError only when the binary cannot be started."""
    res = await run_killable(
        command(sanitizer, tool, log_file, program, kernel), timeout=timeout, env=env
    )
    return res, read_log(log_file)
