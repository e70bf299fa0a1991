#!/usr/bin/env bash
# Re-check after renaming the planted CUDA file (shared_oob.cu beside shared_oob.ptx made it the
# .ptx's pair): the PTX and CUDA sanitizer GPU tests, and the real logs of the .cu runs.
set -o pipefail
R=${OUT:-/tmp/out}; mkdir -p "$R/logs"
export PYTHONUNBUFFERED=1
source scripts/device-env.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH="$PYTHONPATH:/tmp/site"
timeout 200 python3 -m pytest tests/gpu/test_sanitizer_gpu.py tests/gpu/test_sanitizer_cuda_gpu.py tests/gpu/test_gpu_paths.py -m gpu -p no:cacheprovider -q -rs > "$R/gpu-pytest.txt" 2>&1
echo "gpu tests exit $?"; tail -5 "$R/gpu-pytest.txt"
timeout 120 python3 bench/capture_cuda_sanitizer_logs.py "$R/logs" > "$R/capture.txt" 2>&1
echo "capture exit $?"; tail -4 "$R/capture.txt"; ls -la "$R/logs"
