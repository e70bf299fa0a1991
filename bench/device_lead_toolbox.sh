#!/usr/bin/env bash
# The lead's last H200 call of session 16: every GPU-marked test (with the new
# `ptxls test FILE.cu --sanitize` tests), the .cu sanitizer on the planted kernels through the CLI
# (its JSON holds compute-sanitizer's real log lines: they replace the rewritten test data),
# `ptxls doctor` (the issue-12 tool rows) and the demo. Run with carry [".whl"]; outputs in $OUT.
set -o pipefail
R=${OUT:-/tmp/out}; mkdir -p "$R"
export PYTHONUNBUFFERED=1
source scripts/device-env.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH="$PYTHONPATH:/tmp/site"
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; python3 --version
  command -v compute-sanitizer; compute-sanitizer --version 2>&1 | tail -1
  python3 -c "import triton, torch; print('triton', triton.__version__, 'torch', torch.__version__)"; } > "$R/machine.txt" 2>&1
timeout ${GPU_TESTS_S:-240} python3 -m pytest tests -m gpu -p no:cacheprovider -q -rs --durations=10 > "$R/gpu-pytest.txt" 2>&1
echo "gpu tests exit $?" | tee "$R/summary.txt"; tail -14 "$R/gpu-pytest.txt"
CU=tests/data/sanitizer/planted/planted_cuda.cu
: > "$R/cu-sanitize.txt"
for k in reverse_tile_oob reverse_tile swap_warps_no_sync; do
  echo "== ptxls test $CU --kernel $k --sanitize memcheck racecheck" >> "$R/cu-sanitize.txt"
  /usr/bin/time -f "%e s" timeout 120 python3 -m ptxls.cli test "$CU" --kernel "$k" --sanitize memcheck racecheck >> "$R/cu-sanitize.txt" 2>&1
  echo "exit $?" >> "$R/cu-sanitize.txt"
  timeout 120 python3 -m ptxls.cli test "$CU" --kernel "$k" --sanitize memcheck racecheck --json > "$R/cu-sanitize-$k.json" 2>/dev/null
done
echo "cu sanitize done" | tee -a "$R/summary.txt"; grep -E "^==|exit|line" "$R/cu-sanitize.txt" | head -30
timeout 60 python3 -m ptxls.cli doctor > "$R/doctor.txt" 2>&1; echo "doctor exit $?" | tee -a "$R/summary.txt"
cat "$R/doctor.txt"
timeout 60 python3 -m ptxls.cli demo > "$R/demo.txt" 2>&1
echo "demo exit $?" | tee -a "$R/summary.txt"; tail -3 "$R/demo.txt"
