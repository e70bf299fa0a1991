#!/usr/bin/env bash
# The library's whole GPU check in one call on the H200: machine facts, the GPU-marked library
# tests (every kernel at every spec size; the planted cheaters), `ptxls bench` over the whole
# library (JSON; bench/library_publish.py turns it into bench/results/library-h200.* and
# fewshot/measured.json here), and a short Nsight Compute profile of the kernels named in $NCU.
# Carry .whl (lsprotocol/pygls wheels: `ptxls` imports its server modules at start).
set -o pipefail
source scripts/device-env.sh
OUT=${OUT:-/tmp/ptxls-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH="$PYTHONPATH:/tmp/site"
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.limit,temperature.gpu --format=csv
  nvcc --version | tail -2; python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)"
} > "$OUT/machine.txt" 2>&1
timeout 90 python3 -m pytest tests/gpu/test_library_gpu.py tests/gpu/test_library_cheaters.py -m gpu -v \
  -p no:cacheprovider 2>&1 | tee "$OUT/gpu-pytest.txt" | grep -E "PASS|FAIL|ERROR|passed|failed" | tail -30
timeout 220 python3 -m ptxls.cli bench --json --out "$OUT/bench.json" > "$OUT/bench-stdout.json" 2> "$OUT/bench-progress.txt"
echo "bench exit $?"; tail -3 "$OUT/bench-progress.txt"
python3 bench/library_publish.py "$OUT/bench.json" --name scratch > "$OUT/bench.md" 2>&1; cat "$OUT/bench.md"
if [ -n "$NCU" ]; then
  timeout 60 ncu --clock-control none --section SpeedOfLight --section Occupancy --section WarpStateStats \
    --section MemoryWorkloadAnalysis python3 bench/library_ncu.py $NCU > "$OUT/ncu.txt" 2>&1
  echo "ncu exit $?"
fi
