#!/usr/bin/env bash
# One call on the H200 for the lowering issue and a re-check of the GPU harness:
#   bash bench/device_session.sh      (device run tool; carry .whl = openai, pygls, pytest-asyncio … wheels)
# Everything it reports lands in $OUT.
set -o pipefail
source scripts/device-env.sh
OUT=${OUT:-/tmp/ptxls-out}; mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
{
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader
  python3 -c 'import sys, numpy, openai; print("python", sys.version.split()[0], "numpy", numpy.__version__, "openai", openai.__version__)'
  ptxas --version | tail -1
} 2>&1 | tee "$OUT/machine.txt"
echo "== doctor"; python3 -m ptxls.cli doctor 2>&1 | tee "$OUT/doctor.txt"
echo "== lowering on the GPU"
python3 bench/lowering_gpu.py --out "$OUT/lowering-gpu-h200.json" 2>&1 | tee "$OUT/lowering-gpu-h200.txt"
echo "== GPU-marked tests"
python3 -m pytest tests/gpu tests/test_lowering_gpu.py -m gpu -v -p no:cacheprovider 2>&1 | tee "$OUT/gpu-pytest.txt" | tail -25
echo "== ptxls demo"
python3 -m ptxls.cli demo 2>&1 | tee "$OUT/demo.txt" | tail -25
