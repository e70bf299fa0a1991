#!/usr/bin/env bash
# Re-check on the H200 after the last changes: the GPU-marked tests, the demo, the CLI on the
# examples, and the editor's Run-GPU-test → hover latency. Carry .whl (pygls, openai, … wheels).
set -o pipefail
source scripts/device-env.sh
OUT=${OUT:-/tmp/ptxls-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH="$PYTHONPATH:/tmp/site"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/machine.txt"
python3 -m pytest tests/gpu tests/test_lowering_gpu.py -m gpu -v -p no:cacheprovider 2>&1 | tee "$OUT/gpu-pytest.txt" | tail -14
python3 -m ptxls.cli demo 2>&1 | tee "$OUT/demo.txt" | tail -16
for f in examples/vec_add.ptx examples/gpu/bad/v4_stride.ptx; do
  echo "\$ ptxls test $f"; python3 -m ptxls.cli test "$f" > /tmp/t.txt 2>&1; rc=$?; tail -8 /tmp/t.txt; echo "exit $rc"
done 2>&1 | tee "$OUT/cli.txt"
python3 bench/gputest_lsp_latency.py --out "$OUT/gputest-h200-lsp.json" 2>&1 | tee "$OUT/lsp-latency.txt" | tail -8
