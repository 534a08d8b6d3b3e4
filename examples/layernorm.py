"""LayerNorm forward and backward, checked against NumPy formulas.

    python examples/layernorm.py

Forward: one (BM, N) tile of whole rows per block; it also saves each row's mean and 1/std for
the backward. Both statistics come from one reduction (``row_stats``: the sums of ``x - pivot``
and of its square, the pivot being the row's first element), one round of the block's barriers
where the mean and then the variance take two. Backward (the algorithm of cuTile's and
Triton's LayerNorm samples): each block computes dx for its rows and its share of dw and db
(column sums over its rows), and adds that share to row ``block % GROUP`` of a (GROUP, N)
buffer while it holds that row's spin lock; a second kernel sums the GROUP rows. The lock is an ``atomic_cas`` with ``memory_order=ACQUIRE``
(the loads after it see the previous holder's stores) and an ``atomic_xchg`` with
``memory_order=RELEASE`` (the stores before it are visible when the next block takes the lock).
The forward's stores are ``allow_tma=False`` (from registers, not staged for the TMA unit), as
in softmax.py: faster for row kernels on an H200.
"""
import sys

import numpy as np

import tilejit as tile
from tilejit import api
from tilejit.runtime import current_backend

ZERO = tile.PaddingMode.ZERO
ACQUIRE, RELEASE = tile.MemoryOrder.ACQUIRE, tile.MemoryOrder.RELEASE


@tile.function
def pair_sum(a, b, sum_a, sum_b):
    return sum_a + a, sum_b + b


@tile.function
def shifted_moments(d, d2, k, n, eps):
    """(mean of ``x - k``, mean, 1/std) of each row of ``x`` from ``d = x - k`` and
    ``d2 = d * d`` (zero outside the row; any number of columns, summed along axis 1 in one
    reduction of the pair). Shifting by ``k``, an element of the row (a pivot), bounds the
    cancellation in ``E[d^2] - E[d]^2``: that element's own deviation is part of the variance,
    so ``(k - mean)^2 <= n * var``."""
    s1, s2 = tile.reduce((d, d2), 1, pair_sum, identity=(0.0, 0.0), keepdims=True)
    # one division a block, then multiplies: a (BM, 1) tile divided by n takes tileiras's
    # IEEE division, with its slow path, per row (2026-11-27 H200, 8 rows of 1K: 5% faster)
    inv = 1.0 / n
    m1 = s1 * inv
    return m1, k + m1, tile.rsqrt(tile.maximum(s2 * inv - m1 * m1, 0.0) + eps)


@tile.function
def row_stats(t, k, keep, n, eps, exact):
    """(each row of ``t`` minus its mean, the mean, 1/std) over the ``keep`` columns, from one
    reduction (shifted_moments, ``k`` an element of the row). One reduction is one round of the
    block's barriers where mean-then-variance takes two. The first value is meaningless
    outside ``keep``. ``exact`` (a constant): every column is in the row, no mask."""
    d = t - k
    if not exact:
        d = tile.where(keep, d, 0.0)
    m1, mu, rs = shifted_moments(d, d * d, k, n, eps)
    return d - m1, mu, rs


@tile.function
def row_stats_two_pass(t, keep, n, eps, exact):
    """row_stats with the mean and then the variance: two reductions, one after the other
    (faster where one reduction of a pair makes tileiras's code slower: 8 rows of 1K a block,
    2026-11-27 H200). ``t`` is zero outside ``keep``."""
    inv = 1.0 / n
    mu = tile.sum(t, axis=1, keepdims=True) * inv
    d = t - mu
    if not exact:
        d = tile.where(keep, d, 0.0)                 # padding must not count in the variance
    return d, mu, tile.rsqrt(tile.sum(d * d, axis=1, keepdims=True) * inv + eps)


@tile.function
def exact_or_nan(rs, n, width, exact):
    """``rs``, or NaN where ``exact`` (a constant) promised rows of ``width`` elements and they
    are not: a wrong promise shows in the output, never as silently wrong statistics."""
    if exact:
        rs = tile.where(n == width, rs, float("nan"))
    return rs


@tile.function
def weight_and_bias(w, b, width, box):
    """w and b as float32 (1, width) rows (zero past their end), loaded with ``box_width=box``
    (``width`` itself: no split)."""
    return (w.load((0,), (width,), padding=ZERO, box_width=box).astype(tile.float32)[None, :],
            b.load((0,), (width,), padding=ZERO, box_width=box).astype(tile.float32)[None, :])


@tile.function
def row_stats_store(mean, rstd, i, mu, rs):
    """Store the (BM, 1) mean and 1/std of row block ``i``, before y: on an H200 (2026-11-28)
    that is 0.4% faster than after it at 1K, 16K and 32K rows (the stores cost 1-2.4% in all)."""
    bm = mu.shape[0]
    tile.store(mean.partition((bm,)), (i,), mu.reshape((bm,)), allow_tma=False)
    tile.store(rstd.partition((bm,)), (i,), rs.reshape((bm,)), allow_tma=False)


#: ``box_width`` of the row loads for rows of 1K elements: 128-byte TMA box rows for fp16.
#: On an H200 (2026-11-28, the gallery kernels with the box as a constant, three rounds):
#: LayerNorm's 8 x 1024 tiles 3605 -> 3722 GB/s (0.847 -> 0.874 of the copy roofline), RMSNorm
#: +1%, softmax +0.2%; at 2K LayerNorm lost 11% (3750 -> 3334) and RMSNorm was level, at 4K
#: every norm lost 0-2%: longer rows keep the plain load
ROW_BOX = 64


#: ``layernorm_fwd(ONE_REDUCTION=AUTO)``, the default: one reduction of the pair for rows of
#: more than 1K elements, mean then variance for shorter ones. On an H200 (2026-11-28, the
#: default autotune space's best tile for each) the pair is 1-7% faster from 2K to 32K elements,
#: and 22% slower at 1K (2749 against 3515 GB/s), where tileiras's code for it is worse.
AUTO = -1


@tile.entry
def layernorm_fwd(y, x, w, b, mean, rstd, eps, ONE_REDUCTION: tile.Constant[int] = AUTO,
                  EXACT: tile.Constant[bool] = False):
    """``ONE_REDUCTION``: True (one reduction of the pair, ``row_stats``), False (mean then
    variance) or ``AUTO`` (by the row width, the faster of the two on an H200). ``EXACT``: the
    rows are exactly the tile's width, so no column needs masking out of the statistics
    (2026-11-27 H200: 1-3% faster); rows of any other length then give NaN."""
    tile.static_assert(ONE_REDUCTION == AUTO or ONE_REDUCTION == 0 or ONE_REDUCTION == 1,
                       "ONE_REDUCTION must be True, False or AUTO")
    BM, BN = y.shape
    i = y.block[0]
    n = x.shape[1]
    box = ROW_BOX if BN == 1024 else BN
    t = x.load((i, 0), (BM, BN), padding=ZERO, box_width=box).astype(tile.float32)
    keep = tile.arange(BN)[None, :] < n
    if ONE_REDUCTION == 1 or (ONE_REDUCTION == AUTO and BN > 1024):
        pivot = x.load((i, 0), (BM, 1), padding=ZERO).astype(tile.float32)
        c, mu, rs = row_stats(t, pivot, keep, n, eps, EXACT)
    else:
        c, mu, rs = row_stats_two_pass(t, keep, n, eps, EXACT)
    rs = exact_or_nan(rs, n, BN, EXACT)
    row_stats_store(mean, rstd, i, mu, rs)
    wv, bv = weight_and_bias(w, b, BN, box)
    y.store((c * rs * wv + bv).astype(y.dtype), allow_tma=False)


def exact_rows(config, args) -> bool:
    """``EXACT`` for ``tile.autotune(heuristics={"EXACT": exact_rows})``: whether the rows are
    exactly the config's tile width (its ``tile`` or its ``WIDTH``), decided at every call from
    the arguments, so no config has to promise it."""
    width = config.tile[-1] if config.tile is not None else config.constants["WIDTH"]
    return int(args["x"].shape[1]) == int(width)


# Forward variants for benchmarks/vendor.py (tests/test_gallery_variants.py checks them): y, mean
# and rstd are writable tensors (tile.atomic) and the grid is explicit.
@tile.entry
def layernorm_fwd_persistent(y, x, w, b, mean, rstd, eps, ROWS: tile.Constant[int],
                             WIDTH: tile.Constant[int], LATENCY: tile.Constant[int],
                             EXACT: tile.Constant[bool] = False,
                             RELOAD_WB: tile.Constant[int] = AUTO):
    """One wave of blocks, each looping over row blocks with the grid's stride; w and b are
    read once per block (the latency hint lets tileiras pipeline the row loads), or with
    ``RELOAD_WB`` in every iteration (from L2): for rows of 16K elements and more, w and b
    held across the loop spilled the row's registers (2026-11-27, tileiras 13.4: 192 spill
    loads in a 32K-row block, none with RELOAD_WB). ``AUTO`` (the default) reloads them for
    row tiles of 16K elements or more. ``EXACT`` as in layernorm_fwd (rows of exactly WIDTH
    elements)."""
    tile.static_assert(RELOAD_WB == AUTO or RELOAD_WB == 0 or RELOAD_WB == 1,
                       "RELOAD_WB must be True, False or AUTO")
    reload = RELOAD_WB == 1 or (RELOAD_WB == AUTO and ROWS * WIDTH >= 16384)
    n = x.shape[1]
    step = tile.num_blocks(0)
    last = tile.cdiv(x.shape[0], ROWS) - 1
    cols = tile.arange(WIDTH)[None, :]
    if not reload:
        wv, bv = weight_and_bias(w, b, WIDTH, WIDTH)
    for r in range(tile.bid(0), last + 1, step):
        if reload:
            wv, bv = weight_and_bias(w, b, WIDTH, WIDTH)
        # loaded in the iteration that uses it: a tile carried to the next iteration came out
        # wrong from tileiras 13.4 (NOTES.md, tileiras quirks)
        tf = x.load((r, 0), (ROWS, WIDTH), padding=ZERO, latency=LATENCY).astype(tile.float32)
        pivot = x.load((r, 0), (ROWS, 1), padding=ZERO).astype(tile.float32)
        c, mu, rs = row_stats(tf, pivot, cols < n, n, eps, EXACT)
        rs = exact_or_nan(rs, n, WIDTH, EXACT)
        row_stats_store(mean, rstd, r, mu, rs)
        tile.store(y.partition((ROWS, WIDTH)), (r, 0), (c * rs * wv + bv).astype(y.dtype),
                   allow_tma=False)


@tile.entry
def layernorm_fwd_chunked(y, x, w, b, mean, rstd, eps, ROWS: tile.Constant[int],
                          CHUNK: tile.Constant[int]):
    """Rows too long for one tile: shifted_moments's two sums (shifted by each row's first
    element) gathered over column chunks element-wise, so the block reduces across its threads
    once, after the loop; then a second pass (from L2) writes y."""
    i = tile.bid(0)
    n = x.shape[1]
    pivot = x.load((i, 0), (ROWS, 1), padding=ZERO).astype(tile.float32)
    acc1 = tile.zeros((ROWS, CHUNK), tile.float32)
    acc2 = tile.zeros((ROWS, CHUNK), tile.float32)
    for j in range(tile.cdiv(n, CHUNK)):
        t = x.load((i, j), (ROWS, CHUNK), padding=ZERO).astype(tile.float32)
        d = tile.where(j * CHUNK + tile.arange(CHUNK)[None, :] < n, t - pivot, 0.0)
        acc1 += d
        acc2 += d * d
    _, mu, rs = shifted_moments(acc1, acc2, pivot, n, eps)
    row_stats_store(mean, rstd, i, mu, rs)
    for j in range(tile.cdiv(n, CHUNK)):
        t = x.load((i, j), (ROWS, CHUNK), padding=ZERO).astype(tile.float32)
        wv = w.load((j,), (CHUNK,), padding=ZERO).astype(tile.float32)[None, :]
        bv = b.load((j,), (CHUNK,), padding=ZERO).astype(tile.float32)[None, :]
        tile.store(y.partition((ROWS, CHUNK)), (i, j), ((t - mu) * rs * wv + bv).astype(y.dtype),
                   allow_tma=False)


@tile.entry
def layernorm_bwd(dx, x, w, dy, mean, rstd, dw_group, db_group, locks):
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
    inv = 1.0 / n
    c1 = tile.sum(xhat * wdy, axis=1, keepdims=True) * inv
    c2 = tile.sum(wdy, axis=1, keepdims=True) * inv
    dx.store(((wdy - (xhat * c1 + c2)) * rs).astype(dx.dtype))
    dw = tile.sum(g * xhat, axis=0, keepdims=True)
    db = tile.sum(g, axis=0, keepdims=True)
    row = i % locks.shape[0]                             # this block's group
    while tile.atomic_cas(locks, row, 0, 1, memory_order=ACQUIRE) == 1:
        pass
    dw_rows, db_rows = dw_group.partition((1, BN)), db_group.partition((1, BN))
    tile.store(dw_rows, (row, 0), dw_rows.load((row, 0)) + dw)
    tile.store(db_rows, (row, 0), db_rows.load((row, 0)) + db)
    tile.atomic_xchg(locks, row, 0, memory_order=RELEASE)


@tile.entry
def column_sum(out, part, BR: tile.Constant[int]):
    (BN,) = out.shape
    j = out.block[0]
    acc = tile.zeros((BN,), tile.float32)
    for r in range(tile.cdiv(part.shape[0], BR)):
        acc += tile.sum(part.load((r, j), (BR, BN), padding=ZERO), axis=0)
    out.store(acc.astype(out.dtype))


def backward(x, w, dy, mean, rstd, bm: int, group: int):
    """dx (``x``'s dtype), dw, db (``w``'s dtype) of LayerNorm with the saved ``mean``/``rstd``
    (tilejit tensors); ``group`` float32 rows of partial dw/db, each behind its own lock."""
    m, n = x.shape
    width = 1 << (n - 1).bit_length()
    dx = api.zeros((m, n), x.dtype).sync()
    dw_group, db_group = api.zeros((group, n)).sync(), api.zeros((group, n)).sync()
    locks = api.zeros((group,), tile.int32).sync()
    layernorm_bwd(dx.partition((bm, width)), x, w, dy, mean, rstd, tile.atomic(dw_group),
                  tile.atomic(db_group), tile.atomic(locks)).sync()
    dw, db = api.zeros((n,), w.dtype).sync(), api.zeros((n,), w.dtype).sync()
    column_sum(dw.partition((256,)), dw_group, 32).sync()
    column_sum(db.partition((256,)), db_group, 32).sync()
    return dx, dw, db


def reference_backward(xn, wn, dyn, eps):
    """dx, dw, db of LayerNorm in NumPy (float64)."""
    xn, wn, dyn = (a.astype(np.float64) for a in (xn, wn, dyn))
    mu = xn.mean(1, keepdims=True)
    rs = 1 / np.sqrt(xn.var(1, keepdims=True) + eps)
    xhat = (xn - mu) * rs
    wdy = wn * dyn
    dx = (wdy - (xhat * (xhat * wdy).mean(1, keepdims=True) + wdy.mean(1, keepdims=True))) * rs
    return dx, (dyn * xhat).sum(0), dyn.sum(0)


def main() -> int:
    m, n, group = (8192, 4096, 64) if current_backend() == "cuda" else (50, 300, 4)
    width = 1 << (n - 1).bit_length()
    bm = 4
    rng = np.random.default_rng(0)
    xn, dyn = (rng.standard_normal((m, n)).astype(np.float32) for _ in range(2))
    wn, bn = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    x, dy, w, b = (api.from_numpy(a).sync() for a in (xn, dyn, wn, bn))
    y = api.zeros((m, n)).sync()
    mean, rstd = api.zeros((m,)).sync(), api.zeros((m,)).sync()
    eps = 1e-5
    layernorm_fwd(y.partition((bm, width)), x, w, b, tile.atomic(mean), tile.atomic(rstd),
                  eps).sync()
    dx, dw, db = backward(x, w, dy, mean, rstd, bm, group)

    mu = xn.mean(1, keepdims=True)
    rs = 1 / np.sqrt(xn.var(1, keepdims=True) + eps)
    dx_ref, dw_ref, db_ref = reference_backward(xn, wn, dyn, eps)
    checks = {"y": (y, (xn - mu) * rs * wn + bn), "dx": (dx, dx_ref), "dw": (dw, dw_ref),
              "db": (db, db_ref)}
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
