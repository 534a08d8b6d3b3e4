#!/usr/bin/env bash
# A/B of the read-only token (lowering/tokens.py MemoryTokens.read_only_token): every cuTile
# sample, then the quick vendor rows of VENDOR (default attention,matmul,softmax), off then on.
# Run after `source tools/gpu/session.sh`; logs to $OUT.
wrap() {   # $1: True/False, then the script and its arguments
  local flag=$1; shift
  python3 -c "import runpy, sys
from tilejit.lowering.tokens import MemoryTokens
MemoryTokens.read_only_token = $flag
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name='__main__')" "$@"
}
for v in False True; do
  timeout ${SAMPLES_S:-150} wrap $v benchmarks/cutile_samples.py --reps 11 > "$OUT/samples_$v.log" 2>&1
  echo "samples $v rc=$?"
done
for v in False True; do
  timeout ${VENDOR_S:-150} wrap $v benchmarks/vendor.py --quick --only ${VENDOR:-attention,matmul,softmax} \
      --reps 11 > "$OUT/vendor_$v.log" 2>&1
  echo "vendor $v rc=$?"
done
