#!/usr/bin/env bash
# Prepare a fresh GPU machine (the device tool's): the toolchain kit in .gpu-kit (built once with
# ../shared/tools/gpu-kit.sh .gpu-kit), the wheels in .whl (cuda-tile for side-by-side runs)
# installed to /tmp/site, and tilejit's C extension built in place. Source it from the repo root.
# GPU_KIT names another kit (e.g. .gpu-kit135, built with TILEIRAS_VERSION=13.5.37) to compare
# tileiras releases; each kit's activate.sh must unpack to its own folder.
set -u
source "${GPU_KIT:-.gpu-kit}/activate.sh"
if ls .whl/*.whl > /dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
        .whl/*.whl > /dev/null 2>&1 && export PYTHONPATH=/tmp/site
fi
inc=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['include'])")
suf=$(python3 -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
gcc -O2 -std=gnu11 -shared -fPIC -I"$inc" tilejit/csrc/*.c -o "tilejit/_native$suf" -ldl \
    || echo "NATIVE BUILD FAILED"
export PYTHONPATH=$PWD:${PYTHONPATH:-}
export TILEJIT_CACHE_DIR=/tmp/tjcache PYTHONUNBUFFERED=1
python3 -m tilejit info | grep -E "launch path|GPU|tileiras version|backend"
