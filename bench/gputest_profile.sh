#!/usr/bin/env bash
# The "Run GPU test" profile before and after, side by side in one device run, then every
# GPU-marked test. Before: the gputest room as committed at .before/REV, unpacked here with
#   rm -rf .before && mkdir .before && git archive REV gputest | tar -x -C .before && echo REV > .before/REV
# (.before is git-ignored through .git/info/exclude); after: the working tree.
#   run (device tool) with carry [".whl", ".before"]:  bash bench/gputest_profile.sh
# Writes $OUT/machine.txt, before.json, after.json, gpu-pytest.txt, summary.txt.
set -o pipefail
source scripts/device-env.sh
machine_facts "$OUT/machine.txt"; cat "$OUT/machine.txt"
: > "$OUT/summary.txt"
args=(--warm "${WARM:-5}" --cold "${COLD:-2}" --bench-runs "${BENCH_RUNS:-2}")
if [ -d .before/gputest ]; then
  # the same ptxls namespace folder, with gputest/ taken from .before (first on the path)
  before=/tmp/ptxls-before; rm -rf "$before"; mkdir -p "$before/ptxls"
  for link in /tmp/ptxls-site/ptxls/*; do ln -s "$(readlink "$link")" "$before/ptxls/"; done
  rm "$before/ptxls/gputest"; ln -s "$PWD/.before/gputest" "$before/ptxls/gputest"
  PYTHONPATH="$before:${PYTHONPATH#/tmp/ptxls-site:}" timeout 120 python3 bench/gputest_profile.py \
    --label "before-$(cat .before/REV)" --out "$OUT/before.json" "${args[@]}" 2>&1 | tail -4
  echo "profile before exit $?" | tee -a "$OUT/summary.txt"
fi
timeout 120 python3 bench/gputest_profile.py --label after --out "$OUT/after.json" "${args[@]}" 2>&1 | tail -4
echo "profile after exit $?" | tee -a "$OUT/summary.txt"
[ "${SKIP_TESTS:-0}" = 1 ] && exit 0
timeout "${GPU_TESTS_S:-170}" python3 -m pytest tests -m gpu -p no:cacheprovider -q -rs --durations=10 \
  > "$OUT/gpu-pytest.txt" 2>&1
echo "gpu-pytest exit $?" | tee -a "$OUT/summary.txt"; tail -15 "$OUT/gpu-pytest.txt"
