"""Device helpers (``@tile.function``, inlined; helpers calling helpers; defaults; tuple
returns), ``tile.reduce`` with a helper combiner, ``static_assert``, constant tuples."""
import math

import numpy as np

import tilejit as tile

from . import Case, In, Out, Scalar, rand

NEG_INF = float("-inf")


@tile.function
def _square(t):
    return t * t


@tile.function
def _sum_of_squares(t, axis=1):
    return tile.sum(_square(t), axis=axis, keepdims=True)


@tile.function
def _moments(t, n):
    s = tile.sum(t, axis=1, keepdims=True)
    q = _sum_of_squares(t)
    mean = s / n
    return mean, q / n - mean * mean


@tile.function
def _clamp(t, lo=0.0, hi=1.0):
    if lo > hi:
        lo, hi = hi, lo
    return tile.minimum(tile.maximum(t, lo), hi)


@tile.function
def _max2(a, b):
    return tile.maximum(a, b)


@tile.function
def _min2(a, b):
    return tile.minimum(a, b)


def helper_moments(z, x):
    BM, BN = z.shape
    t = x.load((tile.bid(0), 0), (BM, BN))
    mean, var = _moments(t, x.shape[1])
    z.store(tile.broadcast_to(var, (BM, BN)) + mean)


def helper_clamp(z, x):
    t = tile.load_tile_like(x, z)
    z.store(_clamp(t) + _clamp(t, -0.5, hi=0.25))


def reduce_custom(z, x, BN: tile.Constant[int]):
    (BM,) = z.shape
    t = x.load((tile.bid(0), 0), (BM, BN), padding=tile.PaddingMode.NEG_INF)
    z.store(tile.reduce(t, 1, _max2, NEG_INF))


def reduce_inline_identity(z, x, n, BN: tile.Constant[int]):
    """Identities written inline (-math.inf, float("inf")) fold to constants; float(n) of a
    runtime int is a scalar conversion."""
    (BM,) = z.shape
    t = x.load((tile.bid(0), 0), (BM, BN), padding=tile.PaddingMode.NEG_INF)
    hi = tile.reduce(t, 1, _max2, -math.inf)
    lo = tile.reduce(tile.where(t == -math.inf, math.inf, t), 1, _min2, float("inf"))
    z.store((hi - lo) * float(n))


def static_shapes(z, x, SHAPE: tile.Constant[tuple]):
    BM, BN = SHAPE
    tile.static_assert(BM * BN <= 4096, "tile too large")
    tile.static_assert(z.shape == SHAPE)
    i, j = z.block
    t = x.load((i, j), SHAPE)
    flat = t.reshape((BM * BN,))
    z.store((flat * 2.0).reshape(SHAPE))


def _moments_ref(z, x):
    n = x.shape[1]
    mean = x.sum(axis=1, keepdims=True) / n
    var = (x * x).sum(axis=1, keepdims=True) / n - mean * mean
    return {"z": np.broadcast_to(var + mean, z.shape).astype(np.float32)}


CASES = [
    Case("helper_moments", helper_moments,
         lambda r: dict(z=Out(np.zeros((30, 100), np.float32), (8, 128)),
                        x=In(rand(r, (30, 100)))),
         _moments_ref, rtol=1e-4, atol=1e-5),
    Case("helper_clamp", helper_clamp,
         lambda r: dict(z=Out(np.zeros(500, np.float32), (128,)), x=In(rand(r, (500,), lo=-2,
                                                                            hi=2))),
         lambda z, x: {"z": np.clip(x, 0, 1) + np.clip(x, -0.5, 0.25)}),
    Case("reduce_custom", reduce_custom,
         lambda r: dict(z=Out(np.zeros(50, np.float32), (16,)), x=In(rand(r, (50, 100)))),
         lambda z, x, BN: {"z": x.max(axis=1)}, constants={"BN": 128}),
    Case("reduce_inline_identity", reduce_inline_identity,
         lambda r: dict(z=Out(np.zeros(50, np.float32), (16,)), x=In(rand(r, (50, 100))),
                        n=Scalar(3)),
         lambda z, x, n, BN: {"z": (x.max(axis=1) - x.min(axis=1)) * np.float32(n)},
         constants={"BN": 128}, rtol=1e-6),
]

CASES.append(Case(
    "static_shapes", static_shapes,
    lambda r: dict(z=Out(np.zeros((50, 40), np.float32), (16, 32)), x=In(rand(r, (50, 40)))),
    lambda z, x, SHAPE: {"z": x * np.float32(2)}, constants={"SHAPE": (16, 32)}))
