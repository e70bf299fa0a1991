"""Machine facts the benchmark results carry."""

from __future__ import annotations

import datetime
import subprocess
from pathlib import Path


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


ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


def machine_name() -> str:
    """The <machine> of a result's file name: the GPU's model ('h200') where nvidia-smi names
    one, else 'cpu' (the shared 2-core machine the CPU benchmarks run on)."""
    name = gpu_name().split(",")[0]
    if name.startswith("NVIDIA "):
        return name.removeprefix("NVIDIA ").split()[0].lower()
    return "cpu"


def result_path(benchmark: str, ext: str, part: str = "", machine: str | None = None) -> Path:
    """bench/results/<benchmark>/<machine>-<YYYY-MM-DD>[-part].<ext> (folder made); today's
    date in UTC. bench/index.py lists these in bench/results/INDEX.md."""
    day = datetime.datetime.now(datetime.UTC).date().isoformat()
    stem = f"{machine or machine_name()}-{day}" + (f"-{part}" if part else "")
    folder = RESULTS / benchmark
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{stem}.{ext.lstrip('.')}"
