#!/usr/bin/env bash
# A/B of the parallel loop stores (lowering/tokens.py) on the persistent norms: the same search
# with the optimization off (old: chained stores), then on. Logs to $OUT.
ARGS=${ARGS:---only softmax4k,ln4k,rms4k}
timeout ${AB_S:-200} python3 tools/gpu/run_with.py parallel_stores=False \
    benchmarks/explore_norms.py $ARGS > "$OUT/ab_off.log" 2>&1; echo "off rc=$?"
timeout ${AB_S:-200} python3 benchmarks/explore_norms.py $ARGS > "$OUT/ab_on.log" 2>&1; echo "on rc=$?"
