"""Reductions and scans on each axis of a 2-D tensor whose extents are not multiples of the tile.

Axis-1 reductions: one block per row tile, the row fits in one tile. Axis-0 reductions: one block
per column tile, looping over row tiles (a K-style loop with a carried accumulator).
"""
import numpy as np

import tilejit as tile

from . import Case, In, Out, rand

NEG_INF = float("-inf")


def sum_axis1(z, x, BN: tile.Constant[int]):
    (BM,) = z.shape
    t = x.load((tile.bid(0), 0), (BM, BN))
    z.store(tile.sum(t, axis=1))


def sum_axis0(z, x, BM: tile.Constant[int]):
    (BN,) = z.shape
    j = tile.bid(0)
    acc = tile.zeros((BN,), tile.float32)
    for i in range(tile.cdiv(x.shape[0], BM)):
        acc += tile.sum(x.load((i, j), (BM, BN)), axis=0)
    z.store(acc)


def max_axis1(z, x, BN: tile.Constant[int]):
    (BM,) = z.shape
    t = x.load((tile.bid(0), 0), (BM, BN), padding=tile.PaddingMode.NEG_INF)
    z.store(t.max(axis=1))


def max_axis0(z, x, BM: tile.Constant[int]):
    (BN,) = z.shape
    j = tile.bid(0)
    acc = tile.full((BN,), NEG_INF, tile.float32)
    for i in range(tile.cdiv(x.shape[0], BM)):
        t = x.load((i, j), (BM, BN), padding=tile.PaddingMode.NEG_INF)
        acc = tile.maximum(acc, tile.max(t, axis=0))
    z.store(acc)


def argmax_axis1(z, x, BN: tile.Constant[int]):
    (BM,) = z.shape
    t = x.load((tile.bid(0), 0), (BM, BN), padding=tile.PaddingMode.NEG_INF)
    z.store(tile.argmax(t, axis=1))


def argmax_axis0(z, x, BM: tile.Constant[int]):
    """Running (value, index) pair across row tiles; ties keep the first index like NumPy."""
    (BN,) = z.shape
    j = tile.bid(0)
    best = tile.full((BN,), NEG_INF, tile.float32)
    best_i = tile.zeros((BN,), tile.int32)
    for i in range(tile.cdiv(x.shape[0], BM)):
        t = x.load((i, j), (BM, BN), padding=tile.PaddingMode.NEG_INF)
        m = tile.max(t, axis=0)
        a = tile.argmax(t, axis=0) + i * BM
        better = m > best
        best = tile.where(better, m, best)
        best_i = tile.where(better, a, best_i)
    z.store(best_i)


def sum_all_int(z, x, BN: tile.Constant[int]):
    """Sum of int8 data accumulates in int32; axis=None gives a rank-0 tile."""
    (one,) = z.shape
    s = tile.sum(x.load((0,), (BN,)))
    z.store(tile.broadcast_to(s, (one,)))


def cumsum_rows(z, x):
    BM, BN = z.shape
    t = x.load((tile.bid(0), 0), (BM, BN))
    z.store(tile.cumsum(t, axis=1))


def _ref_argmax0(z, x, BM):
    return {"z": np.argmax(x, axis=0).astype(np.int32)}


CASES = [
    Case("sum_axis1", sum_axis1,
         lambda r: dict(z=Out(np.zeros(50, np.float32), (16,)), x=In(rand(r, (50, 100)))),
         lambda z, x, BN: {"z": x.sum(axis=1).astype(np.float32)},
         constants={"BN": 128}, rtol=1e-5, atol=1e-5),
    Case("sum_axis0", sum_axis0,
         lambda r: dict(z=Out(np.zeros(70, np.float32), (32,)), x=In(rand(r, (150, 70)))),
         lambda z, x, BM: {"z": x.sum(axis=0).astype(np.float32)},
         constants={"BM": 64}, rtol=1e-5, atol=1e-5, shape="for_runtime_bound"),
    Case("max_axis1", max_axis1,
         lambda r: dict(z=Out(np.zeros(50, np.float32), (16,)), x=In(rand(r, (50, 100)))),
         lambda z, x, BN: {"z": x.max(axis=1)}, constants={"BN": 128}),
    Case("max_axis0", max_axis0,
         lambda r: dict(z=Out(np.zeros(70, np.float32), (32,)), x=In(rand(r, (150, 70)))),
         lambda z, x, BM: {"z": x.max(axis=0)}, constants={"BM": 64}),
    Case("argmax_axis1", argmax_axis1,
         lambda r: dict(z=Out(np.zeros(50, np.int32), (16,)), x=In(rand(r, (50, 100)))),
         lambda z, x, BN: {"z": np.argmax(x, axis=1).astype(np.int32)}, constants={"BN": 128}),
    Case("argmax_axis0", argmax_axis0,
         lambda r: dict(z=Out(np.zeros(70, np.int32), (32,)), x=In(rand(r, (150, 70)))),
         _ref_argmax0, constants={"BM": 64}),
    Case("sum_all_int8", sum_all_int,
         lambda r: dict(z=Out(np.zeros(1, np.int32), (1,)), x=In(rand(r, (200,), np.int8, -100,
                                                                        100))),
         lambda z, x, BN: {"z": np.array([x.astype(np.int32).sum()], np.int32)},
         constants={"BN": 256}),
    Case("cumsum_rows", cumsum_rows,
         lambda r: dict(z=Out(np.zeros((20, 60), np.float32), (8, 64)), x=In(rand(r, (20, 60)))),
         lambda z, x: {"z": np.cumsum(x, axis=1).astype(np.float32)}, rtol=1e-5, atol=1e-5),
]
