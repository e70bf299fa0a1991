#!/usr/bin/env bash
# Every GPU-marked test of the suite on the H200, then what a person runs first there: ptxls
# doctor, ptxls demo, and ptxls test on a right and a wrong example (exit codes printed).
#   run (device tool) with carry [".whl"]:  bash bench/gpu_tests.sh [PYTEST-ARGS...]
#   default PYTEST-ARGS: tests -m gpu   (e.g. `bash bench/gpu_tests.sh tests/gpu/test_sanitizer_gpu.py`)
# Writes $OUT/machine.txt, gpu-pytest.txt, doctor.txt, demo.txt, cli.txt and summary.txt (one
# "<step> exit <code>" line each). Keep them as bench/results/gpu-tests/h200-<date>-<step>.txt.
set -o pipefail
source scripts/device-env.sh
machine_facts "$OUT/machine.txt"; cat "$OUT/machine.txt"
: > "$OUT/summary.txt"
step() {  # step NAME SECONDS COMMAND...: run, log to $OUT/NAME.txt, note the exit code
  local name=$1 limit=$2; shift 2
  timeout "$limit" "$@" > "$OUT/$name.txt" 2>&1
  echo "$name exit $?" | tee -a "$OUT/summary.txt"; tail -8 "$OUT/$name.txt"
}
args=("$@"); [ ${#args[@]} -gt 0 ] || args=(tests -m gpu)
step gpu-pytest "${GPU_TESTS_S:-300}" python3 -m pytest "${args[@]}" -p no:cacheprovider -q -rs --durations=10
step doctor 60 python3 -m ptxls.cli doctor
step demo 120 python3 -m ptxls.cli demo
cli() {
  for f in examples/vec_add.ptx examples/gpu/bad/v4_stride.ptx; do
    echo "\$ ptxls test $f"; python3 -m ptxls.cli test "$f"; echo "exit $?"
  done
}
export -f cli
step cli 120 bash -c cli
