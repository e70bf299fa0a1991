#!/usr/bin/env bash
# The library's whole GPU check in one call on the H200: machine facts, the GPU-marked library
# tests (every kernel at every spec size; the planted cheaters), `ptxls bench` over the whole
# library (table + JSON), and a short Nsight Compute profile of the memory-bound kernels.
# Everything lands in $OUT (copied to bench/results/library-* afterwards).
set -o pipefail
source scripts/device-env.sh
OUT=${OUT:-/tmp/ptxls-out}; mkdir -p "$OUT"
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.limit,temperature.gpu --format=csv
  nvcc --version | tail -2; python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)"
} > "$OUT/machine.txt" 2>&1
timeout 120 python3 -m pytest tests/gpu/test_library_gpu.py tests/gpu/test_library_cheaters.py -m gpu -v \
  -p no:cacheprovider 2>&1 | tee "$OUT/gpu-pytest.txt" | grep -E "PASS|FAIL|ERROR|passed|failed" | tail -30
timeout 280 python3 -m ptxls.server bench --json --out "$OUT/bench.json" > "$OUT/bench-stdout.json" 2> "$OUT/bench-progress.txt"
echo "bench exit $?"
python3 - "$OUT/bench.json" > "$OUT/bench.md" <<'PY'
import json, sys
from ptxls.gputest.bench import BenchRow, format_bench
d = json.load(open(sys.argv[1]))
rows = [BenchRow(**r) for r in d["rows"]]
print(format_bench(rows, d["machine"]))
PY
cat "$OUT/bench.md"
if [ -n "$NCU" ]; then
  timeout 90 ncu --clock-control none --section SpeedOfLight --section Occupancy --section WarpStateStats \
    --section MemoryWorkloadAnalysis python3 bench/library_ncu.py $NCU > "$OUT/ncu.txt" 2>&1
  echo "ncu exit $?"; grep -E "^  [a-z_0-9]+|DRAM Throughput|Memory Throughput|Achieved Occupancy|Duration" "$OUT/ncu.txt" | head -60
fi
