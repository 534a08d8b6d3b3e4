#!/usr/bin/env bash
# A/B of the read-only token (lowering/tokens.py MemoryTokens.read_only_token): every cuTile
# sample, then the quick vendor rows of VENDOR (default attention,matmul,softmax), off then on.
# Run after `source tools/gpu/session.sh`; logs to $OUT.
for v in False True; do
  timeout ${SAMPLES_S:-150} python3 tools/gpu/run_with.py read_only_token=$v benchmarks/cutile_samples.py --reps 11 > "$OUT/samples_$v.log" 2>&1
  echo "samples $v rc=$?"
done
for v in False True; do
  timeout ${VENDOR_S:-150} python3 tools/gpu/run_with.py read_only_token=$v benchmarks/vendor.py --quick --only ${VENDOR:-attention,matmul,softmax} \
      --reps 11 > "$OUT/vendor_$v.log" 2>&1
  echo "vendor $v rc=$?"
done
