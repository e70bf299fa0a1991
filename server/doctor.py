"""``ptxls doctor``: what ptxls found on this machine, and what to do about what is missing."""

from __future__ import annotations

import json
import os
import sys

from ptxls.diagnostics.arch import choose_arch
from ptxls.diagnostics.gpu_probe import probe_gpu
from ptxls.diagnostics.toolchain import ToolNotFound, all_tools, find_nvcc, find_ptxas


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


def run_doctor(ptxas: str | None = None, as_json: bool = False, out=None) -> int:
    out = out or sys.stdout
    info = gather(ptxas)
    if as_json:
        print(json.dumps(info, indent=2), file=out)
        return 0
    p = info["ptxas"]
    w = lambda k, v: print(f"  {k:<16} {v}", file=out)  # noqa: E731
    print("ptxls doctor", file=out)
    if "error" in p:
        w("ptxas", "NOT FOUND: " + p["error"])
    else:
        w("ptxas", f"{p['version']} at {p['path']} ({p['origin']}), PTX ISA <= {p['max_ptx_isa']}")
    for c in info["ptxas_candidates"][1:]:
        w(
            "  also",
            f"{c['version']} at {c['path']} ({c['origin']}), PTX ISA <= {c['max_ptx_isa']}"
            " (used for files whose .version the first cannot take)",
        )
    n = info["nvcc"]
    w("nvcc", n.get("error") or f"{n['version']} at {n['path']} ({n['origin']})")
    w("NVRTC", info["nvrtc"])
    g = info["gpu"]
    if g["available"]:
        w("GPU", f"{g['name']} ({g['arch']})")
        w(
            "CUDA driver",
            f"{g['driver_cuda']}; its JIT takes PTX ISA <= {g['driver_max_ptx_isa']} "
            "(GPU tests load cubins assembled by ptxas, so newer .version still runs)",
        )
    else:
        w("GPU", f"no CUDA device ({g['reason']})")
        w("", "diagnostics and nvcc lowering work without one; GPU tests need a CUDA device")
    w("default -arch", f"{info['default_arch']} (setting > file's .target > local GPU > sm_90)")
    llm = info["llm"]
    w("LLM endpoint", llm["base_url"])
    w("LLM model", llm["model"])
    w("LLM API key", llm["api_key"])
    return 0 if "error" not in p else 2
