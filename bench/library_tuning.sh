#!/usr/bin/env bash
# Tuning candidates of library kernels on the H200, in one call: each candidate in bench/tuning/
# (NAME[_variant].ptx, with NAME[_variant].spec.json or NAME.spec.json beside it when its launch
# or reference changes, else the library's own spec) first passes its GPU test at every spec size, then is
# benched (ours vs nvcc -O3 of its reference vs PyTorch, verified timed launches); the current
# library kernels are benched in the same call for an A/B on the same machine state.
# Carry .whl. Output: $OUT/tuning.tgz (tests, benches, machine facts).
#   env: CANDIDATES="row_sum reduce_sum ..." (file stems in bench/tuning/; default all),
#   CURRENT="row_sum ..." (library kernels to bench beside them; default their NAMEs; none: skip),
#   EXTRA="cmd" (run last, output in extra.txt)
set -o pipefail
source scripts/device-env.sh
mkdir -p "$OUT/t"
trap 'tar czf "$OUT/tuning.tgz" -C "$OUT/t" . 2>/dev/null' EXIT
T0=$(date +%s); lap() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,power.limit --format=csv > "$OUT/t/machine.txt"
CANDIDATES=${CANDIDATES:-$(cd bench/tuning && ls *.ptx | sed 's/\.ptx$//')}
names=""
for c in $CANDIDATES; do
  name=${c%%_v*}; name=${name%_sleep}; name=${name%_w32}
  [ -d "fewshot/kernels/$name" ] || name=$c
  names="$names $name"
  spec=bench/tuning/$c.spec.json; [ -f "$spec" ] || spec=bench/tuning/$name.spec.json
  [ -f "$spec" ] || spec=fewshot/kernels/$name/spec.json
  timeout 60 python3 -m ptxls.cli test "bench/tuning/$c.ptx" --kernel "$name" --spec "$spec" \
    --timeout 30 > "$OUT/t/test-$c.txt" 2>&1
  rc=$?; lap "test $c exit $rc"; grep -E "GPU test|FAIL" "$OUT/t/test-$c.txt" | head -3
  if [ $rc = 0 ]; then
    timeout 90 python3 -m ptxls.cli bench "bench/tuning/$c.ptx" --kernel "$name" --spec "$spec" \
      --out "$OUT/t/bench-$c.json" > "$OUT/t/bench-$c.md" 2>&1
    lap "bench $c exit $?"; grep -E "^\| $name" "$OUT/t/bench-$c.md"
  fi
done
CURRENT=${CURRENT:-$(echo $names | tr ' ' '\n' | sort -u | tr '\n' ' ')}
if [ "$CURRENT" != none ]; then
  timeout 200 python3 -m ptxls.cli bench $CURRENT --out "$OUT/t/bench-current.json" \
    > "$OUT/t/bench-current.md" 2>&1
  lap "bench current ($CURRENT) exit $?"; grep -E "^\| " "$OUT/t/bench-current.md"
fi
if [ -n "${EXTRA:-}" ]; then
  bash -c "$EXTRA" > "$OUT/t/extra.txt" 2>&1; lap "extra exit $?"; tail -30 "$OUT/t/extra.txt"
fi
