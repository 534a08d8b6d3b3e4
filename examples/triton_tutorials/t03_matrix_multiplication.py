"""Triton tutorial 03, matrix multiplication with grouped ordering, in tilejit.

    python examples/triton_tutorials/t03_matrix_multiplication.py

One block per (BM, BN) tile of C, a K loop of `tile.mma` accumulating in float32, and the
tutorial's grouped ordering: block ids walk GROUP row tiles down each column of tiles, so the
blocks running at once share tiles of B (and of A) in L2. The ordering and the K loop are the
gallery's helpers (`grouped_position`, `tile_product` in examples/matmul.py); the tutorial's
optional fused activation (leaky ReLU) is a compile-time branch. Where Triton builds pointer
tiles and masks for A and B, `a.load((pm, k), (BM, BK))` loads tile (pm, k) with zero padding at
the edges. The tutorial's check: 512 x 512 fp16 against torch.matmul (NumPy here).
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # examples/

import tilejit as tile  # noqa: E402
from tilejit import api  # noqa: E402
from tilejit.runtime import current_backend  # noqa: E402

from matmul import grouped_position, tile_product  # noqa: E402


@tile.entry
def matmul_grouped(c, a, b, BM: tile.Constant[int], BN: tile.Constant[int],
                   BK: tile.Constant[int], GROUP: tile.Constant[int],
                   LEAKY_RELU: tile.Constant[bool]):
    """C = act(A @ B); ``c`` a writable tensor (``tile.atomic``), one block per tile of C."""
    num_m = tile.cdiv(a.shape[0], BM)
    num_n = tile.cdiv(b.shape[1], BN)
    pm, pn = grouped_position(tile.bid(0), num_m, num_n, GROUP)
    acc = tile_product(a, b, pm, pn, BM, BN, BK)
    if LEAKY_RELU:
        acc = tile.where(acc >= 0, acc, 0.01 * acc)
    tile.store(c.partition((BM, BN)), (pm, pn), acc.astype(c.dtype))


def matmul(a, b, activation=False, tiles=(128, 128, 64), group=8):
    """A @ B (fp16 tensors) as a new fp16 tensor."""
    (m, k), n = a.shape, b.shape[1]
    bm, bn, bk = tiles
    c = api.empty((m, n), tile.float16).sync()
    grid = (tile.cdiv(m, bm) * tile.cdiv(n, bn), 1, 1)
    matmul_grouped(tile.atomic(c), a, b, bm, bn, bk, group, activation).grid(grid).sync()
    return c


def main() -> int:
    gpu = current_backend() == "cuda"
    m, k, n = (512, 512, 512) if gpu else (96, 64, 80)
    tiles = (128, 128, 64) if gpu else (32, 32, 32)
    rng = np.random.default_rng(0)
    an = rng.standard_normal((m, k)).astype(np.float16)
    bn_ = rng.standard_normal((k, n)).astype(np.float16)
    a, b = api.from_numpy(an).sync(), api.from_numpy(bn_).sync()
    ref = an.astype(np.float32) @ bn_.astype(np.float32)
    ok = True
    for act, want in ((False, ref), (True, np.where(ref >= 0, ref, 0.01 * ref))):
        got = matmul(a, b, act, tiles, group=8 if gpu else 2).to_numpy().astype(np.float32)
        good = np.allclose(got, want, rtol=1e-2, atol=1e-2)
        ok &= good
        if not good:
            print(f"  leaky_relu={act}: max error {np.abs(got - want).max():.2e}")
    print(f"t03_matrix_multiplication: fp16 {m}x{k}x{n}, grouped ordering, with and without "
          f"leaky ReLU {'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
