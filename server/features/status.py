"""What the VS Code status bar shows: the toolchain, GPU and LLM, and per PTX file the arch and
ptxas its diagnostics use.

``ptxls/status`` is sent once after start (probing the GPU takes a child process, ~1 s) and again
when settings change. ``ptxls/fileStatus`` is sent for a PTX document when it opens and whenever
its ``.version``/``.target`` or the settings change: the same choice the diagnostics make
(arch: setting > the file's .target > the local GPU > sm_90; ptxas: the first that accepts the
file's .version). No key ever goes in either: only whether one is set.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from lsprotocol import types

from ptxls.frontend.ptx import scan_header
from ptxls.toolchain.arch import DEFAULT_ARCH, choose_arch, is_valid_arch, local_gpu_arch
from ptxls.toolchain.discovery import ToolNotFound, find_ptxas
from ptxls.toolchain.gpu_probe import probe_gpu
from ptxls.toolchain.secrets import public_url

from ..app import PtxlsServer
from .languages import PTX, language_of

METHOD = "ptxls/status"
FILE_METHOD = "ptxls/fileStatus"


def llm_host(base_url: str | None) -> str:
    """The endpoint's host[:port], as a person recognises it; OpenAI's when none is set."""
    if not base_url:
        return "api.openai.com"
    parts = urlsplit(base_url if "://" in base_url else f"http://{base_url}")
    # hostname[:port] only: a netloc may carry user:password@ (never shown)
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    return (parts.hostname or "") + port or public_url(base_url) or ""


def arch_and_source(setting: str | None, target: str | None) -> tuple[str, str]:
    """The -arch the diagnostics use (toolchain.arch.choose_arch), and which rule gave it."""
    if setting and is_valid_arch(setting):
        return setting, "setting"
    if target and is_valid_arch(target):
        return target, ".target"
    gpu = local_gpu_arch()
    return (gpu, "GPU") if gpu else (DEFAULT_ARCH, "default")


def file_status_payload(server: PtxlsServer, uri: str, header) -> dict:
    version, target = header
    arch, arch_from = arch_and_source(server.settings.arch, target)
    payload: dict = {
        "uri": uri,
        "ptxVersion": ".".join(map(str, version)) if version else None,
        "arch": arch,
        "archFrom": arch_from,
    }
    try:
        ptxas = find_ptxas(server.settings.ptxas_path, needs_isa=version)
        payload["ptxas"] = f"{ptxas.version} ({ptxas.origin})"
        payload["ptxasPath"] = ptxas.path
    except ToolNotFound as e:
        payload["ptxas"] = None
        payload["ptxasReason"] = str(e)
    return payload


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
        "llmBaseUrl": public_url(base_url),  # no credentials embedded in the URL
        "llmHost": llm_host(base_url) if model else None,
    }


@dataclass
class StatusState:
    started: bool = False  # initialized came: settings changes now resend the status
    # uri → the (header, arch setting, ptxas setting) its last fileStatus was for
    file_keys: dict[str, tuple] = field(default_factory=dict)
    # fileStatus notifications to send, oldest first, by one task (_send_file_statuses)
    to_send: dict[str, tuple] = field(default_factory=dict)
    sender: asyncio.Task | None = None


async def _send_status(ls: PtxlsServer) -> None:
    payload = await asyncio.to_thread(status_payload, ls)
    ls.protocol.notify(METHOD, payload)
    ls.log_message(f"ptxls status: {status_line(payload)}")


def status_line(payload: dict) -> str:
    """The status in words for the log: 'ptxas 13.0 (wheel), sm_90, no GPU (why), LLM: m'."""
    gpu = payload["gpu"] or f"no GPU ({payload['gpuReason'] or 'none found'})"
    llm = payload["llmModel"]
    llm_text = f"LLM {llm} at {payload['llmHost']}" if llm and payload["llmHost"] else "no LLM"
    ptxas = f"ptxas {payload['ptxas']}" if payload["ptxas"] else "no ptxas"
    return f"{ptxas}, {payload['arch']}, {gpu}, {llm_text}"


def on_initialized(ls: PtxlsServer) -> None:
    ls.state(StatusState).started = True
    asyncio.get_running_loop().create_task(_send_status(ls))


def _on_settings(ls: PtxlsServer) -> None:
    state = ls.state(StatusState)
    if state.started:  # before initialized, the initialized hook sends the first status
        asyncio.get_running_loop().create_task(_send_status(ls))
    for uri in list(state.file_keys):
        _refresh_file(ls, uri)


async def _send_file_statuses(ls: PtxlsServer) -> None:
    """The queued fileStatus notifications, one at a time. A task (and a worker-thread job) per
    document made a burst of 3,000 didOpens 3,000 callbacks that came back together: one turn of
    the loop wrote hundreds of notifications to a client busy reading while a hover waited
    (a profile: 2,740 writes, 0.8 s). One at a time, a hover waits for one write at most; a
    document closed or changed before its turn is skipped."""
    state = ls.state(StatusState)
    while state.to_send:
        uri = next(iter(state.to_send))
        key = state.to_send.pop(uri)
        if state.file_keys.get(uri) != key:
            continue
        payload = await asyncio.to_thread(file_status_payload, ls, uri, key[0])
        if state.file_keys.get(uri) == key:  # still what the document says
            ls.protocol.notify(FILE_METHOD, payload)


def _refresh_file(ls: PtxlsServer, uri: str) -> None:
    doc = ls.open_document(uri)
    if doc is None or language_of(uri, doc.language_id) != PTX:
        return
    # scan_header stops at the first .version/.target: cheap enough for every keystroke.
    key = (scan_header(doc.source), ls.settings.arch, ls.settings.ptxas_path)
    state = ls.state(StatusState)
    if state.file_keys.get(uri) != key:
        state.file_keys[uri] = key
        state.to_send[uri] = key
        if state.sender is None or state.sender.done():
            state.sender = asyncio.get_running_loop().create_task(_send_file_statuses(ls))


def on_document(ls: PtxlsServer, params) -> None:
    _refresh_file(ls, params.text_document.uri)


def on_close(ls: PtxlsServer, params) -> None:
    ls.state(StatusState).file_keys.pop(params.text_document.uri, None)


def register(server: PtxlsServer) -> None:
    server.initialized_hooks.append(on_initialized)
    server.settings_listeners.append(lambda _settings: _on_settings(server))
    server.did_open_hooks.append(on_document)
    server.did_change_hooks.append(on_document)
    server.did_close_hooks.append(on_close)
