#!/usr/bin/env bash
# The lead's last H200 call after the issue-11 restructuring (one front end, one assemble per
# candidate, the server's new shape) and the issue-12 features: every GPU-marked test of the
# suite, then the demo. Run with carry [".whl"]; outputs in $OUT.
set -o pipefail
R=${OUT:-/tmp/out}; mkdir -p "$R"
export PYTHONUNBUFFERED=1
source scripts/device-env.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH="$PYTHONPATH:/tmp/site"
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; python3 --version
  python3 -c "import triton, torch; print('triton', triton.__version__, 'torch', torch.__version__)"; } > "$R/machine.txt" 2>&1
timeout ${GPU_TESTS_S:-170} python3 -m pytest tests -m gpu -p no:cacheprovider -q -rs --durations=8 > "$R/gpu-pytest.txt" 2>&1
echo "gpu tests exit $?" | tee "$R/summary.txt"; tail -20 "$R/gpu-pytest.txt"
timeout 40 python3 -m ptxls.cli demo > "$R/demo.txt" 2>&1
echo "demo exit $?" | tee -a "$R/summary.txt"; tail -12 "$R/demo.txt"
