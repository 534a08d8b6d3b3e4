"""LayerNorm forward and backward, checked against NumPy formulas.

    python examples/layernorm.py

Forward: one (BM, N) tile of whole rows per block; it also saves each row's mean and 1/std for
the backward. Backward: each block computes dx for its rows and its share of dw and db (column
sums over its rows) into a (blocks, N) buffer; a second kernel sums those partial rows.
"""
import sys

import numpy as np

import tilejit as tile
from tilejit import api
from tilejit.runtime import current_backend

ZERO = tile.PaddingMode.ZERO


@tile.entry
def layernorm_fwd(y, x, w, b, mean, rstd, eps):
    BM, BN = y.shape
    i = y.block[0]
    n = x.shape[1]
    t = x.load((i, 0), (BM, BN), padding=ZERO).astype(tile.float32)
    mu = tile.sum(t, axis=1, keepdims=True) / n
    cols = tile.arange(BN)[None, :]
    d = tile.where(cols < n, t - mu, 0.0)                # padding must not count in the variance
    rs = tile.rsqrt(tile.sum(d * d, axis=1, keepdims=True) / n + eps)
    wv = w.load((0,), (BN,), padding=ZERO).astype(tile.float32)[None, :]
    bv = b.load((0,), (BN,), padding=ZERO).astype(tile.float32)[None, :]
    y.store((d * rs * wv + bv).astype(y.dtype))
    tile.store(mean.partition((BM,)), (i,), mu.reshape((BM,)))
    tile.store(rstd.partition((BM,)), (i,), rs.reshape((BM,)))


@tile.entry
def layernorm_bwd(dx, x, w, dy, mean, rstd, dw_part, db_part):
    BM, BN = dx.shape
    i = dx.block[0]
    n = x.shape[1]
    t = x.load((i, 0), (BM, BN), padding=ZERO).astype(tile.float32)
    g = dy.load((i, 0), (BM, BN), padding=ZERO).astype(tile.float32)
    mu = mean.load((i,), (BM,), padding=ZERO)[:, None]
    rs = rstd.load((i,), (BM,), padding=ZERO)[:, None]   # rows past the end: 0, so xhat = 0
    cols = tile.arange(BN)[None, :]
    xhat = tile.where(cols < n, (t - mu) * rs, 0.0)
    wdy = w.load((0,), (BN,), padding=ZERO).astype(tile.float32)[None, :] * g
    c1 = tile.sum(xhat * wdy, axis=1, keepdims=True) / n
    c2 = tile.sum(wdy, axis=1, keepdims=True) / n
    dx.store(((wdy - (xhat * c1 + c2)) * rs).astype(dx.dtype))
    tile.store(dw_part.partition((1, BN)), (i, 0), tile.sum(g * xhat, axis=0, keepdims=True))
    tile.store(db_part.partition((1, BN)), (i, 0), tile.sum(g, axis=0, keepdims=True))


@tile.entry
def column_sum(out, part, BR: tile.Constant[int]):
    (BN,) = out.shape
    j = out.block[0]
    acc = tile.zeros((BN,), tile.float32)
    for r in range(tile.cdiv(part.shape[0], BR)):
        acc += tile.sum(part.load((r, j), (BR, BN), padding=ZERO), axis=0)
    out.store(acc)


def main() -> int:
    m, n = (8192, 4096) if current_backend() == "cuda" else (50, 300)
    width = 1 << (n - 1).bit_length()
    bm = 4
    rng = np.random.default_rng(0)
    xn, dyn = (rng.standard_normal((m, n)).astype(np.float32) for _ in range(2))
    wn, bn = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    x, dy, w, b = (api.from_numpy(a).sync() for a in (xn, dyn, wn, bn))
    y, dx = api.zeros((m, n)).sync(), api.zeros((m, n)).sync()
    mean, rstd = api.zeros((m,)).sync(), api.zeros((m,)).sync()
    eps = 1e-5
    layernorm_fwd(y.partition((bm, width)), x, w, b, tile.atomic(mean), tile.atomic(rstd),
                  eps).sync()
    blocks = -(-m // bm)
    dw_part, db_part = api.zeros((blocks, n)).sync(), api.zeros((blocks, n)).sync()
    layernorm_bwd(dx.partition((bm, width)), x, w, dy, mean, rstd, tile.atomic(dw_part),
                  tile.atomic(db_part)).sync()
    dw, db = api.zeros((n,)).sync(), api.zeros((n,)).sync()
    column_sum(dw.partition((256,)), dw_part, 32).sync()
    column_sum(db.partition((256,)), db_part, 32).sync()

    mu = xn.mean(1, keepdims=True)
    rs = 1 / np.sqrt(xn.var(1, keepdims=True) + eps)
    xhat = (xn - mu) * rs
    wdy = wn * dyn
    dx_ref = (wdy - (xhat * (xhat * wdy).mean(1, keepdims=True) + wdy.mean(1, keepdims=True))) * rs
    checks = {"y": (y, xhat * wn + bn), "dx": (dx, dx_ref), "dw": (dw, (dyn * xhat).sum(0)),
              "db": (db, dyn.sum(0))}
    ok = True
    for name, (got, ref) in checks.items():
        good = np.allclose(got.to_numpy(), ref, rtol=1e-3, atol=1e-3)
        ok &= good
        if not good:
            print(f"  {name} differs: max error {np.abs(got.to_numpy() - ref).max():.2e}")
    print(f"layernorm: forward and backward, {m}x{n} {'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
