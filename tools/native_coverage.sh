#!/bin/bash
# Line coverage of the C launch path (tilejit/csrc) under the CPU test suite, with gcov.
#
#   tools/native_coverage.sh [pytest args...]     (default: the whole CPU suite)
#
# Builds tilejit/_native*.so with --coverage (objects in build/cov), runs pytest, prints the
# per-file and total line coverage, then rebuilds the normal extension (-O2).
set -e
cd "$(dirname "$0")/.."
inc=$(python -c "import sysconfig; print(sysconfig.get_paths()['include'])")
suf=$(python -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
rm -rf build/cov && mkdir -p build/cov/report
for f in tilejit/csrc/*.c; do
    gcc -O0 --coverage -std=gnu11 -fPIC -I"$inc" -c "$f" -o "build/cov/$(basename "${f%.c}").o"
done
gcc --coverage -shared build/cov/*.o -o "tilejit/_native$suf" -ldl
python -m pytest -q -p no:cacheprovider "${@:-tests}" || true
gcov -o build/cov tilejit/csrc/*.c > build/cov/report/summary.txt 2>/dev/null
mv ./*.gcov build/cov/report/ 2>/dev/null || true
python - <<'PY'
import re
text = open("build/cov/report/summary.txt").read()
total = covered = 0
for f, pct, n in re.findall(r"File '([^']*csrc/[^']*)'\nLines executed:([\d.]+)% of (\d+)", text):
    n = int(n)
    total += n
    covered += round(float(pct) * n / 100)
    print(f"{f.split('/')[-1]:12s} {float(pct):6.2f}% of {n}")
print(f"{'TOTAL':12s} {100 * covered / total:6.2f}% of {total} lines (annotated: build/cov/report)")
PY
gcc -O2 -std=gnu11 -shared -fPIC -I"$inc" tilejit/csrc/*.c -o "tilejit/_native$suf" -ldl
