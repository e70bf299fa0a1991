#!/usr/bin/env bash
# The library's whole GPU check in one call on the H200: machine facts, the GPU-marked library
# tests (every kernel at every spec size; the planted cheaters; the timed scan and the GPU-side
# tolerance check), `ptxls bench` over the whole library (JSON; bench/library_publish.py turns it
# into bench/results/library-h200.* and fewshot/measured.json here), and a short Nsight Compute
# profile of the kernels named in $NCU.
# Carry .whl (lsprotocol/pygls wheels: `ptxls` imports its server modules at start).
#   env: NCU="k1 k2" (profile), BENCH="k1 k2" (bench only these; default all), TESTS=0 (skip
#   the GPU tests) or TESTS="pytest args" (instead of the three files), TESTS_LIMIT (s, 170),
#   BENCH_LIMIT (s, 420), EXTRA="cmd" (run after the bench, output in extra.txt)
# Everything is also packed into $OUT/library-run.tgz (the device tool brings back few files).
set -o pipefail
source scripts/device-env.sh
trap 'tar czf "$OUT/library-run.tgz" -C "$OUT" --exclude library-run.tgz . 2>/dev/null' EXIT
T0=$(date +%s); lap() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.limit,temperature.gpu --format=csv
  nvcc --version | tail -2; python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)"
  free -g | head -2; nproc
} > "$OUT/machine.txt" 2>&1
lap "machine facts"
if [ "${TESTS:-}" != 0 ]; then
  timeout ${TESTS_LIMIT:-170} python3 -m pytest ${TESTS:-tests/gpu/test_library_gpu.py \
    tests/gpu/test_library_cheaters.py tests/gpu/test_library_timing_gpu.py} -m gpu -v \
    -p no:cacheprovider 2>&1 | tee "$OUT/gpu-pytest.txt" | grep -E "PASS|FAIL|ERROR|passed|failed|Error" | tail -40
  lap "gpu tests exit $?"
fi
# without --json: the table on stdout, progress on stderr; --out .json keeps the rows as it goes
timeout ${BENCH_LIMIT:-420} python3 -m ptxls.cli bench ${BENCH:-} --out "$OUT/bench.json" \
  > "$OUT/bench-table.md" 2> "$OUT/bench-progress.txt"
lap "bench exit $?"; tail -3 "$OUT/bench-progress.txt"
python3 bench/library_publish.py "$OUT/bench.json" --name scratch > "$OUT/bench.md" 2>&1; cat "$OUT/bench.md"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> "$OUT/machine.txt" 2>&1
if [ -n "${EXTRA:-}" ]; then
  bash -c "$EXTRA" > "$OUT/extra.txt" 2>&1; lap "extra exit $?"; tail -40 "$OUT/extra.txt"
fi
if [ -n "${NCU:-}" ]; then
  timeout 90 ncu --clock-control none --section SpeedOfLight --section Occupancy --section WarpStateStats \
    --section MemoryWorkloadAnalysis python3 bench/library_ncu.py $NCU > "$OUT/ncu.txt" 2>&1
  lap "ncu exit $?"
fi
