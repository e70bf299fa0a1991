"""Capture compute-sanitizer's own logs of the planted CUDA kernels (tests/data/sanitizer/cuda/).

Runs ``ptxls test tests/data/sanitizer/planted/planted_cuda.cu --kernel K --sanitize TOOL`` in
this process, with the sanitize step's log reader wrapped so each whole log is also written to
OUT/K-TOOL.log before ptxls deletes its temp folder. Needs a GPU and compute-sanitizer:

    python3 bench/capture_cuda_sanitizer_logs.py OUT
"""

from __future__ import annotations

import sys
from pathlib import Path

import ptxls.gputest.sanitize as sanitize
from ptxls.cli.main import main

CU = "tests/data/sanitizer/planted/planted_cuda.cu"
RUNS = [("reverse_tile_oob", "memcheck"), ("swap_warps_no_sync", "racecheck")]


def capture(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    real_read = sanitize.read_log
    worst = 0
    for kernel, tool in RUNS:

        def keep(path: str, kernel=kernel, tool=tool) -> str:
            text = real_read(path)
            (out / f"{kernel}-{tool}.log").write_text(text)
            return text

        sanitize.read_log = keep
        try:
            rc = main(["test", CU, "--kernel", kernel, "--sanitize", tool])
        except SystemExit as e:  # the CLI exits with its code
            rc = e.code if isinstance(e.code, int) else 1
        print(f"{kernel} {tool}: exit {rc}", flush=True)
        worst = max(worst, 0 if rc in (0, 1) else rc)  # 1 = findings, as planted
    sanitize.read_log = real_read
    return worst


if __name__ == "__main__":
    sys.exit(capture(Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/out/logs")))
