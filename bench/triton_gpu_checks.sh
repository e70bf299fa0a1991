#!/usr/bin/env bash
# Triton as a source on the H200 (issue 12.1) in one call: Triton's PTX of the example kernels
# GPU-tested against the Triton kernels themselves (launched by Triton), a planted wrong PTX
# caught, and an LLM lowering through the scripted endpoint tested against Triton.
#   bash bench/triton_gpu_checks.sh        (carry .whl: openai and its deps for the CLI's LLM client)
set -o pipefail
source scripts/device-env.sh
{
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader 2>&1
  python3 -c 'import sys, numpy, torch, triton; print("python", sys.version.split()[0], "numpy", numpy.__version__, "torch", torch.__version__, "triton", triton.__version__)' 2>&1
} | tee "$OUT/triton-h200-machine.txt"
timeout 400 python3 bench/triton_gpu_checks.py --out "$OUT" 2>&1 | tee "$OUT/triton-h200-checks.txt"
rc=${PIPESTATUS[0]}
# the same through the GPU-marked tests (pytest is on the device's Python)
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_triton_gpu.py 2>&1 | tee "$OUT/triton-h200-gpu-pytest.txt"
[ "${PIPESTATUS[0]}" = 0 ] || rc=1
echo "triton_gpu_checks: exit $rc"
exit $rc
