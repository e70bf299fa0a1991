"""Which ``-arch`` to assemble for: setting → the file's .target → the local GPU → sm_90."""

from __future__ import annotations

import functools
import re
import shutil

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
    from .process import run_capped  # its whole process group is killed on timeout

    try:
        res = run_capped([smi, "--query-gpu=compute_cap", "--format=csv,noheader"], timeout=5)
    except OSError:
        return None
    out = res.stdout
    m = re.search(r"(\d+)\.(\d+)", out)
    return f"sm_{m.group(1)}{m.group(2)}" if m else None


def choose_arch(setting: str | None, file_target: str | None) -> str:
    for candidate in (setting, file_target):
        if candidate and is_valid_arch(candidate):
            return candidate
    return local_gpu_arch() or DEFAULT_ARCH
