#!/usr/bin/env bash
# The lowering loop's H200 checks in one call (issue 8: results that never overstate; issue 9.2:
# a candidate never sets its own test). Runs in the repo root on the device machine:
#   bash bench/loop_gpu_checks.sh        (carry .whl: openai and its deps, py3.12 manylinux wheels)
# Prints its results and writes them under $OUT; exit non-zero when a check fails (2: no GPU).
set -o pipefail
source scripts/device-env.sh
{
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader 2>&1
  python3 -c 'import sys, numpy, openai; print("python", sys.version.split()[0], "numpy", numpy.__version__, "openai", openai.__version__)' 2>&1
} | tee "$OUT/loop-machine.txt"
timeout 230 python3 bench/loop_gpu_checks.py --out "$OUT" 2>&1 | tee "$OUT/loop-checks.txt"
rc=${PIPESTATUS[0]}
echo "loop_gpu_checks: exit $rc"
exit $rc
