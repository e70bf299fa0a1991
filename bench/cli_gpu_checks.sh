#!/usr/bin/env bash
# The stranger's first ten minutes on a machine WITH a GPU (H200), one call:
#   bash bench/cli_gpu_checks.sh     (device run tool; carry .whl = openai, pygls, pytest-lsp … wheels)
# Checks what a no-GPU CI machine cannot: the CLI's plain-text / Markdown / JSON output of a real
# GPU test table, its exit codes, doctor's GPU line, and the status bar data the server sends
# (GPU name; a file without .target takes its arch from the GPU). Results land in $OUT and
# bench/results/cli-gpu-checks/h200-<date>.txt; exits non-zero when a check fails.
set -o pipefail
source scripts/device-env.sh
LOG="$OUT/stranger.txt"; : > "$LOG"
failed=0
say() { echo "$*" | tee -a "$LOG"; }
check() {  # check NAME CONDITION-COMMAND...
  local name=$1; shift
  if "$@" >>"$LOG" 2>&1; then say "PASS  $name"; else say "FAIL  $name"; failed=1; fi
}
ptxls() { python3 -m ptxls.cli "$@"; }

{
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader 2>&1
  python3 --version
  ptxas --version 2>&1 | tail -1
} | tee -a "$LOG"

if ! nvidia-smi -L >/dev/null 2>&1; then
  say "no GPU here (nvidia-smi finds none): the checks below expect one and will fail; run this on the H200"
fi
say "== ptxls --version / doctor"
ptxls --version 2>&1 | tee -a "$LOG"
ptxls doctor > "$OUT/doctor.txt" 2>&1; rc=$?
cat "$OUT/doctor.txt" | tee -a "$LOG"
check "doctor exits 0" test "$rc" = 0
check "doctor names the GPU (no 'no CUDA device')" bash -c "grep -q '^  GPU  *NVIDIA' '$OUT/doctor.txt'"
ptxls doctor --format json > "$OUT/doctor.json" 2>>"$LOG"
check "doctor --format json: gpu.available" python3 -c "import json,sys; d=json.load(open('$OUT/doctor.json')); sys.exit(0 if d['gpu']['available'] else 1)"

say "== ptxls test examples/vec_add.ptx, three formats"
ptxls test examples/vec_add.ptx > "$OUT/test.txt" 2>"$OUT/test.err"; rc=$?
cat "$OUT/test.txt" | tee -a "$LOG"
check "test exits 0 (pass)" test "$rc" = 0
check "text: no Markdown marks" bash -c "! grep -q '[*|\`]' '$OUT/test.txt'"
check "text: the case table is aligned columns with a header" bash -c "grep -Eq '^ *n +result +max rel err +time +ref time$' '$OUT/test.txt'"
ptxls test examples/vec_add.ptx --format markdown > "$OUT/test.md" 2>/dev/null
check "markdown: the hover's table" bash -c "grep -q '^| n | result |' '$OUT/test.md' && grep -q '^\*\*GPU test vec_add: PASS\*\*' '$OUT/test.md'"
ptxls test examples/vec_add.ptx --format json > "$OUT/test.json" 2>/dev/null
check "json: status pass, cases present" python3 -c "import json,sys; [r]=json.load(open('$OUT/test.json')); sys.exit(0 if r['status']=='pass' and len(r['cases'])>=6 else 1)"
check "progress only on stderr, only in text mode" bash -c "test -s '$OUT/test.err' && ! grep -q '…' '$OUT/test.txt'"
ptxls test examples/gpu/bad/writes_nothing.ptx --ref examples/vec_add.cu > "$OUT/test-bad.txt" 2>&1; rc=$?
cat "$OUT/test-bad.txt" >> "$LOG"
check "a kernel that writes nothing exits 1" test "$rc" = 1

say "== ptxls usage (arch from the GPU when the file has no .target)"
sed '/^\.target/d' examples/vec_add.ptx > "$OUT/no_target.ptx"
ptxls usage examples/vec_add.ptx | tee "$OUT/usage.txt" | tee -a "$LOG"
check "usage: plain text" bash -c "grep -q '^kernel vec_add' '$OUT/usage.txt' && ! grep -q '\*\*' '$OUT/usage.txt'"

say "== status bar data from the server (ptxls/status, ptxls/fileStatus)"
python3 - "$OUT" <<'PY' 2>&1 | tee -a "$LOG"
import asyncio, json, sys
from pathlib import Path
out = Path(sys.argv[1])
from ptxls.toolchain.arch import local_gpu_arch
from ptxls.toolchain.gpu_probe import probe_gpu
from ptxls.server.app import create_server
from ptxls.server.features.status import file_status_payload, status_payload
from ptxls.frontend.ptx import scan_header
server = create_server()
status = status_payload(server)
no_target = (out / "no_target.ptx").read_text()
file_status = file_status_payload(server, "file:///no_target.ptx", scan_header(no_target))
print(json.dumps({"status": status, "fileStatus": file_status}, indent=2))
gpu = probe_gpu()
ok = status["gpu"] == gpu.name and file_status["archFrom"] == "GPU" and file_status["arch"] == local_gpu_arch()
print("STATUS-OK" if ok else "STATUS-MISMATCH")
PY
check "status: the GPU's name, and arch from the GPU for a file without .target" grep -q STATUS-OK "$LOG"

# Results are kept only from a machine with a GPU (a CPU machine's failures are expected).
KEEP=bench/results/cli-gpu-checks/h200-$(date -u +%F).txt
if nvidia-smi -L >/dev/null 2>&1; then mkdir -p "$(dirname "$KEEP")" && cp "$LOG" "$KEEP"; fi
say "== $([[ $failed == 0 ]] && echo 'all checks passed' || echo 'SOME CHECKS FAILED') (log: $LOG, $KEEP)"
exit $failed
