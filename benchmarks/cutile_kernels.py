"""The cuTile Python side of the side-by-side benchmarks, written by us in cuTile's language
following its published samples' algorithms (VectorAddition, MatMul with a grouped 1-D grid,
row softmax, LayerNorm forward, BatchMatMul, AttentionFMHA). Imported only where ``cuda.tile``
is installed.
"""
from __future__ import annotations

import math

import cuda.tile as ct

INV_LOG_2 = 1.0 / math.log(2.0)


@ct.kernel
def vector_add(a, b, c, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(c, index=(i,), tile=ct.load(a, index=(i,), shape=(TILE,)) +
             ct.load(b, index=(i,), shape=(TILE,)))


@ct.kernel
def matmul_grouped(a, b, c, BM: ct.Constant[int], BN: ct.Constant[int], BK: ct.Constant[int],
                   GROUP: ct.Constant[int]):
    num_m = ct.cdiv(a.shape[0], BM)
    num_n = ct.cdiv(b.shape[1], BN)
    pid = ct.bid(0)
    width = GROUP * num_n
    first_m = (pid // width) * GROUP
    size_m = min(num_m - first_m, GROUP)
    pid_m = first_m + (pid % width) % size_m
    pid_n = (pid % width) // size_m
    acc = ct.full((BM, BN), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(a.shape[1], BK)):
        acc = ct.mma(ct.load(a, index=(pid_m, k), shape=(BM, BK)),
                     ct.load(b, index=(k, pid_n), shape=(BK, BN)), acc)
    ct.store(c, index=(pid_m, pid_n), tile=acc.astype(c.dtype))


@ct.kernel
def batched_matmul(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    # cuTile's BatchMatMul sample: a (batch, M tiles, N tiles) grid of 3-D tiles
    pb, pm, pn = ct.bid(0), ct.bid(1), ct.bid(2)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[2], tk)):
        x = ct.load(A, index=(pb, pm, k), shape=(1, tm, tk)).reshape((tm, tk))
        y = ct.load(B, index=(pb, k, pn), shape=(1, tk, tn)).reshape((tk, tn))
        acc = ct.mma(x, y, acc)
    ct.store(C, index=(pb, pm, pn), tile=acc.astype(C.dtype).reshape((1, tm, tn)))


@ct.kernel
def softmax_rows(x, z, N: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, N),
                padding_mode=ct.PaddingMode.NEG_INF).astype(ct.float32)
    e = ct.exp(t - ct.max(t, axis=1, keepdims=True))
    ct.store(z, index=(row, 0), tile=(e / ct.sum(e, axis=1, keepdims=True)).astype(z.dtype))


@ct.kernel
def layer_norm_fwd(x, w, b, y, mean_out, rstd_out, eps, TILE_N: ct.Constant[int]):
    row = ct.bid(0)
    n = x.shape[1]
    num_tiles = ct.cdiv(n, TILE_N)
    zero = ct.PaddingMode.ZERO
    acc = ct.full((1, TILE_N), 0.0, dtype=ct.float32)
    for j in range(num_tiles):
        acc += ct.load(x, index=(row, j), shape=(1, TILE_N), padding_mode=zero).astype(ct.float32)
    mean = ct.sum(acc, axis=1) / n
    var_acc = ct.full((1, TILE_N), 0.0, dtype=ct.float32)
    for j in range(num_tiles):
        t = ct.load(x, index=(row, j), shape=(1, TILE_N), padding_mode=zero).astype(ct.float32)
        cols = j * TILE_N + ct.arange(TILE_N, dtype=ct.int32)
        d = ct.where(cols < n, t - mean, 0.0)
        var_acc += d * d
    var = ct.sum(var_acc, axis=1) / n
    rstd = 1.0 / ct.sqrt(var + eps)
    ct.store(mean_out, index=(row,), tile=mean)
    ct.store(rstd_out, index=(row,), tile=rstd)
    for j in range(num_tiles):
        t = ct.load(x, index=(row, j), shape=(1, TILE_N), padding_mode=zero).astype(ct.float32)
        tw = ct.load(w, index=(j,), shape=(TILE_N,), padding_mode=zero).astype(ct.float32)
        tb = ct.load(b, index=(j,), shape=(TILE_N,), padding_mode=zero).astype(ct.float32)
        out = (t - mean) * rstd * tw + tb
        ct.store(y, index=(row, j), tile=out.astype(y.dtype))


@ct.kernel(occupancy=2)
def fmha(q, k, v, o, qk_scale, DHEAD: ct.Constant[int], TILE_M: ct.Constant[int],
         TILE_N: ct.Constant[int], CAUSAL: ct.Constant[bool]):
    """q, k, v, o: (B*H, S, D); grid (S / TILE_M, B*H)."""
    bm = ct.bid(0)
    bh = ct.bid(1)
    scale = qk_scale * INV_LOG_2
    offs_m = (bm * TILE_M + ct.arange(TILE_M, dtype=ct.int32))[:, None]
    offs_n = ct.arange(TILE_N, dtype=ct.int32)[None, :]
    m_i = ct.full((TILE_M, 1), -math.inf, dtype=ct.float32)
    l_i = ct.full((TILE_M, 1), 0.0, dtype=ct.float32)
    acc = ct.full((TILE_M, DHEAD), 0.0, dtype=ct.float32)
    tq = ct.load(q, index=(bh, bm, 0), shape=(1, TILE_M, DHEAD)).reshape((TILE_M, DHEAD))
    seq = k.shape[1]
    if CAUSAL:
        mask_start = min(bm * TILE_M // TILE_N, seq // TILE_N)
        n_tiles = ct.cdiv(min((bm + 1) * TILE_M, seq), TILE_N)
    else:
        mask_start = seq // TILE_N
        n_tiles = ct.cdiv(seq, TILE_N)
    for j in range(0, n_tiles):
        tk = ct.load(k, index=(bh, 0, j), shape=(1, DHEAD, TILE_N), order=(0, 2, 1), latency=2)
        qk = ct.full((TILE_M, TILE_N), 0.0, dtype=ct.float32)
        qk = ct.mma(tq, tk.reshape((DHEAD, TILE_N)), qk)
        if j >= mask_start:
            cols = j * TILE_N + offs_n
            keep = cols < seq
            if CAUSAL:
                keep = keep & (offs_m >= cols)
            qk = qk + ct.where(keep, 0.0, -math.inf)
        m_ij = ct.maximum(m_i, ct.max(qk, axis=1, keepdims=True) * scale)
        p = ct.exp2(qk * scale - m_ij, flush_to_zero=True)
        alpha = ct.exp2(m_i - m_ij, flush_to_zero=True)
        l_i = l_i * alpha + ct.sum(p, axis=1, keepdims=True)
        tv = ct.load(v, index=(bh, j, 0), shape=(1, TILE_N, DHEAD), latency=4)
        acc = ct.mma(p.astype(q.dtype), tv.reshape((TILE_N, DHEAD)), acc * alpha)
        m_i = m_ij
    out = ct.truediv(acc, l_i, flush_to_zero=True, rounding_mode=ct.RoundingMode.APPROX)
    ct.store(o, index=(bh, bm, 0), tile=out.astype(o.dtype).reshape((1, TILE_M, DHEAD)))
