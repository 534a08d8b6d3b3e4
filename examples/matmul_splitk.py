"""Split-K matmul for skinny products (M = 16-256 rows against a large K x N matrix).

    python examples/matmul_splitk.py

With M = 16 and N = 8192, 128-wide column tiles give 64 blocks: half of an H100's SMs stream the
whole of B while the rest idle. Splitting K into SPLIT parts gives SPLIT times as many blocks;
each writes a float32 partial tile into a (SPLIT, M, N) workspace and a second kernel sums the
parts (in a fixed order: the result does not depend on timing) and rounds to C's dtype. The
workspace is SPLIT * M * N * 4 bytes, small next to B for skinny M.

`matmul_splitk_fused` does it in one launch: the last block of each output tile to finish (an
atomic arrival counter, as in attention_decode.py's ``decode_fused``) sums the tile's slices.
"""
import sys

import numpy as np

import tilejit as tile
from tilejit import api
from tilejit.runtime import current_backend

from matmul import k_range_product


@tile.function
def slice_product(a, b, s, splits, bm, bn, BM, BN, BK):
    """The float32 tile (bm, bn) of A[:, Ks] @ B[Ks, :] for the s-th of ``splits`` slices of K
    (whole K tiles each)."""
    k_tiles = tile.cdiv(a.shape[1], BK)
    per = tile.cdiv(k_tiles, splits)
    return k_range_product(a, b, bm, bn, s * per, min(s * per + per, k_tiles), BM, BN, BK)


@tile.entry
def matmul_partial(ws, a, b, BK: tile.Constant[int]):
    """ws[s] = A[:, Ks] @ B[Ks, :] for the s-th of ws.shape[0] slices of K (grid axis 0)."""
    _, BM, BN = ws.shape
    s, bm, bn = ws.block
    acc = slice_product(a, b, s, tile.num_blocks(0), bm, bn, BM, BN, BK)
    ws.store(acc.reshape((1, BM, BN)))


@tile.entry
def sum_partials(c, ws):
    """C = sum over s of ws[s], rounded to C's dtype."""
    BM, BN = c.shape
    bm, bn = c.block
    acc = tile.zeros((BM, BN), tile.float32)
    for s in range(ws.shape[0]):
        acc += ws.load((s, bm, bn), (1, BM, BN)).reshape((BM, BN))
    c.store(acc.astype(c.dtype))


@tile.entry
def matmul_splitk_fused(c, ws, arrived, a, b, BM: tile.Constant[int], BN: tile.Constant[int],
                        BK: tile.Constant[int]):
    """Split-K in one launch: block (s, i, j) writes slice s of tile (i, j) into ``ws[s]``, and
    the last of the tile's blocks to arrive sums the slices into C (in a fixed order, so the
    result does not depend on timing). ``c``, ``ws`` (SPLIT, M, N) float32 and ``arrived``
    (one int32 per output tile, zero on entry and left zero) are writable; grid (SPLIT, M / BM,
    N / BN)."""
    s, i, j = tile.bid(0), tile.bid(1), tile.bid(2)
    splits = tile.num_blocks(0)
    acc = slice_product(a, b, s, splits, i, j, BM, BN, BK)
    parts = ws.partition((1, BM, BN))
    tile.store(parts, (s, i, j), acc.reshape((1, BM, BN)))
    t = i * tile.num_blocks(2) + j
    # ACQ_REL (the default): this block's slice is visible before its arrival counts, and the
    # last block sees every other block's slice after it
    if tile.atomic_add(arrived, t, 1) == splits - 1:
        total = tile.zeros((BM, BN), tile.float32)
        for q in range(splits):
            total += parts.load((q, i, j)).reshape((BM, BN))
        tile.store(c.partition((BM, BN)), (i, j), total.astype(c.dtype))
        tile.atomic_xchg(arrived, t, 0)                  # ready for the next launch


def splitk_fused(c, a, b, ws, arrived, tile_mn, bk):
    """The one launch of ``matmul_splitk_fused`` for C = A @ B through ``ws`` (SPLIT, M, N)
    float32 and ``arrived`` (at least (M / BM) * (N / BN) int32 zeros)."""
    bm, bn = tile_mn
    m, n = c.shape
    grid = (ws.shape[0], -(-m // bm), -(-n // bn))
    return matmul_splitk_fused(tile.atomic(c), tile.atomic(ws), tile.atomic(arrived), a, b, bm,
                               bn, bk).grid(grid)


def splitk_matmul(c, a, b, ws, tile_mn, bk, reduce_tile=None):
    """The two launches (a DeviceOp chain) for C = A @ B through workspace ``ws`` of shape
    (SPLIT, M, N) float32; ``tile_mn`` the (BM, BN) tile of the partial products."""
    bm, bn = tile_mn
    part = matmul_partial(tile.partition(ws, (1, bm, bn)), a, b, bk)
    return part.then(lambda _: sum_partials(tile.partition(c, reduce_tile or (bm, bn)), ws))


def main() -> int:
    gpu = current_backend() == "cuda"
    m, k, n = (16, 8192, 8192) if gpu else (16, 256, 96)
    split, tile_mn, bk = (4, (16, 64), 128) if gpu else (3, (16, 32), 32)
    rng = np.random.default_rng(0)
    an = rng.standard_normal((m, k)).astype(np.float16)
    bn = rng.standard_normal((k, n)).astype(np.float16)
    a, b = api.from_numpy(an).sync(), api.from_numpy(bn).sync()
    c = api.zeros((m, n), tile.float16).sync()
    ws = api.zeros((split, m, n), tile.float32).sync()
    splitk_matmul(c, a, b, ws, tile_mn, bk).sync()
    ref = an.astype(np.float32) @ bn.astype(np.float32)
    err = np.abs(c.to_numpy().astype(np.float32) - ref).max() / np.abs(ref).max()
    ok = err < 2e-2
    print(f"  two launches: {m}x{k}x{n}, {split} splits, max relative error {err:.1e} "
          f"{'ok' if ok else 'MISMATCH'}")
    c = api.zeros((m, n), tile.float16).sync()
    arrived = api.zeros((-(-m // tile_mn[0]) * -(-n // tile_mn[1]),), tile.int32).sync()
    for _ in range(2):                   # twice: the arrival counters are left zero
        splitk_fused(c, a, b, ws, arrived, tile_mn, bk).sync()
    err = np.abs(c.to_numpy().astype(np.float32) - ref).max() / np.abs(ref).max()
    ok &= bool(err < 2e-2) and not arrived.to_numpy().any()
    print(f"  one launch: max relative error {err:.1e} {'ok' if err < 2e-2 else 'MISMATCH'}")
    print(f"matmul_splitk: {m}x{k}x{n}, {split} splits, two launches and one "
          f"{'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
