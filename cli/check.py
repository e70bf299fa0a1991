"""``ptxls check FILE...``: the diagnostics engine, printed as FILE:LINE:COL: severity: message."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from ptxls.diagnostics.engine import (
    CudaCheckOptions,
    DocumentCheckOptions,
    PtxasUnavailable,
    PtxCheckOptions,
    check_text,
    split_lines,
)
from ptxls.diagnostics.model import CheckResult, Severity
from ptxls.diagnostics.text_guard import decode_bytes
from ptxls.toolchain.arch import choose_arch

from .output_format import markdown_to_text

EXIT_OK, EXIT_PROBLEMS, EXIT_CANNOT_RUN = 0, 1, 2
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
        language="cuda" if path.suffix in (".cu", ".cuh") else "ptx",
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
        print(f"ptxls: {name}: --fix leaves a file that is not UTF-8 alone", file=sys.stderr)
        return False
    if text.startswith("\ufeff"):
        print(f"ptxls: {name}: --fix leaves a file with a byte-order mark alone", file=sys.stderr)
        return False
    outcome = apply_fixes(text, fixes)
    for f, why in outcome.left_out:
        print(f"ptxls: {name}:{f.line + 1}:{f.col + 1}: fix not applied ({f.title}): {why}",
              file=sys.stderr)  # fmt: skip
    if not outcome.applied:
        return False
    _replace_file(path, outcome.text.encode("utf-8"))
    for f in outcome.applied:
        print(f"ptxls: {name}:{f.line + 1}:{f.col + 1}: fixed: {f.title}", file=sys.stderr)
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


async def run_check(
    files: list[str],
    *,
    arch: str | None,
    ptxas: str | None,
    nvcc: str | None,
    timeout: float = DEFAULT_TIMEOUT_S,
    out=None,
    fix: bool = False,
) -> int:
    """Exit 0 clean, 1 errors in a file, 2 could not check (unreadable file, no ptxas, a tool
    that ran past --timeout, an --arch the file's .target rules out). With ``fix``, the fixes
    found are applied to each file and the file is checked again: the exit status and the
    problems printed are the fixed file's."""
    from ptxls.frontend.ptx import scan_header

    out = out or sys.stdout
    worst = EXIT_OK
    for name in files:
        path = Path(name)
        try:
            result = await check_file(path, arch=arch, ptxas=ptxas, nvcc=nvcc, timeout=timeout)
            # a fix can uncover the next (raising .version, then the .target): a few rounds
            for _ in range(FIX_ROUNDS if fix else 0):
                if not _apply_fixes(path, name, result):
                    break
                result = await check_file(path, arch=arch, ptxas=ptxas, nvcc=nvcc, timeout=timeout)
        except OSError as e:
            print(f"ptxls: cannot read {name}: {e.strerror or e}", file=sys.stderr)
            return EXIT_CANNOT_RUN
        except PtxasUnavailable as e:
            print(f"ptxls: {e}", file=sys.stderr)
            return EXIT_CANNOT_RUN
        for note in result.notes:
            print(f"ptxls: {note}", file=sys.stderr)
        cannot_run = False
        fixes_said = set()
        for p in result.problems:
            if p.code == "tool-timeout":
                cannot_run = True
                print(f"ptxls: {name}: {p.message}; allow more with --timeout", file=sys.stderr)
                continue
            if arch and _TARGET_ABOVE_ARCH in p.message:
                cannot_run = True
                _, target = scan_header(decode_bytes(path.read_bytes()))
                print(f"ptxls: {arch_below_target(name, arch, target)}", file=sys.stderr)
                continue
            print(p.compiler_style(name), file=out)
            if p.fix and p.fix not in fixes_said:  # a fix-it, as compilers print one: once
                fixes_said.add(p.fix)
                print(
                    f"{name}:{p.fix.line + 1}:{p.fix.col + 1}: note: fix: {p.fix.title}", file=out
                )
        if cannot_run:
            worst = EXIT_CANNOT_RUN
        elif worst == EXIT_OK and any(p.severity is Severity.ERROR for p in result.problems):
            worst = EXIT_PROBLEMS
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
    try:
        text = decode_bytes(Path(file).read_bytes())
    except OSError as e:
        print(f"ptxls: cannot read {file}: {e.strerror or e}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    _, target = scan_header(text)
    try:
        report = await usage_report(text, choose_arch(arch, target), ptxas, timeout=timeout)
    except (ToolNotFound, OSError) as e:
        print(f"ptxls: {e}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    if report.error:
        return _usage_refused(file, text, arch, target, report, out)
    return _print_usage(file, report, block, fmt, out)


def _usage_refused(file: str, text: str, arch, target, report, out) -> int:
    """ptxas -v failed: why, printed like ``ptxls check``; the exit code."""
    from ptxls.diagnostics.ptxas_output import parse_ptxas_output, place_messages

    if arch and _TARGET_ABOVE_ARCH in report.error:
        print(f"ptxls: {arch_below_target(file, arch, target)}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    if "did not finish within" in report.error:
        print(f"ptxls: {file}: {report.error}; allow more with --timeout", file=sys.stderr)
        return EXIT_CANNOT_RUN
    problems = place_messages(parse_ptxas_output(report.error), split_lines(text))
    for p in problems:
        print(p.compiler_style(file), file=out)
    if not problems:
        print(f"ptxls: ptxas ({report.tool}) refused {file}: {report.error}", file=sys.stderr)
    print(f"ptxls: no usage for {file}: ptxas found errors in it", file=sys.stderr)
    return EXIT_PROBLEMS


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
