"""Profile the host side of a cached @tile.entry launch (cProfile, top functions by own time).

    python benchmarks/profile_launch.py

Without a GPU it says so and exits 0.
"""
import cProfile
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

import tilejit as tile  # noqa: E402
from tilejit import api  # noqa: E402
from kernels import vadd  # noqa: E402


def main() -> int:
    from tilejit.runtime import backend
    if backend.current() != backend.CUDA:
        print(f"profile_launch: no GPU ({backend.reason()}); nothing to measure")
        return 0
    dev = tile.Device(0)
    s = dev.new_stream()
    x = api.from_numpy(np.ones(128, np.float32)).sync_on(s)
    z = api.zeros((128,)).sync_on(s)
    vadd(z.partition((128,)), x, x).sync_on(s)
    op = vadd(z.partition((128,)), x, x)
    for name, fn in (("reused op submit_on", lambda: op.submit_on(s)),
                     ("new partition + op + submit_on",
                      lambda: vadd(z.partition((128,)), x, x).submit_on(s))):
        for _ in range(500):
            fn()
        s.synchronize()
        t0 = time.perf_counter()
        for _ in range(2000):
            fn()
        print(f"{name}: {(time.perf_counter() - t0) / 2000 * 1e6:.2f} us/launch")
        s.synchronize()
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(2000):
            fn()
        pr.disable()
        s.synchronize()
        pstats.Stats(pr).sort_stats("tottime").print_stats(16)
    return 0


if __name__ == "__main__":
    sys.exit(main())
