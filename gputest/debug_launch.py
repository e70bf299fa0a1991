""" "Debug first wrong element": the debugger's launch configuration for a failed case, and the
small record of the last failed test that a debugging run starts from by default.

A failed case names its first wrong element (an output's ``first_wrong`` indices). The debugger
(``ptxls debug-adapter``, debugger/README.md) launched with that case's ``n`` and ``seed`` makes
the same inputs, and with ``watch`` on the element it follows the thread that writes it and
stops after that store. The configuration is plain data: the CLI prints it, the editor's hover
offers it as a command link (the VS Code extension hands it to ``vscode.debug.startDebugging``).

The record (``.ptxls/debug/last-failed.json`` in the program's project) is data only, never code:
read back, every field is checked for its type and range, and it is used only for the same file
with the same bytes (its SHA-256), so an edit or another file's record is never taken for this
one's.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
from pathlib import Path

from .report import TestReport

DEBUG_TYPE = "ptxls"
COMMAND = "ptxls.debugFirstWrong"  # the VS Code extension's command: startDebugging(config)
RECORD = Path(".ptxls") / "debug" / "last-failed.json"
RECORD_FORMAT = 1
_MAX_RECORD_BYTES = 64 * 1024
_PROJECT_MARKERS = (".git", ".hg", ".vscode", "pyproject.toml", ".ptxls")
_ELEMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,200}\[[0-9]{1,12}\]$")


def first_wrong_element(report: TestReport) -> tuple[int, str | None]:
    """(index of the failed case, "c[4097]") — the element is None when the case failed
    without a wrong element (a finding, a changed input); (-1, None) when nothing failed."""
    bad = report.failing_case
    if bad is None:
        return -1, None
    for out in bad.outputs:
        wrong = out.get("first_wrong") or []
        if wrong and isinstance(out.get("name"), str):
            return bad.index, f"{out['name']}[{int(wrong[0][0])}]"
    return bad.index, None


def launch_config(report: TestReport, program: str, kernel: str | None = None,
                  spec: str | None = None) -> dict | None:  # fmt: skip
    """The ``ptxls`` launch configuration that debugs the failed case of ``report`` at its
    first wrong element (the writing thread is found by the debugger), or None when no case
    failed. A case that failed without a wrong element launches on that case (the debugger
    stops on the emulator's findings)."""
    bad = report.failing_case
    if bad is None or bad.n <= 0:
        return None
    _, element = first_wrong_element(report)
    name = kernel or report.kernel
    what = f"at {element}" if element else "on the failed case"
    config: dict = {
        "type": DEBUG_TYPE,
        "request": "launch",
        "name": f"Debug {name} {what} (n={bad.n}, seed {bad.seed})",
        "program": str(Path(program).resolve()),
        "kernel": name,
        "n": int(bad.n),
        "seed": int(bad.seed),
    }
    if element:
        config["watch"] = element
    if spec:
        config["spec"] = str(Path(spec).resolve())
    return config


def command_line(config: dict) -> str:
    """The configuration as one JSON line (a launch.json entry, an nvim-dap configuration)."""
    return json.dumps(config, separators=(", ", ": "))


def report_text(config: dict | None) -> str:
    """The lines a test report adds under a failed case: what "Debug first wrong element"
    launches, for an editor's launch.json or nvim-dap (``ptxls debug-adapter``)."""
    if config is None:
        return ""
    what = config.get("watch") or "the failed case"
    return (f"Debug first wrong element ({what}) on the CPU emulator: this launch "
            "configuration of `ptxls debug-adapter` (VS Code launch.json, nvim-dap) starts at "
            f"the thread that writes it:\n{command_line(config)}")  # fmt: skip


def command_uri(config: dict) -> str:
    """A markdown command link's target: the editor runs COMMAND with the configuration."""
    from urllib.parse import quote

    return f"command:{COMMAND}?" + quote(json.dumps([config], separators=(",", ":")), safe="")


def hover_markdown(config: dict | None, links: bool) -> str:
    """The hover's line: a command link for an editor that runs COMMAND, else the values."""
    if config is None:
        return ""
    what = config.get("watch") or "the failed case"
    label = "Debug first wrong element" if config.get("watch") else "Debug the failed case"
    if links:
        shown = what.replace("[", "\\[").replace("]", "\\]")
        return (f"[▶ {label} ({shown})]({command_uri(config)} "
                f'"Step this case on the CPU emulator from the thread that writes {what}")')  # fmt: skip
    fields = ", ".join(f"{k}: {json.dumps(config[k])}" for k in ("kernel", "n", "seed", "watch")
                       if k in config)  # fmt: skip
    return f"{label}: launch `ptxls debug-adapter` with {{{fields}}}"


# -- the record of the last failed test -------------------------------------------------------


def project_root(program: str | Path) -> Path:
    """The folder above ``program`` that marks a project (.git, .vscode, pyproject.toml,
    .ptxls …), else the program's own folder; never the home folder or the filesystem's root."""
    here = Path(program).resolve().parent
    home = Path.home().resolve()
    for folder in [here, *here.parents]:
        if folder == home or folder == folder.parent:
            break
        if any((folder / m).exists() for m in _PROJECT_MARKERS):
            return folder
    return here


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def record_failed_test(report: TestReport, program: str, kernel: str | None = None) -> Path | None:
    """Leave the failed case of ``report`` (if any) as the project's last failed test.
    Best effort: returns the file written, or None (nothing failed, or it could not be
    written: a read-only folder, a symbolic link in the way)."""
    config = launch_config(report, program, kernel)
    if config is None:
        return None
    path = Path(config["program"])
    try:
        record = {"format": RECORD_FORMAT, "program": str(path), "sha256": _sha256(path),
                  "kernel": config["kernel"], "n": config["n"], "seed": config["seed"],
                  "watch": config.get("watch")}  # fmt: skip
        return _write_private(project_root(path), json.dumps(record, indent=1) + "\n")
    except (OSError, ValueError):
        return None


def _write_private(root: Path, text: str) -> Path | None:
    """``root/.ptxls/debug/last-failed.json`` atomically, never through a symbolic link."""
    folder = root
    for part in RECORD.parent.parts:
        folder = folder / part
        if folder.is_symlink():
            return None
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=0o755)
    target = folder / RECORD.name
    if target.is_symlink():
        return None
    tmp = folder / f".{RECORD.name}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return target


def last_failed_test(program: str | Path) -> tuple[dict | None, str]:
    """The project's last failed test if it is one of ``program`` as it is now: ({kernel, n,
    seed, watch}, "") — else (None, why not, "" when there is no record at all)."""
    path = Path(program).resolve()
    target = project_root(path) / RECORD
    try:
        if target.is_symlink() or not target.is_file():
            return None, ""
        if target.stat().st_size > _MAX_RECORD_BYTES:
            return None, f"{RECORD} is larger than a record"
        raw = json.loads(target.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        return None, f"{RECORD} is unreadable ({type(e).__name__})"
    if not isinstance(raw, dict) or raw.get("format") != RECORD_FORMAT:
        return None, f"{RECORD} is not a record of this ptxls"
    if raw.get("program") != str(path):
        return None, ""  # another file's failed test
    try:
        same = raw.get("sha256") == _sha256(path)
    except OSError:
        same = False
    if not same:
        return None, "the last failed test ran on another version of this file"
    kernel, n, seed, watch = (raw.get(k) for k in ("kernel", "n", "seed", "watch"))
    if not (isinstance(kernel, str) and 0 < len(kernel) <= 4096):
        return None, f"{RECORD}: no kernel name"
    if not (isinstance(n, int) and not isinstance(n, bool) and 0 < n <= 1 << 40):
        return None, f"{RECORD}: n out of range"
    if not (isinstance(seed, int) and not isinstance(seed, bool) and 0 <= seed < 1 << 63):
        return None, f"{RECORD}: seed out of range"
    if watch is not None and not (isinstance(watch, str) and _ELEMENT.match(watch)):
        return None, f"{RECORD}: the element is not of the form name[index]"
    return {"kernel": kernel, "n": n, "seed": seed, "watch": watch}, ""
