"""Batched matmul: C[i] = A[i] @ B[i] for a stack of matrices, autotuned.

    python examples/batched_matmul.py

Block order matters more than anything else here. A (batch, M tiles, N tiles) grid runs the
blocks of many batches at once, each pulling its own A and B through L2 (0.57x torch.bmm on an
H200; cuTile's sample does the same). A 1-D grid that walks one batch at a time, GROUP row tiles
at a time, keeps the running blocks on shared tiles of A and B (0.9x and more; BENCHMARKS.md).
3-D tiles are reshaped to 2-D for `tile.mma` and back for the store.
"""
import sys

import numpy as np

import tilejit as tile
from tilejit import api
from tilejit.runtime import current_backend


@tile.entry
def batched_matmul(c, a, b, BM: tile.Constant[int], BN: tile.Constant[int],
                   BK: tile.Constant[int], GROUP: tile.Constant[int]):
    nm = tile.cdiv(a.shape[1], BM)
    nn = tile.cdiv(b.shape[2], BN)
    per = nm * nn                                   # blocks per batch
    pid = tile.bid(0)
    i = pid // per
    r = pid % per
    width = GROUP * nn
    first_m = (r // width) * GROUP
    size_m = min(nm - first_m, GROUP)
    bm = first_m + (r % width) % size_m             # GROUP row tiles share each column of B
    bn = (r % width) // size_m
    acc = tile.zeros((BM, BN), tile.float32)
    for k in range(tile.cdiv(a.shape[2], BK)):
        ta = a.load((i, bm, k), (1, BM, BK)).reshape((BM, BK))
        tb = b.load((i, k, bn), (1, BK, BN)).reshape((BK, BN))
        acc = tile.mma(ta, tb, acc)
    tile.store(c.partition((1, BM, BN)), (i, bm, bn), acc.astype(c.dtype).reshape((1, BM, BN)))


def grid(cfg, bound):
    """One block per output tile, all batches."""
    batch, m, _ = bound["a"].shape
    n = bound["b"].shape[2]
    return (batch * tile.cdiv(m, cfg.constants["BM"]) * tile.cdiv(n, cfg.constants["BN"]), 1, 1)


#: 128x256 tiles take two compute warp groups, without which tileiras spills their accumulators
#: (matmul.py: 45 against 700-750 TFLOP/s on an H200), and one block per SM
tuned_bmm = tile.autotune(
    configs=[tile.Config(BM=bm, BN=bn, BK=bk, GROUP=8, occupancy=occ,
                         num_worker_warps=8 if bm * bn > 128 * 128 else None)
             for (bm, bn, bk) in ((128, 128, 64), (128, 256, 64), (64, 128, 64), (32, 32, 32))
             for occ in (1, 2) if bm * bn <= 128 * 128 or occ == 1],
    key=["a", "b"], grid=grid)(batched_matmul)


def main() -> int:
    batch, m, k, n = (16, 2048, 2048, 2048) if current_backend() == "cuda" else (3, 64, 96, 48)
    rng = np.random.default_rng(0)
    an = rng.standard_normal((batch, m, k)).astype(np.float16)
    bn = rng.standard_normal((batch, k, n)).astype(np.float16)
    c = api.zeros((batch, m, n), tile.float16).sync()
    a_t, b_t = api.from_numpy(an).sync(), api.from_numpy(bn).sync()
    tuned_bmm(tile.atomic(c), a_t, b_t).sync()
    ref = an.astype(np.float32) @ bn.astype(np.float32)
    err = np.abs(c.to_numpy().astype(np.float32) - ref).max() / np.abs(ref).max()
    ok = err < 2e-2
    print(f"batched_matmul: {batch}x{m}x{k}x{n}, {tuned_bmm.best_config(tile.atomic(c), a_t, b_t)}, "
          f"max relative error {err:.1e} {'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
