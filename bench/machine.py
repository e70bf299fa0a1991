"""Machine facts the benchmark results carry."""

from __future__ import annotations

import subprocess


def gpu_name() -> str:
    """'NVIDIA H200, 580.159.04', or why there is none."""
    try:
        smi = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        return smi.stdout.strip() or smi.stderr.strip()
    except (OSError, subprocess.SubprocessError) as e:
        return f"no nvidia-smi ({e})"
