#!/usr/bin/env bash
# compute-sanitizer's H200 checks in one call (issue 12.3). Runs in the repo root on the device:
#   bash bench/sanitizer_gpu_checks.sh      (carry .whl: pygls/openai wheels for the CLI and the loop;
#                                        .sanwhl: the nvidia-cuda-sanitizer-api wheel, optional)
# Writes under $OUT: machine.txt, sanitizer-h200.txt/.json, cli.txt, logs.tgz (raw sanitizer
# outputs: the parser tests' data), loop.txt (the lowering loop's racecheck), gpu-pytest.txt
# (tests/gpu/test_sanitizer_gpu.py). Exit non-zero when a check fails.
set -o pipefail
source scripts/device-env.sh
WHEEL_CS=""
if ls .sanwhl/*.whl >/dev/null 2>&1; then
  mkdir -p /tmp/sanwhl && (cd /tmp/sanwhl && python3 -m zipfile -e "$OLDPWD"/.sanwhl/*.whl .) \
    && chmod +x /tmp/sanwhl/nvidia/cu13/bin/* /tmp/sanwhl/nvidia/cu13/compute-sanitizer/* 2>/dev/null
  WHEEL_CS=/tmp/sanwhl/nvidia/cu13/compute-sanitizer/compute-sanitizer
fi
{
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader 2>&1
  command -v compute-sanitizer; ls /usr/local/cuda/bin/compute-sanitizer 2>&1
  (compute-sanitizer --version || /usr/local/cuda/bin/compute-sanitizer --version) 2>&1 | tail -1
  [ -n "$WHEEL_CS" ] && "$WHEEL_CS" --version 2>&1 | tail -1
  python3 -c 'import sys, numpy; print("python", sys.version.split()[0], "numpy", numpy.__version__)'
} 2>&1 | tee "$OUT/machine.txt"
rc=0
timeout ${DRIVER_S:-170} python3 bench/sanitizer_h200.py --out "$OUT/run" --jobs 4 ${WHEEL_CS:+--wheel-sanitizer "$WHEEL_CS"} 2>&1 \
  | tee "$OUT/progress.txt" | grep -v "^  … " ; rc=${PIPESTATUS[0]}
cp "$OUT/run/sanitizer-h200.txt" "$OUT/run/sanitizer-h200.json" "$OUT/" 2>/dev/null
tar -C "$OUT/run" -czf "$OUT/logs.tgz" logs 2>/dev/null; rm -rf "$OUT/run"
# the CLI, as a person runs it (text output), with its wall time
cli() {  # the command as a person types it, its exit status and wall time
  local t0=$(date +%s.%N); echo "\$ ptxls $*"
  timeout 60 python3 -m ptxls.cli "$@" 2>&1; local code=$?
  echo "exit: $code; wall $(python3 -c "print(round($(date +%s.%N) - $t0, 2))") s"; echo
}
P=tests/data/sanitizer/planted
{
  cli test $P/missing_barrier.ptx --sanitize
  cli test $P/missing_barrier.ptx --kernel swap_warps
} > "$OUT/cli.txt" 2>&1
tail -40 "$OUT/cli.txt"
timeout 120 python3 bench/race_check_loop.py > "$OUT/loop.txt" 2>&1 || rc=1
tail -25 "$OUT/loop.txt"
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_sanitizer_gpu.py > "$OUT/gpu-pytest.txt" 2>&1 || rc=1
tail -5 "$OUT/gpu-pytest.txt"
echo "sanitizer_gpu_checks: exit $rc"
exit $rc
