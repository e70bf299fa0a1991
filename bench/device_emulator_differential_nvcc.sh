#!/bin/bash
# The emulator/H200 differential on nvcc -O3's PTX of every library reference.cu (second call).
set -o pipefail
source scripts/device-env.sh
timeout 400 python3 bench/emulator_differential.py --nvcc --only "(nvcc -O3)" --tag=-nvcc --out "$OUT" 2>&1 | tee "$OUT/log-nvcc.txt"
