#!/usr/bin/env bash
# One device call: the GPU suite, then the side-by-side benchmarks, each time-bounded; logs go
# to $OUT (the device tool brings them back). SUITE_ARGS / BENCH_ARGS narrow the runs, e.g.
# BENCH_ARGS="--only softmax,layer_norm". The whole GPU suite no longer fits one device call on
# a fresh machine (2026-11-27: > 540 s; tests/gpu alone about 530 s): SUITE_ARGS=tests/gpu
# SUITE_S=580 BENCH_S=0 first, then SUITE_ARGS="tests --ignore=tests/gpu". The slowest tests are
# listed at the end of suite.log.
source tools/gpu/session.sh > "$OUT/setup.log" 2>&1
cat "$OUT/setup.log"
t0=$(date +%s)
timeout "${SUITE_S:-400}" python3 -m pytest -m gpu -q -p no:cacheprovider --durations=25 ${SUITE_ARGS:-} \
    > "$OUT/suite.log" 2>&1
echo "suite rc=$? in $(( $(date +%s) - t0 )) s"; tail -3 "$OUT/suite.log"
if [ "${BENCH_S:-400}" = 0 ]; then exit 0; fi       # the suite only
t0=$(date +%s)
timeout "${BENCH_S:-400}" python3 benchmarks/vs_cutile.py ${BENCH_ARGS:-} > "$OUT/vs_cutile.log" 2>&1
echo "vs_cutile rc=$? in $(( $(date +%s) - t0 )) s"
timeout 60 python3 benchmarks/launch_overhead.py --batches 30 > "$OUT/launch.log" 2>&1
echo "launch rc=$?"
timeout 90 python3 benchmarks/warm_start.py --runs 5 > "$OUT/warm.log" 2>&1
echo "warm rc=$?"
