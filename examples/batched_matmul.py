"""Batched matmul: C[i] = A[i] @ B[i] for a stack of matrices.

    python examples/batched_matmul.py

The output partition has tiles of shape (1, BM, BN), so the grid is (batch, M tiles, N tiles)
and `c.block` gives each block its (batch, row tile, column tile). 3-D tiles are reshaped to 2-D
for `tile.mma` and back for the store.
"""
import sys

import numpy as np

import tilejit as tile
from tilejit import api
from tilejit.runtime import current_backend


@tile.entry
def batched_matmul(c, a, b, BK: tile.Constant[int]):
    _, BM, BN = c.shape
    i, bm, bn = c.block
    acc = tile.zeros((BM, BN), tile.float32)
    for k in range(tile.cdiv(a.shape[2], BK)):
        ta = a.load((i, bm, k), (1, BM, BK)).reshape((BM, BK))
        tb = b.load((i, k, bn), (1, BK, BN)).reshape((BK, BN))
        acc = tile.mma(ta, tb, acc)
    c.store(acc.astype(c.dtype).reshape((1, BM, BN)))


def main() -> int:
    batch, m, k, n = (16, 1024, 1024, 1024) if current_backend() == "cuda" else (3, 64, 96, 48)
    rng = np.random.default_rng(0)
    an = rng.standard_normal((batch, m, k)).astype(np.float16)
    bn = rng.standard_normal((batch, k, n)).astype(np.float16)
    c = api.zeros((batch, m, n), tile.float16).sync()
    tiles = (1, 128, 128) if current_backend() == "cuda" else (1, 32, 32)
    batched_matmul(c.partition(tiles), api.from_numpy(an).sync(), api.from_numpy(bn).sync(),
                   32).sync()
    ref = an.astype(np.float32) @ bn.astype(np.float32)
    err = np.abs(c.to_numpy().astype(np.float32) - ref).max() / np.abs(ref).max()
    ok = err < 2e-2
    print(f"batched_matmul: {batch}x{m}x{k}x{n}, max relative error {err:.1e} "
          f"{'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
