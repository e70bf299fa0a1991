"""Diagnostics for CUDA sources: device code compiled by nvcc ``-ptx``, or NVRTC without nvcc.

nvcc and NVRTC print the same EDG front-end shape, with the source line and a caret under it:

    /tmp/x/k.cu(3): error: identifier "undefined_thing" is undefined
        if (i < n) c[i] = a[i] + b[i] + undefined_thing;
                                        ^

The preprocessor (gcc-style) prints ``k.cu:1:10: fatal error: foo.h: No such file``. Both parse
here; messages about other files (headers) land on line 1 of the buffer with their location.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from pathlib import Path

from ptxls.toolchain.discovery import ToolNotFound, find_nvcc
from ptxls.toolchain.nvcc import include_dirs_for, nvcc_to_ptx

from .model import CheckResult, Problem, Severity

_EDG = re.compile(
    r"^(?P<file>.+?)\((?P<line>\d+)\):\s*(?P<sev>catastrophic error|fatal error|error|warning|remark)"
    r"(?:\s*#(?P<code>[\w-]+))?\s*:\s*(?P<msg>.*)$"
)
_GCC = re.compile(
    r"^(?P<file>.+?):(?P<line>\d+):(?:(?P<col>\d+):)?\s*(?P<sev>fatal error|error|warning|note)\s*:\s*(?P<msg>.*)$"
)


@dataclass
class CudaMessage:
    file: str
    line: int  # 1-based
    col: int | None  # 0-based in the original line when a caret told us
    severity: Severity
    message: str
    code: str | None = None


def _sev(word: str) -> Severity:
    if "error" in word:
        return Severity.ERROR
    if word == "warning":
        return Severity.WARNING
    return Severity.INFO


def parse_cuda_output(output: str) -> list[CudaMessage]:
    lines = output.splitlines()
    out: list[CudaMessage] = []
    for i, raw in enumerate(lines):
        m = _EDG.match(raw)
        if m:
            caret_col = None
            echoed = lines[i + 1] if i + 1 < len(lines) else ""
            caret = lines[i + 2] if i + 2 < len(lines) else ""
            if caret.strip() == "^":
                caret_col = caret.index("^") - (len(echoed) - len(echoed.lstrip()))
            out.append(
                CudaMessage(
                    m.group("file"),
                    int(m.group("line")),
                    caret_col,
                    _sev(m.group("sev")),
                    m.group("msg").strip(),
                    m.group("code"),
                )
            )
            continue
        m = _GCC.match(raw)
        if m and m.group("sev") != "note":
            col = int(m.group("col")) - 1 if m.group("col") else None
            out.append(
                CudaMessage(
                    m.group("file"),
                    int(m.group("line")),
                    col,
                    _sev(m.group("sev")),
                    m.group("msg").strip(),
                )
            )
    return out


def place_cuda_messages(
    messages: list[CudaMessage], src_name: str, text: str, source: str
) -> list[Problem]:
    lines = text.replace("\r\n", "\n").split("\n")
    problems = []
    seen = set()
    for msg in messages:
        ours = Path(msg.file).name == src_name
        if ours:
            line = min(max(msg.line - 1, 0), max(len(lines) - 1, 0))
            text_line = lines[line] if lines else ""
            indent = len(text_line) - len(text_line.lstrip())
            if msg.col is not None:
                start = indent + msg.col
                m = re.compile(r"[\w$]+").match(text_line, start)
                end = m.end() if m else start + 1
            else:
                start, end = indent, len(text_line.rstrip())
            message = msg.message
        else:
            line, start, end = 0, 0, 0
            message = f"{msg.file}:{msg.line}: {msg.message}"
        key = (line, start, message)
        if key in seen:
            continue
        seen.add(key)
        code = f"#{msg.code}" if msg.code else None
        problems.append(Problem(line, start, end, msg.severity, message, source, code=code))
    return problems


async def check_cuda(
    text: str,
    *,
    file_path: str | None = None,
    arch: str = "sm_90",
    nvcc_path: str | None = None,
    timeout: float = 60.0,
) -> CheckResult:
    """Compile the device code of a .cu buffer and report nvcc's (or NVRTC's) messages."""
    try:
        # discovery may probe the binary (--version): a worker thread, never the event loop
        nvcc = await asyncio.to_thread(find_nvcc, nvcc_path)
    except ToolNotFound as e:
        return await _check_with_nvrtc(text, arch, include_dirs_for(file_path), str(e))
    run = await nvcc_to_ptx(text, nvcc, file_path=file_path, arch=arch, timeout=timeout)
    res = run.result
    result = CheckResult(tool=nvcc.describe(), arch=arch)
    if res.timed_out:
        result.problems = [
            Problem(
                0,
                0,
                0,
                Severity.ERROR,
                f"nvcc did not finish within {timeout:g} s and was stopped",
                "nvcc",
                code="tool-timeout",  # the CLI exits 2 ("cannot run") on it
            )
        ]
        return result
    result.problems = place_cuda_messages(
        parse_cuda_output(res.stdout + "\n" + res.stderr), run.source_name, text, "nvcc"
    )
    if res.returncode != 0 and not any(p.severity is Severity.ERROR for p in result.problems):
        tail = (res.stderr or res.stdout).strip().splitlines()
        result.problems.append(
            Problem(
                0,
                0,
                0,
                Severity.ERROR,
                f"nvcc failed (exit {res.returncode}): {tail[-1] if tail else 'no message'}",
                "nvcc",
            )
        )
    return result


async def _check_with_nvrtc(
    text: str, arch: str, include_dirs: list[str], why_no_nvcc: str
) -> CheckResult:
    import asyncio

    from ptxls.toolchain import nvrtc

    result = CheckResult(
        tool="NVRTC", arch=arch, notes=[f"nvcc not found, using NVRTC ({why_no_nvcc})"]
    )
    try:
        ok, log = await asyncio.to_thread(nvrtc.compile_to_ptx_log, text, arch, include_dirs)
    except nvrtc.NvrtcUnavailable as e:
        result.ran_tool = False
        result.notes.append(str(e))
        return result
    result.problems = place_cuda_messages(parse_cuda_output(log), "input.cu", text, "nvrtc")
    return result
