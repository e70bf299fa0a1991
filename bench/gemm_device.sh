#!/usr/bin/env bash
# One call on the H200 for the compute-heavy library kernels: build + test + time each (ours,
# nvcc -O3 of reference.cu, PyTorch) with bench/gemm_bench.py, each kernel in its own process
# under a time limit (a hung look-back spin must not eat the call), then Nsight Compute on one
# launch of each kernel that missed a target (and each named in PROFILE), the SASS opcode counts
# of both builds, and with HARNESS="scan or gemm" the GPU tests through the project's harness.
# Usage: bash bench/gemm_device.sh [KERNEL...]
#   env: RUNS (20), BENCH_TIMEOUT (240 s a kernel), PROFILE, NCU_MISSED= (no ncu), SASS=0, HARNESS
# Then, here: python3 bench/gemm_report.py gemm-*.json > bench/results/gemm/h200-DATE.md
set -o pipefail
# the device tool brings back at most 8 files: everything is written under $W and packed into
# $OUT/gemm-run.tgz on exit (bench.log also stays readable on its own)
FINAL=${OUT:-/tmp/gemm-out}; mkdir -p "$FINAL"
W=$(mktemp -d /tmp/gemm-run.XXXX); OUT=$W
trap 'tar czf "$FINAL/gemm-run.tgz" -C "$W" . ; cp "$W/bench.log" "$FINAL/" 2>/dev/null' EXIT
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.limit \
  --format=csv | tee "$OUT/machine.txt"
nvcc --version | tail -2 | tee -a "$OUT/machine.txt"
python3 -c "import torch; print('torch', torch.__version__)" | tee -a "$OUT/machine.txt"
KERNELS=${*:-scan_inclusive sgemm_128x128 hgemm_mma hgemm_wgmma}
for k in $KERNELS; do
  echo "== $k"
  timeout ${BENCH_TIMEOUT:-240} python3 bench/gemm_bench.py "$k" --runs ${RUNS:-20} \
    --json "$OUT/gemm-$k.json" 2>&1 | tee -a "$OUT/bench.log"
  echo "exit $?"
  cp "$OUT/gemm-$k.json" "$OUT/bench.log" "$FINAL/" 2>/dev/null  # kept even if the call is cut
done
echo "clocks right after the timed runs:" >> "$OUT/machine.txt"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv \
  | tee -a "$OUT/machine.txt"
# Nsight Compute only where a target was missed (or PROFILE names the kernel): the evidence
# of why, from one launch at the largest bench shape
MISSED=$(python3 - "$OUT" $KERNELS <<'PY'
import json, sys
sys.path.insert(0, "bench")
from gemm_report import TARGETS
out, names = sys.argv[1], sys.argv[2:]
for k in names:
    try:
        res = json.load(open(f"{out}/gemm-{k}.json"))["results"][0]
        t_nvcc, t_torch, _ = TARGETS[k]
        if any(r["ratio_vs_nvcc"] < t_nvcc or r["ratio_vs_torch"] < t_torch for r in res["bench"]):
            print(k)
    except (OSError, KeyError, IndexError, ValueError):
        pass
PY
)
echo "targets missed by: ${MISSED:-none}"
for k in $(echo ${PROFILE:-} ${NCU_MISSED-$MISSED} | tr ' ' '\n' | sort -u); do
  echo "== ncu $k"
  # stall reasons per issued instruction, besides the sections (without them if ncu refuses)
  stalls='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio'
  for extra in "--metrics $stalls" ""; do
    timeout 150 ncu --clock-control none --section SpeedOfLight --section Occupancy \
      --section WarpStateStats --section LaunchStats $extra -k "regex:^$k" -c 1 \
      python3 bench/gemm_bench.py "$k" --profile-once > "$OUT/ncu-$k.txt" 2>&1 && break
  done
  grep -E "Duration|Throughput|Achieved Occupancy|Registers Per|Warp Cycles Per Issued|stalled_(barrier|long_sc|math|mio|short|wait|lg_|not_sel|dispatch|membar)" \
    "$OUT/ncu-$k.txt" | sed -E 's/ +/ /g' | head -30
done
# opcode counts of ours and nvcc's machine code, side by side (what each build really runs)
for k in $( [ "${SASS:-1}" = 1 ] && echo $KERNELS ); do
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
