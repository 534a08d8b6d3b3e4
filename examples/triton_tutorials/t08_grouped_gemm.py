"""Triton tutorial 08, grouped GEMM, in tilejit: independent products of different sizes in one
launch.

    python examples/triton_tutorials/t08_grouped_gemm.py

The tutorial passes device arrays of pointers, sizes and leading dimensions, one entry per
group, and launches a fixed number of programs (one per SM) that walk the tiles of group 0, then
group 1, ... with the grid as their stride. tilejit passes the groups as tuples of arrays
(``As``, ``Bs``, ``Cs``): ``As[g]`` with a run-time ``g`` is that group's array, with its own shape
(no pointer or stride arithmetic), and the loop is the tutorial's: a block's tile index advances
by the grid size while it lies in group g's range, then moves on to the next group.

The tutorial's TMA variant builds a tensor descriptor per group on the device; here the loads
use TMA where the layout allows it by default, and ``tma=False`` (``allow_tma=False`` on every
load, as t09 does) gives the variant without, the tutorial's pointer loads.
"""
import sys

import numpy as np

import tilejit as tile
from tilejit import api
from tilejit.runtime import current_backend


@tile.entry
def grouped_gemm(As, Bs, Cs, BM: tile.Constant[int], BN: tile.Constant[int],
                 BK: tile.Constant[int], TMA: tile.Constant[bool] = True):
    """Cs[g] = As[g] @ Bs[g] for every group g (the Cs writable: ``tile.atomic``); ``TMA=False``
    keeps the loads off the TMA unit."""
    t = tile.bid(0)                         # the tile this block works on next
    first = 0                               # group g's first tile in the global numbering
    for g in range(len(As)):
        a, b, c = As[g], Bs[g], Cs[g]
        num_n = tile.cdiv(b.shape[1], BN)
        tiles = tile.cdiv(a.shape[0], BM) * num_n
        while t < first + tiles:
            pm = (t - first) // num_n
            pn = (t - first) % num_n
            acc = tile.zeros((BM, BN), tile.float32)
            for k in range(tile.cdiv(a.shape[1], BK)):
                acc = tile.mma(a.load((pm, k), (BM, BK), allow_tma=TMA),
                               b.load((k, pn), (BK, BN), allow_tma=TMA), acc)
            tile.store(c.partition((BM, BN)), (pm, pn), acc.astype(c.dtype))
            t += tile.num_blocks(0)
        first += tiles


def group_gemm(As, Bs, tiles=(128, 128, 32), blocks=None, tma=True):
    """The products of the fp16 tensors ``As[g] @ Bs[g]`` (new fp16 tensors), with a grid of
    ``blocks`` (default: one per SM); ``tma=False``: loads without the TMA unit."""
    bm, bn, bk = tiles
    Cs = tuple(api.empty((a.shape[0], b.shape[1]), tile.float16).sync() for a, b in zip(As, Bs))
    blocks = blocks or tile.Device(0).multiprocessor_count
    grouped_gemm(tuple(As), tuple(Bs), tuple(tile.atomic(c) for c in Cs), bm, bn, bk, tma) \
        .grid((blocks, 1, 1)).sync()
    return Cs


def main() -> int:
    gpu = current_backend() == "cuda"
    sizes = [1024, 512, 256, 128] if gpu else [96, 64, 40, 17]   # square groups, as the tutorial
    tiles = (128, 128, 32) if gpu else (32, 32, 32)
    rng = np.random.default_rng(0)
    an = [rng.standard_normal((s, s)).astype(np.float16) for s in sizes]
    bn_ = [rng.standard_normal((s, s)).astype(np.float16) for s in sizes]
    As, Bs = [api.from_numpy(a).sync() for a in an], [api.from_numpy(b).sync() for b in bn_]
    ok = True
    for tma in (True, False):
        Cs = group_gemm(As, Bs, tiles, None if gpu else 5, tma)
        for s, a, b, c in zip(sizes, an, bn_, Cs):
            ref = a.astype(np.float32) @ b.astype(np.float32)
            err = np.abs(c.to_numpy().astype(np.float32) - ref).max() / np.abs(ref).max()
            ok &= bool(err < 1e-2)
            if err >= 1e-2:
                print(f"  tma={tma} group {s}x{s}: max relative error {err:.1e}")
    print(f"t08_grouped_gemm: {len(sizes)} fp16 groups {sizes} in one launch, with TMA and without "
          f"{'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
