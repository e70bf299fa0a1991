#!/usr/bin/env bash
# Issue 22's GPU figures side by side in one device call: "Run GPU test" → hover through the
# language server (cold: new server, new worker; then warm), the same test through
# gputest.api (no server: what the LSP adds), `ptxls bench`'s engine over the whole library with
# each kernel's time split (bench/library_profile.py), and the lowering loop's own work per
# GPU-tested round (bench/loop_overhead.py).
#   run (device tool) with carry [".whl"]:  bash bench/speed_h200.sh
#   env: GPU_TESTS (pytest paths, default tests), STEPS="lsp api library bench loop tests" (default: lsp api library loop), BAD=1 (also the bad kernels through the
#   server), KERNELS="k1 k2" (library subset), REPEATS (loop, 3)
# Writes $OUT/speed.tgz (machine.txt, lsp.json/.md, lsp-server.log, api.json, library.json,
# loop's json, each step's log) and $OUT/summary.txt.
set -o pipefail
source scripts/device-env.sh
# everything lands in one folder, packed into $OUT/speed.tgz at the end (the device tool
# brings back few files); summary.txt is copied beside it
FINAL=$OUT; OUT=/tmp/speed-out; rm -rf "$OUT"; mkdir -p "$OUT"
trap 'tar czf "$FINAL/speed.tgz" -C "$OUT" . 2>/dev/null; cp "$OUT/summary.txt" "$FINAL/" 2>/dev/null' EXIT
machine_facts "$OUT/machine.txt"; cat "$OUT/machine.txt"; nproc >> "$OUT/machine.txt"
: > "$OUT/summary.txt"
T0=$(date +%s)
step() {  # step NAME SECONDS COMMAND...: run, log to $OUT/NAME.txt, note the exit code and wall
  local name=$1 limit=$2 t=$EPOCHREALTIME rc; shift 2
  timeout "$limit" "$@" > "$OUT/$name.txt" 2>&1; rc=$?
  printf '%s exit %s wall %.2f s (at %d s)\n' "$name" "$rc" "$(awk "BEGIN{print $EPOCHREALTIME - $t}")" \
    "$(( $(date +%s) - T0 ))" | tee -a "$OUT/summary.txt"
  tail -${TAIL:-6} "$OUT/$name.txt"
}
want() { [[ " ${STEPS:-lsp api library loop} " == *" $1 "* ]]; }
# every GPU-marked test first (bench/gpu_tests.sh's set), when asked
want tests && TAIL=12 step gpu-pytest "${GPU_TESTS_S:-240}" python3 -m pytest ${GPU_TESTS:-tests} -m gpu -p no:cacheprovider \
  -q -rs --durations=10
bad=(--no-bad); [ "${BAD:-0}" = 1 ] && bad=()
want lsp && step lsp 150 python3 bench/gputest_lsp_latency.py --warm "${WARM:-7}" --colds "${COLDS:-3}" "${bad[@]}" \
  --server-log "$OUT/lsp-server.log" --out "$OUT/lsp.json"
want api && step api 120 python3 bench/gputest_profile.py --label api --warm "${WARM:-7}" --cold 1 \
  --bench-runs 0 --out "$OUT/api.json"
want library && TAIL=18 step library 300 python3 bench/library_profile.py ${KERNELS:-} --out "$OUT/library.json"
# `ptxls bench` itself, as a person runs it (its wall is issue 22's figure)
want bench && step bench 300 python3 -m ptxls.cli bench --json --out "$OUT/bench.json"
want loop && step loop 200 python3 bench/loop_overhead.py --label speed --repeats "${REPEATS:-3}" \
  --name h200 --out-dir "$OUT"
true
