"""The ``ptxls/status`` notification the VS Code status bar shows: toolchain, GPU, LLM.

Sent once after start (probing the GPU takes a child process, ~1 s) and again when settings
change. No key ever goes in it: only whether one is set.
"""

from __future__ import annotations

import asyncio
import os

from lsprotocol import types

from ptxls.diagnostics.arch import choose_arch
from ptxls.diagnostics.gpu_probe import probe_gpu
from ptxls.diagnostics.toolchain import ToolNotFound, find_ptxas

from ..app import PtxlsServer

METHOD = "ptxls/status"


def status_payload(server: PtxlsServer) -> dict:
    settings = server.settings
    try:
        ptxas = find_ptxas(settings.ptxas_path)
        ptxas_text = f"{ptxas.version} ({ptxas.origin})"
    except ToolNotFound as e:
        ptxas_text, ptxas = None, None
        server.tell_once("ptxas-missing", f"ptxls: {e}", types.MessageType.Error)
    gpu = probe_gpu()
    model = settings.llm.get("model") or os.environ.get("PTXLS_MODEL")
    base_url = settings.llm.get("baseUrl") or os.environ.get("OPENAI_BASE_URL")
    return {
        "ptxas": ptxas_text,
        "ptxasPath": ptxas.path if ptxas else None,
        "arch": choose_arch(settings.arch, None),
        "gpu": gpu.name if gpu.available else None,
        "gpuReason": gpu.reason,
        "driverMaxPtxIsa": ".".join(map(str, gpu.max_ptx_isa)) if gpu.max_ptx_isa else None,
        "llmModel": model
        if (model and base_url) or (model and os.environ.get("OPENAI_API_KEY"))
        else None,
        "llmBaseUrl": base_url,
    }


def register(server: PtxlsServer) -> None:
    async def send(ls: PtxlsServer) -> None:
        payload = await asyncio.to_thread(status_payload, ls)
        ls.protocol.notify(METHOD, payload)
        ls.log_message(f"ptxls status: {payload}")

    started = False

    def on_settings(_settings) -> None:  # noqa: ANN001
        if started:  # before initialized, the initialized hook sends the first status
            asyncio.get_running_loop().create_task(send(server))

    def on_initialized(ls: PtxlsServer) -> None:
        nonlocal started
        started = True
        asyncio.get_running_loop().create_task(send(ls))

    server.settings_listeners.append(on_settings)
    server.initialized_hooks.append(on_initialized)
