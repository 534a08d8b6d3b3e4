#!/usr/bin/env bash
# A/B of partition views made next to each loop (tileir/optimize.py VIEWS_PER_LOOP) on cuTile
# samples (ONLY, default layer_norm,softmax,fmha,transpose), off then on, twice.
# Run after `source tools/gpu/session.sh`; logs to $OUT.
ONLY=${ONLY:-layer_norm,softmax,fmha,transpose}
for round in 1 2; do
  for v in False True; do
    timeout 120 python3 tools/gpu/run_with.py tilejit.tileir.optimize.VIEWS_PER_LOOP=$v \
        benchmarks/cutile_samples.py --only "$ONLY" --reps 15 > "$OUT/views_${v}_$round.log" 2>&1
    echo "views=$v round $round rc=$?"
    grep -A12 "kernel time" "$OUT/views_${v}_$round.log" | grep "^| [a-z]"
  done
done
