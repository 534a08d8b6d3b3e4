#!/usr/bin/env bash
# A/B of the parallel loop stores on cuTile samples (ONLY="layer_norm fwd"), with both sides'
# Tile IR bytecode dumped (tar in $OUT). Run after `source tools/gpu/session.sh`.
ONLY=${ONLY:-layer_norm fwd}
for round in 1 2; do
  timeout 120 python3 tools/gpu/run_with.py parallel_stores=False benchmarks/cutile_samples.py \
      --only "$ONLY" --reps 21 > "$OUT/off$round.log" 2>&1
  echo "off rc=$?"; grep -A4 "kernel time" "$OUT/off$round.log" | tail -1
  timeout 120 python3 benchmarks/cutile_samples.py --only "$ONLY" --reps 21 > "$OUT/on$round.log" 2>&1
  echo "on rc=$?"; grep -A4 "kernel time" "$OUT/on$round.log" | tail -1
done
d=$(mktemp -d); mkdir -p $d/ct $d/tj
CUDA_TILE_DUMP_BYTECODE=$d/ct TILEJIT_DUMP=bytecode TILEJIT_DUMP_DIR=$d/tj TILEJIT_CACHE_DIR=$(mktemp -d) \
  timeout 120 python3 benchmarks/cutile_samples.py --only "$ONLY" --reps 3 > /dev/null 2>&1
tar -C $d -czf "$OUT/ir.tgz" ct tj
