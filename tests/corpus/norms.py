"""Row-wise kernels: softmax, layernorm and rmsnorm forward (rows fit in one tile; the row length
is not a power of two, so padding and masks matter)."""
import numpy as np

import tilejit as tile

from . import Case, In, Out, rand


def row_softmax(z, x):
    BM, BN = z.shape
    i = tile.bid(0)
    t = x.load((i, 0), (BM, BN), padding=tile.PaddingMode.NEG_INF)
    m = tile.max(t, axis=1, keepdims=True)
    e = tile.exp(t - m)
    z.store(e / tile.sum(e, axis=1, keepdims=True))


def layernorm(z, x, w, b, eps: tile.Constant[float]):
    BM, BN = z.shape
    i = tile.bid(0)
    n = x.shape[1]
    t = x.load((i, 0), (BM, BN))                       # zero padding past n
    mask = tile.arange(BN) < n
    mean = tile.sum(t, axis=1, keepdims=True) / n
    d = tile.where(mask, t - mean, 0.0)
    var = tile.sum(d * d, axis=1, keepdims=True) / n
    y = d * tile.rsqrt(var + eps)
    tw = w.load((0,), (BN,))
    tb = b.load((0,), (BN,))
    z.store(y * tw + tb)


def rmsnorm(z, x, w, eps: tile.Constant[float]):
    BM, BN = z.shape
    i = tile.bid(0)
    t = x.load((i, 0), (BM, BN)).astype(tile.float32)
    ms = tile.sum(t * t, axis=1, keepdims=True) / x.shape[1]
    y = t * tile.rsqrt(ms + eps) * w.load((0,), (BN,)).astype(tile.float32)
    z.store(y.astype(z.dtype))


def _softmax_ref(z, x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"z": (e / e.sum(axis=1, keepdims=True)).astype(np.float32)}


def _layernorm_ref(z, x, w, b, eps):
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return {"z": ((x - mean) / np.sqrt(var + eps) * w + b).astype(np.float32)}


def _rmsnorm_ref(z, x, w, eps):
    xf = x.astype(np.float32)
    y = xf / np.sqrt((xf * xf).mean(axis=1, keepdims=True) + eps) * w.astype(np.float32)
    return {"z": y.astype(z.dtype)}


CASES = [
    Case("row_softmax", row_softmax,
         lambda r: dict(z=Out(np.zeros((37, 100), np.float32), (8, 128)),
                        x=In(rand(r, (37, 100), lo=-3, hi=3))),
         _softmax_ref, rtol=1e-5, atol=1e-6),
    Case("layernorm", layernorm,
         lambda r: dict(z=Out(np.zeros((45, 200), np.float32), (4, 256)),
                        x=In(rand(r, (45, 200))), w=In(rand(r, (200,))), b=In(rand(r, (200,)))),
         _layernorm_ref, constants={"eps": 1e-5}, rtol=1e-4, atol=1e-5),
    Case("rmsnorm", rmsnorm,
         lambda r: dict(z=Out(np.zeros((33, 120), np.float16), (16, 128)),
                        x=In(rand(r, (33, 120), np.float16)), w=In(rand(r, (120,), np.float16))),
         _rmsnorm_ref, constants={"eps": 1e-6}, rtol=2e-3, atol=2e-3),
]
