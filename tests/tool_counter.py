"""Counting the toolchain runs and PTX reads of real work, for tests and benchmarks.

``ToolCounter`` puts a tiny shell wrapper in front of the real ptxas (and nvcc): each run appends
its arguments to a log, then ``exec``s the real binary, so what is counted is what the operating
system ran — not a mock. ``PTXLS_PTXAS`` / ``PTXLS_NVCC`` point discovery at the wrappers.
``ReaderCounter`` wraps the PTX readers (the full parse, the header scans, the entry scans) in
every loaded ``ptxls`` module, so a call through any import path is counted.

Both write into one ordered ``marks`` stream, so counts can be split per loop round.
"""

from __future__ import annotations

import functools
import os
import shlex
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

# Functions that read a PTX text from the start (a parse or a scan of the whole candidate).
READER_NAMES = (
    "parse_ptx",  # the full reader (entries, params, registers, labels, directives)
    "scan_header",  # .version / .target
    "find_entries",  # the GPU test's entry scan
    "ptx_version",
    "ptx_target",
    "module_globals",
)


@dataclass
class ToolRun:
    tool: str  # "ptxas" or "nvcc"
    args: list[str]

    @property
    def is_probe(self) -> bool:
        """--version / --help, or discovery's ISA probe (a one-line probe.ptx)."""
        return any(a in ("--version", "--help", "-V") for a in self.args) or any(
            a.endswith("/probe.ptx") for a in self.args
        )

    @property
    def is_compile(self) -> bool:
        return not self.is_probe

    @property
    def verbose(self) -> bool:
        return "-v" in self.args or "--verbose" in self.args

    @property
    def writes_cubin(self) -> bool:
        return any(a.endswith(".cubin") for a in self.args)

    def kind(self) -> str:
        parts = [self.tool]
        if self.verbose:
            parts.append("-v")
        parts.append("cubin" if self.writes_cubin else "check")
        return " ".join(parts)


def _wrapper(log: Path, tool: str, real: str) -> str:
    return (
        "#!/bin/sh\n"
        f'printf "%s" {shlex.quote(tool)} >> {shlex.quote(str(log))}\n'
        f'for a in "$@"; do printf "\\t%s" "$a" >> {shlex.quote(str(log))}; done\n'
        f"printf '\\n' >> {shlex.quote(str(log))}\n"
        f'exec {shlex.quote(real)} "$@"\n'
    )


class ToolCounter:
    """Wrappers for ptxas and nvcc that log each run. Use as a context manager: it sets the
    PTXLS_PTXAS / PTXLS_NVCC variables and restores them on exit."""

    def __init__(self, needs_isa: tuple[int, int] | None = None):
        from ptxls.toolchain.discovery import ToolNotFound, find_nvcc, find_ptxas

        self.dir = Path(tempfile.mkdtemp(prefix="ptxls-count-"))
        self.log = self.dir / "runs.log"
        self.log.write_text("")
        self.real: dict[str, str] = {}
        self._saved: dict[str, str | None] = {}
        for name, find in (("ptxas", lambda: find_ptxas(needs_isa=needs_isa)), ("nvcc", find_nvcc)):
            try:
                self.real[name] = find().path
            except ToolNotFound:
                continue
            path = self.dir / name
            path.write_text(_wrapper(self.log, name, self.real[name]))
            path.chmod(0o755)

    def __enter__(self) -> ToolCounter:
        for name in self.real:
            var = f"PTXLS_{name.upper()}"
            self._saved[var] = os.environ.get(var)
            os.environ[var] = str(self.dir / name)
        return self

    def __exit__(self, *exc) -> None:
        for var, old in self._saved.items():
            if old is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = old

    def mark(self, label: str) -> None:
        with open(self.log, "a") as f:
            f.write(f"#mark\t{label}\n")

    def segments(self) -> dict[str, list[ToolRun]]:
        """Runs between marks: {label of the mark before them: runs}; "" before the first."""
        out: dict[str, list[ToolRun]] = {"": []}
        current = ""
        for line in self.log.read_text().splitlines():
            parts = line.split("\t")
            if parts[0] == "#mark":
                current = parts[1]
                out.setdefault(current, [])
            elif parts[0]:
                out.setdefault(current, []).append(ToolRun(parts[0], parts[1:]))
        return out

    def runs(self) -> list[ToolRun]:
        return [r for seg in self.segments().values() for r in seg]


@dataclass
class ReaderCounter:
    """Counts calls of the PTX readers named in READER_NAMES, wherever they are imported."""

    names: tuple[str, ...] = READER_NAMES
    events: list[tuple[str, str]] = field(default_factory=list)  # ("call"|"mark", name)
    _undo: list[tuple[object, str, object]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __enter__(self) -> ReaderCounter:
        wrapped: dict[int, object] = {}
        for mod_name, mod in list(sys.modules.items()):
            if not mod_name.startswith("ptxls.") or mod is None:
                continue
            for attr in self.names:
                fn = getattr(mod, attr, None)
                if not callable(fn) or not getattr(fn, "__module__", "").startswith("ptxls."):
                    continue
                fn = getattr(fn, "__wrapped_reader__", fn)
                if id(fn) not in wrapped:
                    wrapped[id(fn)] = self._wrap(fn)
                self._undo.append((mod, attr, getattr(mod, attr)))
                setattr(mod, attr, wrapped[id(fn)])
        return self

    def __exit__(self, *exc) -> None:
        for mod, attr, old in reversed(self._undo):
            setattr(mod, attr, old)
        self._undo.clear()

    def _wrap(self, fn):
        label = f"{fn.__module__.removeprefix('ptxls.')}.{fn.__qualname__}"

        @functools.wraps(fn)
        def counted(*a, **kw):
            with self._lock:
                self.events.append(("call", label))
            return fn(*a, **kw)

        counted.__wrapped_reader__ = fn
        return counted

    def mark(self, label: str) -> None:
        with self._lock:
            self.events.append(("mark", label))

    def segments(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {"": {}}
        current = ""
        for kind, name in self.events:
            if kind == "mark":
                current = name
                out.setdefault(current, {})
            else:
                seg = out.setdefault(current, {})
                seg[name] = seg.get(name, 0) + 1
        return out
