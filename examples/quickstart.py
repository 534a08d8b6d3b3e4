"""tilejit quickstart: a vector add and a tiled matmul, checked against NumPy.

    python examples/quickstart.py

Runs on an NVIDIA GPU, or on tilejit's CPU simulator when there is none.
"""
import numpy as np

import tilejit as tile
from tilejit import api


@tile.entry
def add(z, x, y):
    """z = x + y, one (32, 64) tile per block."""
    tx = tile.load_tile_like(x, z)          # the tile of x at this block's position in z
    ty = tile.load_tile_like(y, z)
    z.store(tx + ty)


@tile.entry
def matmul(c, a, b, BK: tile.Constant[int]):
    """c = a @ b with a K loop; each block computes one (BM, BN) tile of c."""
    BM, BN = c.shape                        # the static tile shape of the partition
    bm, bn = c.block                        # this block's tile index
    acc = tile.zeros((BM, BN), tile.float32)
    for k in range(tile.cdiv(a.shape[1], BK)):
        acc = tile.mma(a.load((bm, k), (BM, BK)), b.load((k, bn), (BK, BN)), acc)
    c.store(acc)


def main():
    x = api.rand((1000, 300), seed=1).sync()         # tensors live on the device
    y = api.randn((1000, 300), seed=2).sync()
    z = api.zeros((1000, 300)).sync()
    add(z.partition((32, 64)), x, y).sync()          # grid (32, 5, 1) from the partition
    expected = x.to_numpy() + y.to_numpy()
    assert np.array_equal(z.to_numpy(), expected)
    print(f"add:    {z.shape} ok, z[0, :4] = {z.to_numpy()[0, :4]}")

    rng = np.random.default_rng(0)
    an = rng.standard_normal((200, 96)).astype(np.float16)
    bn = rng.standard_normal((96, 130)).astype(np.float16)
    c = api.zeros((200, 130)).sync()
    matmul(c.partition((64, 64)), an, bn, 32).sync()   # NumPy inputs are copied in
    ref = an.astype(np.float32) @ bn.astype(np.float32)
    err = np.abs(c.to_numpy() - ref).max()
    assert err < 1e-2, err
    print(f"matmul: {c.shape} ok, max |error| vs NumPy = {err:.2e}")
    print(f"ran on: {tile.Device(0).name}; matmul compiles so far: {matmul.stats.compiles}")


if __name__ == "__main__":
    main()
