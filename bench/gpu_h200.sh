#!/usr/bin/env bash
# One call on the GPU machine for issue 3: machine facts, the GPU tests (vec_add + every bad
# kernel, transcript of each report), the latency benchmark. Everything lands in $OUT.
# Usage (device run tool): bash bench/gpu_h200.sh
source scripts/device-env.sh
{
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader
  python3 -c 'import sys, numpy; from cuda.bindings import driver; print("python", sys.version.split()[0], "numpy", numpy.__version__)'
  ptxas --version | tail -1; nvcc --version | tail -1
} 2>&1 | tee "$OUT/gputest-machine.txt"
# The misaligned-v4 bad kernel must keep its 128-bit load (LDG.E.128) to fault at all.
ptxas -arch=sm_90 examples/gpu/bad/misaligned_v4.ptx -o /tmp/misaligned_v4.cubin \
  && cuobjdump -sass /tmp/misaligned_v4.cubin | grep -E "LDG" | tee -a "$OUT/gputest-machine.txt"
export PTXLS_GPU_TRANSCRIPT="$OUT/gputest-h200-reports.md"
: > "$PTXLS_GPU_TRANSCRIPT"
python3 -m pytest tests/gpu -v --noconftest -p no:cacheprovider -o addopts="" 2>&1 | tee "$OUT/gputest-h200-pytest.txt"
# The language server end to end (needs pygls, lsprotocol, cattrs: carried as wheels in .whl).
python3 bench/gputest_lsp_latency.py --out "$OUT/gputest-h200-lsp.json" 2>&1 | tee "$OUT/gputest-h200-lsp.txt"
python3 bench/gputest_latency.py --out "$OUT/gputest-latency-h200.json" 2>&1 | tee "$OUT/gputest-latency-h200.txt"
# The CLI as a person runs it, on the files named on the command line (exit code printed).
for f in "$@"; do
  echo "\$ ptxls test $f"
  python3 -m ptxls.cli.main test "$f" --timeout 3 2>/dev/null
  echo "exit $?"
done 2>&1 | tee "$OUT/gputest-h200-cli.txt"
# The GPU step of `ptxls demo`.
python3 -c 'from pathlib import Path; from ptxls.cli.demo_steps import gpu_step; gpu_step(Path("examples"))' 2>&1 | tee "$OUT/gputest-h200-demo.txt"
