"""``ptxls check FILE...``: the diagnostics engine, printed as FILE:LINE:COL: severity: message."""

from __future__ import annotations

import dataclasses
import io
import json
import sys
from pathlib import Path

from ptxls.diagnostics.engine import (
    CudaCheckOptions,
    DocumentCheckOptions,
    PtxasUnavailable,
    PtxCheckOptions,
    check_text,
)
from ptxls.diagnostics.model import CheckResult, Severity
from ptxls.diagnostics.text_guard import decode_bytes
from ptxls.frontend.languages import CUDA, PTX, extensions, language_of
from ptxls.toolchain.arch import choose_arch

from .grammar import EXIT_CANNOT_RUN, EXIT_OK, EXIT_PROBLEMS, say
from .output_format import markdown_to_text

DEFAULT_TIMEOUT_S = 60.0  # a ptxas or nvcc run longer than this is stopped (--timeout)
FIX_ROUNDS = 4  # --fix: apply, check again, at most this many times


async def check_file(
    path: Path,
    *,
    arch: str | None,
    ptxas: str | None,
    nvcc: str | None,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> CheckResult:
    """Raises OSError (unreadable file) and PtxasUnavailable (no ptxas)."""
    text = decode_bytes(path.read_bytes())
    opts = DocumentCheckOptions(
        language="cuda" if language_of(str(path)) == CUDA else "ptx",
        ptx=PtxCheckOptions(arch=arch, ptxas_path=ptxas, file_name=path.name, timeout=timeout),
        cuda=CudaCheckOptions(arch=arch, nvcc_path=nvcc, file_path=str(path), timeout=timeout),
    )
    return await check_text(text, opts)


def _apply_fixes(path: Path, name: str, result: CheckResult) -> bool:
    """Write the result's fixes into the file (said on stderr); True when the file changed.
    A file that is not plain UTF-8 is left alone: rewriting it could change more than the fix."""
    from ptxls.diagnostics.fixes import apply_fixes

    fixes = [p.fix for p in result.problems if p.fix is not None]
    if not fixes:
        return False
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        say("check", f"{name}: --fix leaves a file that is not UTF-8 alone")
        return False
    if text.startswith("\ufeff"):
        say("check", f"{name}: --fix leaves a file with a byte-order mark alone")
        return False
    outcome = apply_fixes(text, fixes)
    for f, why in outcome.left_out:
        say("check", f"{name}:{f.line + 1}:{f.col + 1}: fix not applied ({f.title}): {why}")
    if not outcome.applied:
        return False
    _replace_file(path, outcome.text.encode("utf-8"))
    for f in outcome.applied:
        say("check", f"{name}:{f.line + 1}:{f.col + 1}: fixed: {f.title}")
    return True


def _replace_file(path: Path, data: bytes) -> None:
    """The new content beside the file, then renamed over it: never a half-written file."""
    import os
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# ptxas's words when --arch is older than the file's .target
_TARGET_ABOVE_ARCH = "SM version specified by .target is higher"


def arch_below_target(file: str, arch: str, target: str | None) -> str:
    """What to do when ptxas refuses a file's .target for an older --arch."""
    target = target or "its .target"
    return (
        f"{file} has .target {target}, which ptxas will not assemble for the older --arch {arch}. "
        f"Leave out --arch to use the file's .target, or give --arch {target} or newer; "
        f"for numbers on {arch}, change the file's .target to {arch}."
    )


def print_problems(command: str, name: str, path: Path, result: CheckResult, arch, out) -> int:
    """A check's problems, compiler style, the way every command prints ptxas's and nvcc's
    complaints: the cascade already folded into its cause (diagnostics/cascade.py), each
    certain fix once as a ``note: fix:``, the tool's notes and a timeout or an --arch older
    than the .target as messages. Returns the exit code they mean."""
    from ptxls.frontend.ptx import scan_header

    for note in result.notes:
        say(command, note)
    cannot_run = False
    fixes_said = set()
    for p in result.problems:
        if p.code == "tool-timeout":
            cannot_run = True
            say(command, f"{name}: {p.message}; allow more with --timeout")
            continue
        if arch and _TARGET_ABOVE_ARCH in p.message:
            cannot_run = True
            _, target = scan_header(decode_bytes(path.read_bytes()))
            say(command, arch_below_target(name, arch, target))
            continue
        print(p.compiler_style(name), file=out)
        if p.fix and p.fix not in fixes_said:  # a fix-it, as compilers print one: once
            fixes_said.add(p.fix)
            print(f"{name}:{p.fix.line + 1}:{p.fix.col + 1}: note: fix: {p.fix.title}", file=out)
    if cannot_run:
        return EXIT_CANNOT_RUN
    return EXIT_PROBLEMS if any(p.severity is Severity.ERROR for p in result.problems) else EXIT_OK


def _problem_json(p) -> dict:
    fix = {"line": p.fix.line + 1, "col": p.fix.col + 1, "title": p.fix.title} if p.fix else None
    return {
        "line": p.line + 1, "col": p.col + 1, "end_line": p.last_line + 1, "end_col": p.end_col + 1,
        "severity": p.severity.value, "message": p.message, "source": p.source, "code": p.code,
        "fix": fix,
    }  # fmt: skip


def _print_markdown(name: str, result: CheckResult, out) -> None:
    errors = sum(p.severity is Severity.ERROR for p in result.problems)
    head = f"**`{name}`**: " + (
        "clean"
        if not result.problems
        else f"{plural(len(result.problems), 'problem')}, {plural(errors, 'error')}"
    )
    print(head + (f" ({result.tool}, {result.arch})" if result.tool else ""), file=out)
    for p in result.problems:
        fix = f" — fix: {p.fix.title}" if p.fix else ""
        print(f"- line {p.line + 1}, col {p.col + 1}: **{p.severity.value}**: {p.message}{fix}",
              file=out)  # fmt: skip
    print(file=out)


def plural(n: int, word: str) -> str:
    """'1 error', '2 errors', 'no errors'."""
    return f"no {word}s" if n == 0 else f"1 {word}" if n == 1 else f"{n} {word}s"


async def run_check(
    files: list[str],
    *,
    arch: str | None,
    ptxas: str | None,
    nvcc: str | None,
    timeout: float = DEFAULT_TIMEOUT_S,
    out=None,
    fix: bool = False,
    fmt: str = "text",
) -> int:
    """Exit 0 clean, 1 errors in a file, 2 could not check (unreadable file, a file that is
    not PTX or CUDA, no ptxas, a tool that ran past --timeout, an --arch the file's .target
    rules out). With ``fix``, the fixes found are applied to each file and the file is checked
    again: the exit status and the problems printed are the fixed file's."""
    out = out or sys.stdout
    worst = EXIT_OK
    report = []
    for name in files:
        path = Path(name)
        if language_of(name) not in (PTX, CUDA):
            say("check", f"{name}: not a PTX or CUDA file (check reads {extensions(PTX, CUDA)})")
            worst = EXIT_CANNOT_RUN
            continue
        try:
            result = await check_file(path, arch=arch, ptxas=ptxas, nvcc=nvcc, timeout=timeout)
            # a fix can uncover the next (raising .version, then the .target): a few rounds
            for _ in range(FIX_ROUNDS if fix else 0):
                if not _apply_fixes(path, name, result):
                    break
                result = await check_file(path, arch=arch, ptxas=ptxas, nvcc=nvcc, timeout=timeout)
        except OSError as e:
            say("check", f"cannot read {name}: {e.strerror or e}")
            return EXIT_CANNOT_RUN
        except PtxasUnavailable as e:
            say("check", str(e))
            return EXIT_CANNOT_RUN
        if fmt == "json":
            code = print_problems("check", name, path, result, arch, io.StringIO())
            report.append({"file": name, "tool": result.tool, "arch": result.arch,
                           "exit_code": code, "notes": result.notes,
                           "problems": [_problem_json(p) for p in result.problems]})  # fmt: skip
        elif fmt == "markdown":
            code = print_problems("check", name, path, result, arch, io.StringIO())
            _print_markdown(name, result, out)
        else:
            code = print_problems("check", name, path, result, arch, out)
        if code == EXIT_CANNOT_RUN:
            worst = EXIT_CANNOT_RUN
        elif worst == EXIT_OK:
            worst = code
    if fmt == "json":
        print(json.dumps({"files": report, "exit_code": worst}, indent=2), file=out)
    return worst


async def run_usage(
    file: str,
    *,
    arch: str | None,
    ptxas: str | None,
    block: int | None,
    fmt: str = "text",
    timeout: float = DEFAULT_TIMEOUT_S,
    out=None,
) -> int:
    """``ptxls usage``: what ptxas -v says per function, and the occupancy it implies.
    Exit 0, 1 when ptxas finds errors in the file (printed like ``ptxls check``), 2 when it
    cannot run (no ptxas, unreadable file, --timeout, an --arch the .target rules out)."""
    from ptxls.diagnostics.resources import usage_report
    from ptxls.frontend.ptx import scan_header
    from ptxls.toolchain.discovery import ToolNotFound

    out = out or sys.stdout
    if language_of(file) != PTX:
        say(
            "usage", f"{file}: not a PTX file (usage reads {extensions(PTX)}; for CUDA: ptxls sass)"
        )
        return EXIT_CANNOT_RUN
    try:
        text = decode_bytes(Path(file).read_bytes())
    except OSError as e:
        say("usage", f"cannot read {file}: {e.strerror or e}")
        return EXIT_CANNOT_RUN
    _, target = scan_header(text)
    try:
        report = await usage_report(text, choose_arch(arch, target), ptxas, timeout=timeout)
    except (ToolNotFound, OSError) as e:
        say("usage", str(e))
        return EXIT_CANNOT_RUN
    if report.error:
        return await _usage_refused(file, arch, ptxas, timeout, report, out, fmt)
    return _print_usage(file, report, block, fmt, out)


async def _usage_refused(file: str, arch, ptxas, timeout: float, report, out, fmt="text") -> int:
    """ptxas -v failed: why, through the same check and printer as ``ptxls check`` (the
    cascade folded, the fixes noted); the exit code."""
    if "did not finish within" in report.error:
        say("usage", f"{file}: {report.error}; allow more with --timeout")
        return EXIT_CANNOT_RUN
    path = Path(file)
    try:
        result = await check_file(path, arch=arch, ptxas=ptxas, nvcc=None, timeout=timeout)
    except (OSError, PtxasUnavailable) as e:
        say("usage", str(e))
        return EXIT_CANNOT_RUN
    if fmt == "json":  # the problems as check --format json gives them: stdout stays JSON
        code = print_problems("usage", file, path, result, arch, io.StringIO())
        problems = [_problem_json(p) for p in result.problems]
        print(json.dumps({"file": file, "exit_code": code or EXIT_PROBLEMS,
                          "problems": problems}, indent=2), file=out)  # fmt: skip
        return code or EXIT_PROBLEMS
    code = print_problems("usage", file, path, result, arch, out)
    if code == EXIT_OK:  # the check found nothing, ptxas -v still refused: say ptxas's words
        say("usage", f"ptxas ({report.tool}) refused {file}: {report.error}")
        return EXIT_PROBLEMS
    if code == EXIT_PROBLEMS:
        say("usage", f"no usage for {file}: ptxas found errors in it")
    return code


def _print_usage(file: str, report, block: int | None, fmt: str, out) -> int:
    from ptxls.diagnostics.resources import entry_occupancy, format_usage_markdown

    if fmt == "json":
        entries = []
        for u in report.entries:
            occ = entry_occupancy(u, block) if u.is_entry else None
            entries.append(
                {**dataclasses.asdict(u), "occupancy": dataclasses.asdict(occ) if occ else None}
            )
        doc = {"file": file, "ptxas": report.tool, "arch": report.arch, "functions": entries}
        print(json.dumps(doc, indent=2), file=out)
        return EXIT_OK
    body = format_usage_markdown(report.entries, block_size=block)
    if fmt == "markdown":
        print(f"`{file}`: {report.tool}, -arch={report.arch}\n\n{body}", file=out)
    else:
        print(f"{file}: {report.tool}, -arch={report.arch}\n", file=out)
        print(markdown_to_text(body), file=out)
    return EXIT_OK
