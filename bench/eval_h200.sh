#!/usr/bin/env bash
# ptxls eval on the H200 (issue 23): nvcc's PTX of every task of the suite tested on the GPU (it
# must pass 100 %, at 1.00x its own nvcc -O3 build), then a side-by-side run of the same tasks
# with the plain local runner and with --ray local (one GPU actor), for the wall times.
#
# Ray's wheel (79 MB) is more than one call can carry (64 MiB with the working tree). Two ways,
# both written down in evaluation/README.md:
#   one call:  bash bench/eval_h200.sh all       carry .evalray/ray-2.60.0-slim.zip .evalray/deps
#              (the wheel without its Java jar, dashboard web client and libraries eval never
#              imports: 40 MB; unpacked with Python's zipfile, executable bits kept)
#   two calls: bash bench/eval_h200.sh baseline  carry .evalray/ray.part1
#              bash bench/eval_h200.sh ray       carry .evalray/ray.part2 .evalray/deps .evalray/ray.sha256
#              (the whole wheel split at 40 MiB; part 1 waits in /tmp while the machine is warm,
#              30 s after a call; the parts are joined and the sha256 checked before pip installs)
set -o pipefail
# `import ptxls.<room>` from the working tree (no pip install there): the rooms linked under a
# ptxls/ namespace folder of this script's own
site=/tmp/eval-site
rm -rf "$site" && mkdir -p "$site/ptxls"
for room in cli server diagnostics lowering gputest fewshot toolchain frontend emulator debugger evaluation; do
  ln -s "$PWD/$room" "$site/ptxls/$room"
done
export PYTHONPATH="$site" PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
DEVICE=${EVAL_DEVICE:-gpu}
SIDE_BY_SIDE=${EVAL_RAY_FAMILIES:-reduction,softmax-norm,scan,histogram,gemv-gemm}

now() { python3 -c 'import time; print(time.time())'; }
since() { python3 -c "import time; print(round(time.time() - $1, 2))"; }

baseline() {
  {
    echo "date: $(date -u +%FT%TZ)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader 2>&1
    python3 -c 'import sys, numpy; print("python", sys.version.split()[0], "numpy", numpy.__version__)'
    echo "cpus: $(nproc)"
  } > "$OUT/machine.txt" 2>&1
  local start; start=$(now)
  timeout "${EVAL_BASELINE_TIMEOUT:-300}" python3 bench/eval_cli.py --baseline-only \
    --device "$DEVICE" --concurrency 12 --run-dir /tmp/eval-baseline --out "$OUT/baseline.json" \
    --html "$OUT/baseline.html" --tasks-table ${EVAL_BASELINE_ARGS:-} 2>&1 | tee "$OUT/baseline.log"
  echo "baseline: exit ${PIPESTATUS[0]}, wall $(since "$start") s" | tee -a "$OUT/baseline.log"
}

install_slim_ray() {
  python3 -c '
import os, zipfile
with zipfile.ZipFile(".evalray/ray-2.60.0-slim.zip") as z:
    for info in z.infolist():
        path = z.extract(info, "/tmp/raysite")
        mode = info.external_attr >> 16
        if mode & 0o111:
            os.chmod(path, mode & 0o777)
'
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/raysite \
    .evalray/deps/*.whl 2>&1 | tail -3
}

install_split_ray() {
  local whl=/tmp/evalray/ray-2.60.0-cp312-cp312-manylinux2014_x86_64.whl
  cat /tmp/evalray/ray.part1 .evalray/ray.part2 > "$whl" || return 2
  echo "sha256 $(sha256sum "$whl" | cut -d' ' -f1), expected $(cat .evalray/ray.sha256)"
  [ "$(sha256sum "$whl" | cut -d' ' -f1)" = "$(cat .evalray/ray.sha256)" ] || return 2
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/raysite \
    "$whl" .evalray/deps/*.whl 2>&1 | tail -3
}

side_by_side() {
  export PYTHONPATH="$PYTHONPATH:/tmp/raysite"
  python3 -c 'import ray; print("ray", ray.__version__)' 2>&1 | tee -a "$OUT/ray.log"
  for runner in local ray; do
    local extra="" start
    [ $runner = ray ] && extra="--ray local"
    start=$(now)
    timeout 200 python3 bench/eval_cli.py --baseline-only --device "$DEVICE" \
      --family "$SIDE_BY_SIDE" --test-workers 1 --concurrency 12 $extra \
      --run-dir "/tmp/eval-$runner" --out "$OUT/$runner.json" 2>&1 | tee -a "$OUT/ray.log"
    echo "$runner: exit ${PIPESTATUS[0]}, wall $(since "$start") s" | tee -a "$OUT/ray.log"
  done
}

case "$1" in
all)
  baseline
  install_slim_ray 2>&1 | tee "$OUT/ray.log"
  side_by_side
  ;;
baseline)
  mkdir -p /tmp/evalray && cp .evalray/ray.part1 /tmp/evalray/ray.part1
  baseline
  ;;
ray)
  install_split_ray 2>&1 | tee "$OUT/ray.log"
  side_by_side
  ;;
*)
  echo "usage: bash bench/eval_h200.sh all|baseline|ray" >&2
  exit 2
  ;;
esac
