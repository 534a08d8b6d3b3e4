"""Kernels taking tuples of arrays as one argument (issue 25 item 1): a grouped GEMM (each
group's matrices have their own sizes; the group is chosen at run time) and an all-gather style
matmul (a tuple of shards, one per rank, walked with static_iter), and Triton tutorial 08's
grouped GEMM as a prepared launch. Shared by tests/test_tuple_arguments.py and
tests/gpu/test_tuple_arguments_gpu.py."""
import os
import sys

import numpy as np

import tilejit as tile
from tilejit import api


@tile.entry
def grouped_gemm(c, As, Bs, Cs, tiles_m, BM: tile.Constant[int], BN: tile.Constant[int],
                 BK: tile.Constant[int]):
    """Block b works on tile b of the concatenated row-tile space: group g = the one whose
    range of row tiles holds b (tiles_m[g] = its first tile)."""
    b = tile.bid(0)
    j = tile.bid(1)
    g = 0
    for k in range(1, len(As)):
        if b >= tiles_m.load((k,), ()):
            g = k
    i = b - tiles_m.load((g,), ())
    a, bm, cm = As[g], Bs[g], Cs[g]
    acc = tile.zeros((BM, BN), tile.float32)
    for k in range(tile.cdiv(a.shape[1], BK)):
        acc = tile.mma(a.load((i, k), (BM, BK), padding=tile.PaddingMode.ZERO),
                       bm.load((k, j), (BK, BN), padding=tile.PaddingMode.ZERO), acc)
    tile.store(cm.partition((BM, BN)), (i, j), acc.astype(cm.dtype))
    c.store(tile.zeros((1,), tile.int32))


def run_grouped_gemm(sizes, n=64, k=64, bm=32, bn=32, bk=32, seed=0):
    rng = np.random.default_rng(seed)
    As = [rng.standard_normal((m, k)).astype(np.float16) for m in sizes]
    Bs = [rng.standard_normal((k, n)).astype(np.float16) for _ in sizes]
    Cs = [np.zeros((m, n), np.float32) for m in sizes]
    tiles = [-(-m // bm) for m in sizes]
    starts = np.concatenate([[0], np.cumsum(tiles)]).astype(np.int32)
    total = int(starts[-1])
    dev_c = [api.from_numpy(x).sync() for x in Cs]
    dummy = api.zeros((total,), tile.int32).sync()
    launch = grouped_gemm(dummy.partition((1,)), tuple(api.from_numpy(a).sync() for a in As),
                          tuple(api.from_numpy(b).sync() for b in Bs),
                          tuple(tile.atomic(c) for c in dev_c),
                          api.from_numpy(starts).sync(), bm, bn, bk)
    launch.grid((total, -(-n // bn), 1)).sync()
    got = [c.to_numpy() for c in dev_c]
    want = [a.astype(np.float32) @ b.astype(np.float32) for a, b in zip(As, Bs)]
    return got, want


@tile.entry
def all_gather_matmul(z, shards, b, BM: tile.Constant[int], BN: tile.Constant[int],
                      BK: tile.Constant[int]):
    """z = concat(shards, axis=0) @ b, one block per output tile: the shard holding the block's
    rows is found with static_iter (the shards may differ in size)."""
    i, j = tile.bid(0), tile.bid(1)
    row = i * BM
    start = 0
    acc = tile.zeros((BM, BN), tile.float32)
    for s in tile.static_iter(shards):
        n_rows = s.shape[0]
        if row >= start and row < start + n_rows:
            for k in range(tile.cdiv(b.shape[0], BK)):
                part = s.slice(0, row - start, n_rows)
                acc = tile.mma(part.load((0, k), (BM, BK), padding=tile.PaddingMode.ZERO),
                               b.load((k, j), (BK, BN), padding=tile.PaddingMode.ZERO), acc)
        start = start + n_rows
    z.store(acc)


def run_all_gather_matmul(rows, k=64, n=64, bm=32, bn=32, bk=32, seed=1):
    rng = np.random.default_rng(seed)
    shards = [rng.standard_normal((r, k)).astype(np.float32) for r in rows]
    b = rng.standard_normal((k, n)).astype(np.float32)
    z = api.zeros((sum(rows), n)).sync()
    all_gather_matmul(z.partition((bm, bn)), tuple(api.from_numpy(s).sync() for s in shards),
                      api.from_numpy(b).sync(), bm, bn, bk).sync()
    return z.to_numpy(), np.concatenate(shards) @ b


def t08():
    """examples/triton_tutorials/t08_grouped_gemm.py (its kernel takes As, Bs, Cs tuples)."""
    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples",
                        "triton_tutorials")
    if here not in sys.path:
        sys.path.insert(0, here)
    import t08_grouped_gemm
    return t08_grouped_gemm


def t08_groups(sizes, seed):
    """fp16 square groups ``(A, B)`` as NumPy arrays and their float32 products."""
    rng = np.random.default_rng(seed)
    ab = [(rng.standard_normal((s, s)).astype(np.float16),
           rng.standard_normal((s, s)).astype(np.float16)) for s in sizes]
    return ab, [a.astype(np.float32) @ b.astype(np.float32) for a, b in ab]


def run_t08_prepared(sizes, tiles=(32, 32, 32), blocks=3, stream=None):
    """t08's grouped GEMM prepared once and launched twice, the inputs rewritten in place and the
    outputs cleared in between (the prepared launch reads the same device memory each time), and
    the unprepared launch of the second inputs: ``(prepared, got, want, unprepared)``, the first
    three lists of (first launch, second launch) pairs of NumPy arrays."""
    T = t08()
    s = stream if stream is not None else tile.Device(0).new_stream()
    (ab1, want1), (ab2, want2) = t08_groups(sizes, 0), t08_groups(sizes, 1)
    As = tuple(api.from_numpy(a).sync_on(s) for a, _ in ab1)
    Bs = tuple(api.from_numpy(b).sync_on(s) for _, b in ab1)
    Cs = tuple(api.empty((n, n), tile.float16).sync_on(s) for n in sizes)
    p = T.grouped_gemm(As, Bs, tuple(tile.atomic(c) for c in Cs), *tiles) \
        .grid((blocks, 1, 1)).prepare(s)
    p.launch()
    s.synchronize()
    got1 = [c.to_numpy().astype(np.float32) for c in Cs]
    for t, (a, b), c in zip(zip(As, Bs), ab2, Cs):
        api.memcpy(t[0], api.from_numpy(a)).sync_on(s)
        api.memcpy(t[1], api.from_numpy(b)).sync_on(s)
        api.fill(c, 0).sync_on(s)
    p.launch()
    s.synchronize()
    got2 = [c.to_numpy().astype(np.float32) for c in Cs]
    p.close()
    Us = tuple(api.empty((n, n), tile.float16).sync_on(s) for n in sizes)
    T.grouped_gemm(As, Bs, tuple(tile.atomic(c) for c in Us), *tiles).grid((blocks, 1, 1)) \
        .sync_on(s)
    unprepared = [c.to_numpy().astype(np.float32) for c in Us]
    return p, list(zip(got1, got2)), list(zip(want1, want2)), unprepared
