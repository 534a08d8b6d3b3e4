"""The tilejit side of the side-by-side benchmarks: the same algorithms as ``cutile_kernels.py``,
spelled in tilejit, plus the idiomatic forms (partitions, ``z.block``, masks written as ``if``).

Each kernel is also run at small sizes on the simulator by ``tests/test_benchmark_kernels.py``.
"""
from __future__ import annotations

import math
import os
import sys

import tilejit as tile

INV_LOG_2 = 1.0 / math.log(2.0)


@tile.entry
def vector_add(z, x, y):
    z.store(tile.load_tile_like(x, z) + tile.load_tile_like(y, z))


@tile.entry
def matmul_grouped(c, a, b, BM: tile.Constant[int], BN: tile.Constant[int],
                   BK: tile.Constant[int], GROUP: tile.Constant[int]):
    """C = A @ B on a 1-D grid walked in groups of GROUP row tiles (B tiles stay in L2)."""
    num_m = tile.cdiv(a.shape[0], BM)
    num_n = tile.cdiv(b.shape[1], BN)
    pid = tile.bid(0)
    width = GROUP * num_n
    first_m = (pid // width) * GROUP
    size_m = min(num_m - first_m, GROUP)
    pid_m = first_m + (pid % width) % size_m
    pid_n = (pid % width) // size_m
    acc = tile.zeros((BM, BN), tile.float32)
    for k in range(tile.cdiv(a.shape[1], BK)):
        acc = tile.mma(a.load((pid_m, k), (BM, BK)), b.load((k, pid_n), (BK, BN)), acc)
    tile.store(c.partition((BM, BN)), (pid_m, pid_n), acc.astype(c.dtype))


@tile.entry
def softmax_rows(z, x):
    """Idiomatic: the output partition's block and shape pick the input tile."""
    t = x.load(z.block, z.shape, padding=tile.PaddingMode.NEG_INF).astype(tile.float32)
    e = tile.exp(t - tile.max(t, axis=1, keepdims=True))
    z.store((e / tile.sum(e, axis=1, keepdims=True)).astype(z.dtype))


@tile.entry
def softmax_rows_explicit(z, x):
    """The same with the column index written out as 0."""
    t = x.load((z.block[0], 0), z.shape, padding=tile.PaddingMode.NEG_INF).astype(tile.float32)
    e = tile.exp(t - tile.max(t, axis=1, keepdims=True))
    z.store((e / tile.sum(e, axis=1, keepdims=True)).astype(z.dtype))


@tile.entry
def layer_norm_fwd(y, x, w, b, mean_out, rstd_out, eps, TILE_N: tile.Constant[int]):
    """One row per block, three passes over the row in TILE_N chunks (cuTile's LayerNorm sample
    algorithm): mean, variance, then normalize, scale and shift."""
    row = tile.bid(0)
    n = x.shape[1]
    num_tiles = tile.cdiv(n, TILE_N)
    acc = tile.zeros((1, TILE_N), tile.float32)
    for j in range(num_tiles):
        acc += x.load((row, j), (1, TILE_N), padding=tile.PaddingMode.ZERO).astype(tile.float32)
    mean = tile.sum(acc, axis=1) / n
    var_acc = tile.zeros((1, TILE_N), tile.float32)
    for j in range(num_tiles):
        t = x.load((row, j), (1, TILE_N), padding=tile.PaddingMode.ZERO).astype(tile.float32)
        cols = j * TILE_N + tile.arange(TILE_N)
        d = tile.where(cols < n, t - mean, 0.0)
        var_acc += d * d
    var = tile.sum(var_acc, axis=1) / n
    rstd = 1.0 / tile.sqrt(var + eps)
    tile.store(mean_out.partition((1,)), (row,), mean)
    tile.store(rstd_out.partition((1,)), (row,), rstd)
    yv = y.partition((1, TILE_N))
    for j in range(num_tiles):
        t = x.load((row, j), (1, TILE_N), padding=tile.PaddingMode.ZERO).astype(tile.float32)
        tw = w.load((j,), (TILE_N,), padding=tile.PaddingMode.ZERO).astype(tile.float32)
        tb = b.load((j,), (TILE_N,), padding=tile.PaddingMode.ZERO).astype(tile.float32)
        out = (t - mean) * rstd * tw + tb
        tile.store(yv, (row, j), out.astype(y.dtype))


# the gallery's kernels, measured as users would copy them
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from batched_matmul import batched_matmul, grid as bmm_grid  # noqa: E402,F401
from rmsnorm import rmsnorm as _rms_norm_tuned  # noqa: E402
rms_norm = _rms_norm_tuned.kernel       # the gallery autotunes it; the benchmarks bring configs
from softmax import softmax as softmax_fast  # noqa: E402,F401
from layernorm import layernorm_fwd as layer_norm_rows  # noqa: E402,F401
from flash_attention import attention  # noqa: E402,F401  (tilejit's idiomatic spelling)


@tile.entry(occupancy=2)
def fmha(o, q, k, v, qk_scale, DHEAD: tile.Constant[int], TILE_M: tile.Constant[int],
         TILE_N: tile.Constant[int], CAUSAL: tile.Constant[bool]):
    """Flash attention forward, the algorithm of cuTile's AttentionFMHA sample: q, k, v, o are
    (B*H, S, D); grid (S / TILE_M, B*H); exp2 online softmax; K read transposed through
    ``order=``; the causal mask only on the K tiles that cross the diagonal."""
    bm = tile.bid(0)
    bh = tile.bid(1)
    scale = qk_scale * INV_LOG_2
    offs_m = (bm * TILE_M + tile.arange(TILE_M))[:, None]
    offs_n = tile.arange(TILE_N)[None, :]
    m_i = tile.full((TILE_M, 1), -math.inf, tile.float32)
    l_i = tile.zeros((TILE_M, 1), tile.float32)
    acc = tile.zeros((TILE_M, DHEAD), tile.float32)
    tq = q.load((bh, bm, 0), (1, TILE_M, DHEAD)).reshape((TILE_M, DHEAD))
    seq = k.shape[1]
    if CAUSAL:
        mask_start = min(bm * TILE_M // TILE_N, seq // TILE_N)
        n_tiles = tile.cdiv(min((bm + 1) * TILE_M, seq), TILE_N)
    else:
        mask_start = seq // TILE_N
        n_tiles = tile.cdiv(seq, TILE_N)
    for j in range(n_tiles):
        tk = k.load((bh, 0, j), (1, DHEAD, TILE_N), order=(0, 2, 1), latency=2)
        qk = tile.mma(tq, tk.reshape((DHEAD, TILE_N)), tile.zeros((TILE_M, TILE_N), tile.float32))
        if j >= mask_start:
            cols = j * TILE_N + offs_n
            keep = cols < seq
            if CAUSAL:
                keep = keep & (offs_m >= cols)
            qk = qk + tile.where(keep, 0.0, -math.inf)
        m_ij = tile.maximum(m_i, tile.max(qk, axis=1, keepdims=True) * scale)
        p = tile.exp2(qk * scale - m_ij, flush_to_zero=True)
        alpha = tile.exp2(m_i - m_ij, flush_to_zero=True)
        l_i = l_i * alpha + tile.sum(p, axis=1, keepdims=True)
        tv = v.load((bh, j, 0), (1, TILE_N, DHEAD), latency=4).reshape((TILE_N, DHEAD))
        acc = tile.mma(p.astype(q.dtype), tv, acc * alpha)
        m_i = m_ij
    out = tile.truediv(acc, l_i, flush_to_zero=True, rounding_mode=tile.RoundingMode.APPROX)
    tile.store(o.partition((1, TILE_M, DHEAD)), (bh, bm, 0),
               out.astype(o.dtype).reshape((1, TILE_M, DHEAD)))
