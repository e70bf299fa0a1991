"""Which ``-arch`` to assemble for: setting → the file's .target → the local GPU → sm_90."""

from __future__ import annotations

import functools
import re
import shutil
import subprocess

DEFAULT_ARCH = "sm_90"
_ARCH_RE = re.compile(r"^sm_\d+[af]?$")


def is_valid_arch(arch: str) -> bool:
    return bool(_ARCH_RE.match(arch))


@functools.lru_cache(maxsize=1)
def local_gpu_arch() -> str | None:
    """sm_XX of GPU 0 from nvidia-smi, or None (no GPU, no driver). Cached: asked once."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    try:
        out = subprocess.run(
            [smi, "--query-gpu=compute_cap", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"(\d+)\.(\d+)", out)
    return f"sm_{m.group(1)}{m.group(2)}" if m else None


def choose_arch(setting: str | None, file_target: str | None) -> str:
    for candidate in (setting, file_target):
        if candidate and is_valid_arch(candidate):
            return candidate
    return local_gpu_arch() or DEFAULT_ARCH
