#!/usr/bin/env bash
# The lead's one H200 call for this session's checks: the lowering loop (issue 8), trust (issue 9),
# the library kernels still without figures (issue 10), and the stranger's GPU-side CLI checks.
#   run with carry [".whl"]; everything lands in $OUT (summary.txt, one log per step, details.tgz)
set -o pipefail
R=${OUT:-/tmp/out}; mkdir -p "$R"
export PYTHONUNBUFFERED=1
run() {
  local name=$1 lim=$2; shift 2; mkdir -p "$R/$name"; echo "=== $name"
  OUT="$R/$name" timeout "$lim" "$@" > "$R/$name.log" 2>&1
  echo "$name exit $?" | tee -a "$R/summary.txt"; tail -12 "$R/$name.log"
}
run loop 170 bash bench/device_loop.sh
run trust 110 bash bench/device_trust.sh
library4() {
  source scripts/device-env.sh
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site"
  python3 -m ptxls.cli bench vec_add reduce_sum bias_gelu_f16 histogram256 --json --out "$OUT/bench.json" \
    > "$OUT/bench-stdout.json" 2> "$OUT/bench-progress.txt"
  echo "bench exit $?"; tail -5 "$OUT/bench-progress.txt"
  python3 bench/library_publish.py "$OUT/bench.json" --name scratch 2>&1
}
export -f library4
run library 120 bash -c library4
run stranger 60 bash bench/device_stranger.sh
tar czf "$R/details.tgz" -C "$R" loop trust library stranger 2>/dev/null
cat "$R/summary.txt"
