"""The openai SDK on the start-up path: imported, and its client made, in a thread.

So ``ptxls lower`` sends its first request as soon as its prompt is ready (lowering/README.md,
"Start-up").

The SDK is imported when a client is made, not when the lowering modules are, so the GPU-side
code and the nvcc path never load it. Its import is about 700 modules (pydantic models of every
API type): 0.5-0.9 s of CPU on the 2-core machine, more than anything ptxls does before its first
request. ``prefetch_sdk()`` starts it as soon as a command knows it will talk to a model; with
the settings it also makes the ``AsyncOpenAI`` client (the TLS context loads the CA certificates
with the GIL released) and does what the client's first request would do on the way (the chat
resource, anyio's backend, the platform headers), and ``sdk_client`` hands that client to the
first ``LlmClient`` with the same settings. Every request still goes through the SDK.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .settings import LlmSettings

_sdk_import: threading.Thread | None = None
# SDK clients made ahead by prefetch_sdk(settings), by what they were made with; each is taken
# by the first LlmClient with the same settings (a client is never shared).
_made_ahead: dict[tuple, Any] = {}
_made_ahead_lock = threading.Lock()
# What the SDK imports at its first request, not at its own import: anyio's asyncio backend.
_FIRST_REQUEST_MODULES = ("anyio._backends._asyncio",)


def prefetch_sdk(settings: LlmSettings | None = None) -> None:
    """Start ``warm_sdk(settings)`` in a thread, once per process: the SDK's import (0.5-1 s
    of CPU on a 2-core machine) runs while the caller reads the kernel, the spec and the
    few-shot examples, and ``LlmClient`` waits for it (``sdk()``)."""
    global _sdk_import
    if _sdk_import is None:
        _sdk_import = threading.Thread(
            target=_warm_quietly, args=(settings,), name="ptxls-openai-import", daemon=True
        )
        _sdk_import.start()


def warm_sdk(settings: LlmSettings | None = None) -> None:
    """Import the openai SDK and do what a client's first request would do on the way: load
    anyio's asyncio backend and ask ``platform.platform()`` (the SDK's platform headers; it runs
    ``uname -p``, a child process, and the standard library keeps the answer). With the
    ``settings`` the lowering will use, also make that SDK client (its TLS context reads the CA
    certificates with the GIL released) and load its chat resource; the first
    ``LlmClient(settings)`` takes it (``sdk_client``). Everything still goes through the SDK;
    only the order changes.

    Blocking (hundreds of ms the first time): call it from a worker thread, never on an event
    loop (a server can run ``asyncio.to_thread(warm_sdk, settings)`` before a lowering)."""
    import platform

    import openai

    for name in _FIRST_REQUEST_MODULES:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    platform.platform()
    if settings is None or not settings.ready:
        return
    client = _new_sdk_client(openai, settings)
    _ = client.chat.completions.with_streaming_response  # imports the chat resource
    with _made_ahead_lock:
        _made_ahead[_client_key(settings)] = client


def _warm_quietly(settings: LlmSettings | None) -> None:
    # a broken install or a refused setting is reported by LlmClient, on the caller's thread
    with contextlib.suppress(Exception):
        warm_sdk(settings)


def sdk():
    """The openai module, once the prefetch thread (where one was started) is done."""
    if _sdk_import is not None:
        _sdk_import.join()
    import openai

    return openai


def _client_key(settings: LlmSettings) -> tuple:
    return (
        settings.api_key,
        settings.base_url,
        settings.timeout_s,
        tuple(sorted(settings.extra_headers.items())),
    )


def _new_sdk_client(openai, settings: LlmSettings):
    return openai.AsyncOpenAI(
        # local servers take any key; the SDK insists on one
        api_key=settings.api_key or "no-key",
        base_url=settings.base_url,
        timeout=settings.timeout_s,
        max_retries=0,  # retried here, with each wait reported as progress
        default_headers=dict(settings.extra_headers) or None,
    )


def sdk_client(openai, settings: LlmSettings):
    """The SDK client for these settings: the one prefetch_sdk made for them, else a new one."""
    with _made_ahead_lock:
        made = _made_ahead.pop(_client_key(settings), None)
    return made if made is not None else _new_sdk_client(openai, settings)
