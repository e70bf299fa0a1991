#!/usr/bin/env bash
# The GPU half of the regression guard (bench/guard.py), in one device call: every GPU-marked
# test under tests/gpu, then issue 22's GPU figures side by side (bench/speed_h200.sh): "Run GPU
# test" → hover through the language server (2 new servers cold, then 5 warm), the same test
# through gputest.api, `ptxls bench` over the whole library, and the lowering loop's own work per
# GPU-tested round. About 3 minutes on the H200.
#   run (device tool) with carry [".whl"]:  bash bench/guard_gpu.sh
#   then here:  .venv/bin/python bench/guard.py --gpu <files_at>/speed.tgz [--save]
export STEPS=${STEPS:-tests lsp api bench loop} GPU_TESTS=${GPU_TESTS:-tests/gpu}
export GPU_TESTS_S=${GPU_TESTS_S:-170} COLDS=${COLDS:-2} WARM=${WARM:-5}
exec bash bench/speed_h200.sh
