"""Matrix multiply for fp16, bf16 and float32 (on tf32 tensor cores), with the tile shape and
occupancy chosen by `tile.autotune`.

    python examples/matmul.py

Each block computes one (BM, BN) tile of C with a K loop of `tile.mma`; a branch on `a.dtype`
(decided when the kernel is specialized) sends float32 through tf32. The first call for a
given shape times every config on the GPU and remembers the winner (also on disk, next to the
cubin cache); on the simulator the first config that compiles is used.
"""
import sys

import numpy as np

import tilejit as tile
from tilejit import api
from tilejit.runtime import current_backend

CONFIGS = [tile.Config(tile=(128, 128), BK=64),
           tile.Config(tile=(128, 128), BK=64, occupancy=2),
           tile.Config(tile=(128, 64), BK=64, occupancy=2),
           tile.Config(tile=(64, 64), BK=32, occupancy=4)]


@tile.autotune(configs=CONFIGS, key=["a", "b"])
@tile.entry
def matmul(c, a, b, BK: tile.Constant[int]):
    """fp16 / bf16 inputs, or float32 rounded to tf32 for the tensor cores; float32 accumulation."""
    BM, BN = c.shape
    bm, bn = c.block
    acc = tile.zeros((BM, BN), tile.float32)
    for k in range(tile.cdiv(a.shape[1], BK)):
        ta = a.load((bm, k), (BM, BK))
        tb = b.load((k, bn), (BK, BN))
        if a.dtype == tile.float32:             # decided per specialization, before typing
            ta, tb = ta.astype(tile.tfloat32), tb.astype(tile.tfloat32)
        acc = tile.mma(ta, tb, acc)
    c.store(acc.astype(c.dtype))


def main() -> int:
    m, k, n = (4096, 4096, 4096) if current_backend() == "cuda" else (96, 64, 80)
    rng = np.random.default_rng(0)
    ok = True
    for dtype, tol in ((tile.float16, 2e-2), (tile.bfloat16, 3e-2), (tile.float32, 1e-2)):
        a32 = rng.standard_normal((m, k)).astype(np.float32)
        b32 = rng.standard_normal((k, n)).astype(np.float32)
        a = api.from_numpy(a32, dtype).sync()
        b = api.from_numpy(b32, dtype).sync()
        c = api.zeros((m, n), dtype).sync()
        matmul(c, a, b).sync()
        ref = a.to_numpy().astype(np.float32) @ b.to_numpy().astype(np.float32)
        err = np.abs(c.to_numpy().astype(np.float32) - ref).max() / np.abs(ref).max()
        good = err < tol
        ok &= good
        print(f"  {dtype.name:9s} {m}x{k}x{n}: max relative error {err:.1e}, "
              f"config {matmul.best_config(c, a, b)}")
    print(f"matmul: fp16, bf16, tf32 {'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
