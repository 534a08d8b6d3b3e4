"""Triton tutorial 01, vector addition, in tilejit: z = x + y over a ragged length.

    python examples/triton_tutorials/t01_vector_add.py

Triton's program computes its offsets ``pid * BLOCK + arange(BLOCK)``, masks the ones past the
end and loads through pointers. Here the output partition does all three: its tile shape fixes the
grid (one block per BLOCK elements), `load_tile_like` reads the inputs' tile at the block's
position, and the last block's store is clipped to the array, so the ragged end needs no mask.
"""
import sys

import numpy as np

import tilejit as tile
from tilejit import api
from tilejit.runtime import current_backend

BLOCK = 1024


@tile.entry
def add(z, x, y):
    z.store(tile.load_tile_like(x, z) + tile.load_tile_like(y, z))


def main() -> int:
    n = 98_432 if current_backend() != "cuda" else 1 << 26     # the tutorial checks 98432
    x = api.rand((n,), seed=0).sync()
    y = api.rand((n,), seed=1).sync()
    z = api.empty((n,)).sync()
    add(z.partition((BLOCK,)), x, y).sync()
    ok = np.array_equal(z.to_numpy(), x.to_numpy() + y.to_numpy())
    print(f"t01_vector_add: n={n} {'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
