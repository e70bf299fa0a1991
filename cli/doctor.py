"""``ptxls doctor``: what ptxls found on this machine, and what to do about what is missing."""

from __future__ import annotations

import json
import os
import sys

from ptxls.toolchain.arch import choose_arch
from ptxls.toolchain.discovery import ToolNotFound, all_tools, find_nvcc, find_ptxas
from ptxls.toolchain.gpu_probe import probe_gpu


def _nvrtc_version() -> str:
    try:
        from cuda.bindings import nvrtc

        err, major, minor = nvrtc.nvrtcVersion()
        return f"{major}.{minor}" if err == nvrtc.nvrtcResult.NVRTC_SUCCESS else f"error {err}"
    except Exception as e:  # library missing: say why, never a traceback
        return f"not available ({e}; pip install nvidia-cuda-nvrtc)"


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
    from ptxls.lowering.secrets import public_url

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
        rows.append(("ptxas", "NOT FOUND: " + p["error"]))
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


def run_doctor(ptxas: str | None = None, fmt: str = "text", out=None) -> int:
    """Exit 0, or 2 when there is no ptxas (nothing can be checked)."""
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
    for key, value in rows:
        print(f"  {key:<16} {value}", file=out)
    return code
