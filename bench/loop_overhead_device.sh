#!/usr/bin/env bash
# bench/loop_overhead.py on the H200 in one call (issue 11: ptxas runs per candidate round).
#   bash bench/loop_overhead_device.sh before|after     (carry .whl: openai and its deps)
set -o pipefail
label=${1:-before}
source scripts/device-env.sh
nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader 2>&1 | tee "$OUT/loop-overhead-$label-h200-nvidia-smi.txt"
timeout 200 python3 bench/loop_overhead.py --label "$label" --repeats "${REPEATS:-5}" --name h200 --out-dir "$OUT" 2>&1 \
  | grep -v "sending the API key" | tee "$OUT/loop-overhead-$label-h200.txt"
rc=${PIPESTATUS[0]}
# the path with no cubin yet (ptxls test FILE): the GPU test assembles the PTX itself
timeout 60 python3 -m ptxls.cli test examples/vec_add.ptx 2>&1 | tee "$OUT/loop-overhead-$label-h200-cli-test.txt"
exit "$rc"
