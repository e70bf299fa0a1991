#!/usr/bin/env bash
# One call on the H200 for the compute-heavy library kernels: build + test + time each (ours,
# nvcc -O3 of reference.cu, PyTorch) with bench/gemm_bench.py, each kernel in its own process
# under a time limit (a hung look-back spin must not eat the call), then Nsight Compute on one
# launch of each named in PROFILE. Results under $OUT (the device tool brings them back).
# Usage: bash bench/gemm_device.sh [KERNEL...]   (PROFILE="sgemm_128x128 ..." to profile)
set -o pipefail
OUT=${OUT:-/tmp/gemm-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.limit \
  --format=csv | tee "$OUT/machine.txt"
nvcc --version | tail -2 | tee -a "$OUT/machine.txt"
python3 -c "import torch; print('torch', torch.__version__)" | tee -a "$OUT/machine.txt"
KERNELS=${*:-scan_inclusive sgemm_128x128 hgemm_mma hgemm_wgmma}
for k in $KERNELS; do
  echo "== $k"
  timeout 240 python3 bench/gemm_bench.py "$k" --json "$OUT/gemm-$k.json" 2>&1 | tee -a "$OUT/bench.log"
  echo "exit $?"
done
for k in ${PROFILE:-}; do
  echo "== ncu $k"
  timeout 150 ncu --clock-control none --section SpeedOfLight --section Occupancy \
    --section WarpStateStats --section LaunchStats -k "regex:^$k" -c 1 \
    python3 bench/gemm_bench.py "$k" --profile-once 2>&1 | tee -a "$OUT/ncu.txt" | tail -60
done
# opcode counts of ours and nvcc's machine code, side by side (what each build really runs)
for k in $KERNELS; do
  arch=sm_90; grep -q "sm_90a" "fewshot/kernels/$k/kernel.ptx" && arch=sm_90a
  ptxas -arch=$arch "fewshot/kernels/$k/kernel.ptx" -o /tmp/$k.ours.cubin
  nvcc -O3 -cubin -gencode=arch=${arch/sm_/compute_},code=$arch "fewshot/kernels/$k/reference.cu" -o /tmp/$k.nvcc.cubin
  for who in ours nvcc; do
    printf '%s %s: ' "$k" "$who"
    cuobjdump --dump-sass /tmp/$k.$who.cubin \
      | sed -nE 's/^ +\/\*[0-9a-f]+\*\/ +(@!?U?P[A-Z0-9]+ +)?([A-Z][A-Za-z0-9._]+).*/\2/p' \
      | sort | uniq -c | sort -rn | head -14 | awk '{printf "%s %s, ", $2, $1}'
    echo
  done
done 2>&1 | tee "$OUT/sass-opcodes.txt"
if [ -n "${HARNESS:-}" ]; then  # the same kernels through the project's harness (ptxls test)
  source scripts/device-env.sh
  timeout 240 python3 -m pytest tests/gpu/test_library_gpu.py tests/gpu/test_library_gemm.py \
    -p no:cacheprovider -q -rs -k "${HARNESS}" 2>&1 | tee "$OUT/harness-pytest.txt" | tail -30
fi
