"""Transpose: out = x.T, two ways.

    python examples/transpose.py

`x.load(index, shape, order=(1, 0))` reads a tile of `x.T` straight from memory through a
permuted view (no data movement in registers); `t.T` transposes a loaded tile in registers.
tilejit turns a `.T` of a freshly loaded tile into the first form by itself, so both compile to
a transposed load.
"""
import sys

import numpy as np

import tilejit as tile
from tilejit import api
from tilejit.runtime import current_backend


@tile.entry
def transpose_view(out, x):
    """Tile (i, j) of out is tile (i, j) of x.T."""
    out.store(x.load(out.block, out.shape, order=(1, 0)))


@tile.entry
def transpose_registers(out, x):
    """The same, written as a register transpose of x's tile (j, i)."""
    BM, BN = out.shape
    i, j = out.block
    out.store(x.load((j, i), (BN, BM)).T)


def main() -> int:
    m, n = (8192, 4096) if current_backend() == "cuda" else (200, 136)
    x = api.rand((m, n), seed=3).sync()
    ok = True
    for kernel in (transpose_view, transpose_registers):
        out = api.zeros((n, m)).sync()
        kernel(out.partition((64, 64)), x).sync()
        good = np.array_equal(out.to_numpy(), x.to_numpy().T)
        ok &= good
        print(f"  {kernel.__name__}: {'ok' if good else 'MISMATCH'}")
    print(f"transpose: {m}x{n} {'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
