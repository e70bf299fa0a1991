"""``ptxls check FILE...``: the diagnostics engine, printed as FILE:LINE:COL: severity: message."""

from __future__ import annotations

import sys
from pathlib import Path

from ptxls.diagnostics.arch import choose_arch
from ptxls.diagnostics.cuda_check import check_cuda
from ptxls.diagnostics.engine import PtxasUnavailable, PtxCheckOptions, check_ptx
from ptxls.diagnostics.model import CheckResult, Severity
from ptxls.diagnostics.text_guard import binary_problem, decode_bytes

EXIT_OK, EXIT_PROBLEMS, EXIT_CANNOT_RUN = 0, 1, 2


async def check_file(
    path: Path, *, arch: str | None, ptxas: str | None, nvcc: str | None
) -> CheckResult:
    """Raises OSError (unreadable file) and PtxasUnavailable (no ptxas)."""
    text = decode_bytes(path.read_bytes())
    bad = binary_problem(text)
    if bad is not None:
        return CheckResult(problems=[bad], ran_tool=False)
    if path.suffix in (".cu", ".cuh"):
        return await check_cuda(
            text, file_path=str(path), arch=choose_arch(arch, None), nvcc_path=nvcc
        )
    return await check_ptx(text, PtxCheckOptions(arch=arch, ptxas_path=ptxas, file_name=path.name))


async def run_check(
    files: list[str], *, arch: str | None, ptxas: str | None, nvcc: str | None, out=None
) -> int:
    out = out or sys.stdout
    worst = EXIT_OK
    for name in files:
        path = Path(name)
        try:
            result = await check_file(path, arch=arch, ptxas=ptxas, nvcc=nvcc)
        except OSError as e:
            print(f"ptxls: cannot read {name}: {e.strerror or e}", file=sys.stderr)
            return EXIT_CANNOT_RUN
        except PtxasUnavailable as e:
            print(f"ptxls: {e}", file=sys.stderr)
            return EXIT_CANNOT_RUN
        for note in result.notes:
            print(f"ptxls: {note}", file=sys.stderr)
        for p in result.problems:
            print(p.compiler_style(name), file=out)
        if any(p.severity is Severity.ERROR for p in result.problems):
            worst = EXIT_PROBLEMS
    return worst


async def run_usage(
    file: str, *, arch: str | None, ptxas: str | None, block: int | None, out=None
) -> int:
    """``ptxls usage``: what ptxas -v says per function, and the occupancy it implies."""
    from ptxls.diagnostics.ptx_parse import scan_header
    from ptxls.diagnostics.resources import format_usage_markdown, usage_report
    from ptxls.diagnostics.toolchain import ToolNotFound

    out = out or sys.stdout
    try:
        text = decode_bytes(Path(file).read_bytes())
    except OSError as e:
        print(f"ptxls: cannot read {file}: {e.strerror or e}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    _, target = scan_header(text)
    try:
        report = await usage_report(text, choose_arch(arch, target), ptxas)
    except (ToolNotFound, OSError) as e:
        print(f"ptxls: {e}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    if report.error:
        print(f"ptxls: ptxas rejected {file} ({report.tool}):\n{report.error}", file=sys.stderr)
        return EXIT_PROBLEMS
    print(f"{file}: {report.tool}, -arch={report.arch}\n", file=out)
    print(format_usage_markdown(report.entries, block_size=block), file=out)
    return EXIT_OK
