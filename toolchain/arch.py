"""Which ``-arch`` to assemble for: setting → the file's .target → the local GPU → sm_90."""

from __future__ import annotations

import re

DEFAULT_ARCH = "sm_90"
_ARCH_RE = re.compile(r"^sm_\d+[af]?$")


def is_valid_arch(arch: str) -> bool:
    return bool(_ARCH_RE.match(arch))


def local_gpu_arch() -> str | None:
    """sm_XX of GPU 0, or None (no GPU, no driver): the one GPU probe's answer, asked once per
    process (a child process the first time: call it off the event loop)."""
    from .gpu_probe import probe_gpu

    gpu = probe_gpu()
    return gpu.arch if gpu.available and is_valid_arch(gpu.arch) else None


def choose_arch(setting: str | None, file_target: str | None) -> str:
    for candidate in (setting, file_target):
        if candidate and is_valid_arch(candidate):
            return candidate
    return local_gpu_arch() or DEFAULT_ARCH
