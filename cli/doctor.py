"""``ptxls doctor``: what ptxls found on this machine, and what to do about what is missing."""

from __future__ import annotations

import json
import os
import re
import sys

from ptxls.toolchain.arch import choose_arch
from ptxls.toolchain.disasm import find_cuobjdump, find_nvdisasm
from ptxls.toolchain.discovery import ToolNotFound, all_tools, find_nvcc, find_ptxas
from ptxls.toolchain.gpu_probe import probe_gpu
from ptxls.toolchain.isolated import private_cwd, python_code_command
from ptxls.toolchain.process import run_capped
from ptxls.toolchain.sanitizer import find_sanitizer
from ptxls.toolchain.triton_compile import triton_python

TRITON_MISSING = "not installed — pip install 'ptxls[triton]'"
_TRITON_VERSION = "import importlib.metadata as m; print(m.version('triton'))"


def _nvrtc_version() -> str:
    try:
        from cuda.bindings import nvrtc

        err, major, minor = nvrtc.nvrtcVersion()
        return f"{major}.{minor}" if err == nvrtc.nvrtcResult.NVRTC_SUCCESS else f"error {err}"
    except Exception as e:  # library missing: say why, never a traceback
        return f"not available ({e}; pip install nvidia-cuda-nvrtc)"


def _triton() -> dict:
    """Triton's version in the interpreter the Triton compiles run in (``triton_python()``:
    ``PTXLS_TRITON_PYTHON`` or this one), read from its metadata: importing triton takes
    seconds, and the compile step imports it in its own process anyway."""
    python = triton_python()
    if python == sys.executable:
        from importlib.metadata import PackageNotFoundError, version

        try:
            return {"version": version("triton"), "python": python}
        except PackageNotFoundError:
            return {"error": TRITON_MISSING, "python": python}
    try:
        res = run_capped(
            python_code_command(_TRITON_VERSION, python),
            timeout=30,
            cap=64 << 10,
            cwd=private_cwd(),
        )
    except OSError as e:
        return {"error": f"PTXLS_TRITON_PYTHON={python} could not start ({e})", "python": python}
    found = res.stdout.strip().splitlines()
    if res.returncode == 0 and found:
        return {"version": found[-1], "python": python}
    return {"error": TRITON_MISSING + f" (in {python})", "python": python}


def _sanitizer() -> dict:
    try:
        found = find_sanitizer()
    except ToolNotFound as e:
        return {"error": str(e)}
    return {"path": found.path, "version": found.version, "origin": found.origin}


def _disassembler(find) -> dict:
    try:
        tool = find()
    except ToolNotFound as e:
        return {"error": str(e)}
    return {"path": tool.path, "version": tool.version, "origin": tool.origin}


def gather(ptxas: str | None = None) -> dict:
    info: dict = {}
    try:
        used = find_ptxas(ptxas)
        info["ptxas"] = {
            "path": used.path,
            "version": used.version,
            "origin": used.origin,
            "max_ptx_isa": ".".join(map(str, used.max_ptx_isa)) if used.max_ptx_isa else None,
        }
    except ToolNotFound as e:
        info["ptxas"] = {"error": str(e)}
    info["ptxas_candidates"] = [
        {
            "path": t.path,
            "version": t.version,
            "origin": t.origin,
            "max_ptx_isa": ".".join(map(str, t.max_ptx_isa)) if t.max_ptx_isa else None,
        }
        for t in all_tools("ptxas", ptxas)
    ]
    try:
        nvcc = find_nvcc()
        info["nvcc"] = {"path": nvcc.path, "version": nvcc.version, "origin": nvcc.origin}
    except ToolNotFound as e:
        info["nvcc"] = {"error": str(e)}
    info["nvrtc"] = _nvrtc_version()
    # issue 12's tools: optional, so a missing one is reported (with how to get it), never an
    # error for the exit code
    info["nvdisasm"] = _disassembler(find_nvdisasm)
    info["cuobjdump"] = _disassembler(find_cuobjdump)
    info["compute_sanitizer"] = _sanitizer()
    info["triton"] = _triton()
    gpu = probe_gpu()
    info["gpu"] = {
        "available": gpu.available,
        "reason": gpu.reason,
        "name": gpu.name,
        "arch": gpu.arch,
        "driver_cuda": gpu.driver_cuda,
        "driver_max_ptx_isa": ".".join(map(str, gpu.max_ptx_isa)) if gpu.max_ptx_isa else None,
    }
    info["default_arch"] = choose_arch(None, None)
    from ptxls.toolchain.secrets import public_url

    info["llm"] = {
        # never credentials embedded in the URL (user:password@, ?api_key=)
        "base_url": public_url(os.environ.get("OPENAI_BASE_URL"))
        or "(not set: the OpenAI default)",
        "model": os.environ.get("PTXLS_MODEL") or "(not set)",
        "api_key": "set" if os.environ.get("OPENAI_API_KEY") else "not set",  # never the key itself
    }
    return info


def _rows(info: dict) -> list[tuple[str, str]]:
    """(what, what was found) in the order a person checks them."""
    rows: list[tuple[str, str]] = []
    p = info["ptxas"]
    if "error" in p:
        rows.append(("ptxas", "NOT FOUND: " + _how_to_get(p["error"])))
    else:
        rows.append(
            (
                "ptxas",
                f"{p['version']} at {p['path']} ({p['origin']}), PTX ISA <= {p['max_ptx_isa']}",
            )
        )
    for c in info["ptxas_candidates"][1:]:
        rows.append(
            (
                "  also",
                f"{c['version']} at {c['path']} ({c['origin']}), PTX ISA <= {c['max_ptx_isa']}"
                " (used for files whose .version the first cannot take)",
            )
        )
    n = info["nvcc"]
    rows.append(("nvcc", n.get("error") or f"{n['version']} at {n['path']} ({n['origin']})"))
    rows.append(("NVRTC", info["nvrtc"]))
    rows += _optional_rows(info)
    g = info["gpu"]
    if g["available"]:
        rows.append(("GPU", f"{g['name']} ({g['arch']})"))
        rows.append(
            (
                "CUDA driver",
                f"{g['driver_cuda']}; its JIT takes PTX ISA <= {g['driver_max_ptx_isa']} "
                "(GPU tests load cubins assembled by ptxas, so newer .version still runs)",
            )
        )
    else:
        rows.append(("GPU", f"no CUDA device ({g['reason']})"))
        rows.append(
            ("", "diagnostics and nvcc lowering work without one; GPU tests need a CUDA device")
        )
    rows.append(
        ("default -arch", f"{info['default_arch']} (setting > file's .target > local GPU > sm_90)")
    )
    llm = info["llm"]
    rows += [
        ("LLM endpoint", llm["base_url"]),
        ("LLM model", llm["model"]),
        ("LLM API key", llm["api_key"]),
    ]
    return rows


def _found(tool: dict) -> str:
    """'13.5 at PATH (origin)', or 'not found: how to get it' (said once: the finder's own
    message may already start 'X not found')."""
    if "error" in tool:
        return "not found: " + _how_to_get(tool["error"])
    return f"{tool['version'] or '?'} at {tool['path']} ({tool['origin']})"


def _how_to_get(error: str) -> str:
    """The finder's message without its own 'X not found.' (the row says it already)."""
    said = re.match(r"[\w+-]+ (was )?not found[.:]?\s*", error)
    rest = error[said.end() :] if said and error[said.end() :] else error
    if rest[:1].isupper() and rest[1:2].islower():  # "Install …", not "PTXLS_…" or "PATH"
        return rest[:1].lower() + rest[1:]
    return rest


def _optional_rows(info: dict) -> list[tuple[str, str]]:
    """The tools of Show SASS, the sanitizer and Triton: each found or how to get it."""
    rows = [
        ("nvdisasm", _found(info["nvdisasm"])),
        ("cuobjdump", _found(info["cuobjdump"])),
        ("compute-sanitizer", _found(info["compute_sanitizer"])),
    ]
    triton = info["triton"]
    rows.append(("triton", triton.get("error") or triton["version"]))
    return rows


def run_doctor(ptxas: str | None = None, fmt: str = "text", out=None) -> int:
    """Exit 0, or 2 when there is no ptxas (nothing can be checked). A missing optional tool
    (nvcc, NVRTC, the disassemblers, compute-sanitizer, Triton, a GPU) is reported, not an
    error."""
    out = out or sys.stdout
    info = gather(ptxas)
    code = 0 if "error" not in info["ptxas"] else 2
    if fmt == "json":
        print(json.dumps(info, indent=2), file=out)
        return code
    rows = _rows(info)
    if fmt == "markdown":
        print("**ptxls doctor**\n\n| | |\n|---|---|", file=out)
        for key, value in rows:
            cell = value.replace("|", r"\|")
            print(f"| {key.strip()} | {cell} |", file=out)
        return code
    print("ptxls doctor", file=out)
    width = max(16, *(len(key) for key, _ in rows))
    for key, value in rows:
        print(f"  {key:<{width}} {value}", file=out)
    return code
