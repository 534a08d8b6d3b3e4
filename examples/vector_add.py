"""Vector add: z = x + y over a length that is not a multiple of the tile.

    python examples/vector_add.py

The output partition decides the grid (one block per 1024-element tile); the last block's
store is masked, so the ragged end needs no special code. Runs on a GPU, or on the CPU
simulator (at a smaller size) when there is none.
"""
import sys

import numpy as np

import tilejit as tile
from tilejit import api
from tilejit.runtime import current_backend


@tile.entry
def vector_add(z, x, y):
    z.store(tile.load_tile_like(x, z) + tile.load_tile_like(y, z))


def main() -> int:
    n = 50_000_003 if current_backend() == "cuda" else 100_003
    x = api.rand((n,), seed=1).sync()
    y = api.rand((n,), seed=2).sync()
    z = api.empty((n,)).sync()
    vector_add(z.partition((1024,)), x, y).sync()
    ok = np.array_equal(z.to_numpy(), x.to_numpy() + y.to_numpy())
    print(f"vector_add: n={n} {'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
