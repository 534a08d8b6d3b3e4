"""SAXPY in place: y = a * x + y, with the output partition read and written back.

    python examples/saxpy.py

`y.load()` reads the block's own tile of the output partition before `y.store(...)` writes it;
the scalar `a` is an ordinary argument (a float32 inside the kernel).
"""
import sys

import numpy as np

import tilejit as tile
from tilejit import api
from tilejit.runtime import current_backend


@tile.entry
def saxpy(y, x, a):
    y.store(a * tile.load_tile_like(x, y) + y.load())


def main() -> int:
    n = 1 << 24 if current_backend() == "cuda" else 10_000
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    y0 = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    y = api.from_numpy(y0).sync()
    saxpy(y.partition((2048,)), api.from_numpy(x).sync(), 2.5).sync()
    ok = np.allclose(y.to_numpy(), np.float32(2.5) * x + y0, rtol=1e-6, atol=1e-6)
    print(f"saxpy: n={n} {'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
