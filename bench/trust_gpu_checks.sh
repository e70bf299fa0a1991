#!/usr/bin/env bash
# Issue 9 (trust) on the H200, one call:  bash bench/trust_gpu_checks.sh
#   (carry .whl as for gpu_tests.sh; nothing else is needed: no pygls/openai on the GPU path)
# Checks, each printed as PASS/FAIL and written to $OUT/trust-device.txt:
#   1. a planted __subclasses__ escape in a ref: line runs nothing (ptxls test refuses it: exit 1,
#      the side-effect file is not created), also with a GPU present;
#   2. `sizes: 9**9**9` is refused at once;
#   3. a right kernel with a whitelisted numpy reference passes on the GPU (exit 0) and a wrong
#      one (sub instead of add) fails (exit 1): the restricted evaluator computes real references;
#   4. a reference outside the whitelist is refused without --trust and runs with it;
#   5. library kernels whose references use reshape/exp/bincount/cumsum/pad/@ pass through the
#      restricted evaluator at their full sizes;
#   6. the hostile ref/scratch suites under pytest.
# Exit 0 when every check passed; 1 when one failed; 2 when there is no GPU (CPU checks still run).
set -o pipefail
source scripts/device-env.sh
LOG="$OUT/trust-device.txt"; : > "$LOG"
say() { echo "$*" | tee -a "$LOG"; }
FAILED=0
check() {  # check NAME CONDITION-TEXT EXPECTED ACTUAL
  if [ "$3" = "$4" ]; then say "PASS $1 ($2: $4)"; else say "FAIL $1 ($2: expected $3, got $4)"; FAILED=1; fi
}
T=$(mktemp -d /tmp/ptxls-trust-XXXXXX)
say "date: $(date -u +%FT%TZ)"
say "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"

ANN='// @gputest a: in f32[n]; b: in f32[n]; c: out f32[n]; n: size'
make_ptx() {  # make_ptx FILE REF-LINE [sed-expression]
  awk -v ann="$ANN" -v ref="$2" '/^\.visible \.entry vec_add\(/ {print ann; print "// @gputest " ref} {print}' \
    examples/vec_add.ptx | sed -e "${3:-s/^//}" > "$1"
}
ptxls_test() { timeout 300 python3 -m ptxls.cli test "$@" >>"$LOG.raw" 2>&1; echo $?; }

# 1. the planted escape
make_ptx "$T/planted.ptx" "ref: c = [x for x in ().__class__.__bases__[0].__subclasses__() if x.__name__ == 'Popen'][0](['touch', '$T/PWNED'])"
rc=$(cd "$T" && ptxls_test planted.ptx)
check planted-escape "ptxls test exit code" 1 "$rc"
check planted-escape "side-effect file" absent "$([ -e "$T/PWNED" ] && echo present || echo absent)"
make_ptx "$T/planted2.ptx" "ref: c = ().__class__.__bases__[0].__subclasses__()[0].__init__.__globals__['sys'].modules['os'].system('touch $T/PWNED2')"
rc=$(cd "$T" && ptxls_test planted2.ptx)
check planted-escape-2 "ptxls test exit code" 1 "$rc"
check planted-escape-2 "side-effect file" absent "$([ -e "$T/PWNED2" ] && echo present || echo absent)"
grep -q "is not allowed" "$LOG.raw" && say "     (message: $(grep -m1 -o 'ref: attribute access[^—]*' "$LOG.raw"))"

# 2. a sizes bomb
make_ptx "$T/bomb.ptx" "ref: c = a + b; sizes: 9**9**9"
start=$(date +%s); rc=$(cd "$T" && ptxls_test bomb.ptx); took=$(( $(date +%s) - start ))
check sizes-bomb "exit code" 1 "$rc"
check sizes-bomb "answered within 30 s" yes "$([ "$took" -le 30 ] && echo yes || echo "no (${took}s)")"

# 3. the GPU path: right passes, wrong fails
make_ptx "$T/right.ptx" "ref: c = a + b"
rc=$(ptxls_test "$T/right.ptx")
if [ "$rc" = 3 ]; then
  say "STOP no CUDA device here (ptxls test exit 3): the GPU checks 3-5 need the H200"
  tail -5 "$LOG.raw" | tee -a "$LOG"
  [ "$FAILED" = 0 ] && exit 2 || exit 1
fi
check right-kernel "ptxls test exit code (whitelisted numpy ref)" 0 "$rc"
make_ptx "$T/wrong.ptx" "ref: c = a + b" "s/add.f32 /sub.f32 /"
rc=$(ptxls_test "$T/wrong.ptx")
check wrong-kernel "ptxls test exit code" 1 "$rc"

# 4. trust: a reference outside the whitelist
make_ptx "$T/trusted.ptx" "ref: c = np.array([u + v for u, v in zip(a, b)])"
rc=$(ptxls_test "$T/trusted.ptx" --sizes 0 1 255 257 3007 65536)
check untrusted-comprehension "exit code without --trust" 1 "$rc"
rc=$(ptxls_test "$T/trusted.ptx" --sizes 0 1 255 257 3007 65536 --trust)
check trusted-comprehension "exit code with --trust" 0 "$rc"

# 5. library references through the restricted evaluator, full sizes
for k in softmax_rows layernorm_rows histogram256 scan_inclusive stencil5 transpose matmul_tiled row_sum; do
  d=fewshot/kernels/$k
  [ -f "$d/kernel.ptx" ] || { say "SKIP library-$k (no $d/kernel.ptx)"; continue; }
  rc=$(ptxls_test "$d/kernel.ptx" --spec "$d/spec.json")
  check "library-$k" "ptxls test exit code" 0 "$rc"
done

# 6. the hostile suites that need no editor
if python3 -c 'import pytest, pytest_lsp' 2>/dev/null; then
  python3 -m pytest -q -p no:cacheprovider tests/test_hostile_ref.py tests/test_hostile_scratch.py 2>&1 | tail -3 | tee -a "$LOG"
  check hostile-suites "pytest" 0 "${PIPESTATUS[0]}"
else
  say "SKIP hostile-suites (pytest/pytest-lsp wheels not carried)"
fi

cp "$LOG.raw" "$OUT/trust-device-cli.txt"
say "$( [ "$FAILED" = 0 ] && echo 'ALL PASSED' || echo 'SOME FAILED' )"
exit "$FAILED"
