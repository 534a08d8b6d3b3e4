#!/usr/bin/env bash
# One device call: the GPU suite, then the side-by-side benchmarks, each time-bounded; logs go
# to $OUT (the device tool brings them back). SUITE_ARGS / BENCH_ARGS narrow the runs, e.g.
# BENCH_ARGS="--only softmax,layer_norm".
source tools/gpu/session.sh > "$OUT/setup.log" 2>&1
cat "$OUT/setup.log"
t0=$(date +%s)
timeout "${SUITE_S:-400}" python3 -m pytest -m gpu -q -p no:cacheprovider ${SUITE_ARGS:-} \
    > "$OUT/suite.log" 2>&1
echo "suite rc=$? in $(( $(date +%s) - t0 )) s"; tail -3 "$OUT/suite.log"
t0=$(date +%s)
timeout "${BENCH_S:-400}" python3 benchmarks/vs_cutile.py ${BENCH_ARGS:-} > "$OUT/vs_cutile.log" 2>&1
echo "vs_cutile rc=$? in $(( $(date +%s) - t0 )) s"
timeout 60 python3 benchmarks/launch_overhead.py --batches 30 > "$OUT/launch.log" 2>&1
echo "launch rc=$?"
timeout 90 python3 benchmarks/warm_start.py --runs 5 > "$OUT/warm.log" 2>&1
echo "warm rc=$?"
