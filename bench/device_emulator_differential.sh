#!/bin/bash
# The emulator/H200 differential in one device call (bench/emulator_differential.py):
# the same launches with the same inputs on the CPU emulator and on the GPU, results to $OUT.
#   run (device tool) with carry [".whl"]:  bash bench/device_emulator_differential.sh [ARGS...]
# ARGS go to the script (e.g. --tag=-classes: $OUT/h200-<date>-classes.{json,md}); keep the
# results and machine.txt/log.txt as bench/results/emulator-differential/h200-<date><tag>*.
set -o pipefail
source scripts/device-env.sh
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; python3 --version;
  python3 -c 'import numpy; print("numpy", numpy.__version__)'; nvcc --version | tail -2; } > "$OUT/machine.txt" 2>&1
timeout 500 python3 bench/emulator_differential.py --out "$OUT" "$@" 2>&1 | tee "$OUT/log.txt"
