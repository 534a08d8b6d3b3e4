"""Flash attention forward, causal and non-causal, with grouped-query heads (GQA), checked
against softmax(QK^T/sqrt(d))V.

    python examples/flash_attention.py

The output is partitioned as the (S, B*H, D) view of the (B*H, S, D) tensor, so the partition
gives the grid and each block its (query tile, head); consecutive blocks work on the same head,
which keeps its K and V in L2. K and V may have fewer heads than Q (GQA): query head h reads KV
head h // G, G = q heads / kv heads (for (B*H, S, D) layouts, b * H + h maps to b * H_kv + h // G).
The online softmax runs in exp2 with the 1/sqrt(d) scale folded into log2(e) at compile time,
flush-to-zero exponentials and an approximate final division (as cuTile's sample). The causal
mask is written as an `if` on the key tile index: tilejit splits the loop into an unmasked part
and the masked diagonal tiles, so most iterations carry no branch.

The row maxima ignore NaN (`propagate_nan=False`: one instruction instead of a NaN-checking
sequence on the critical path); the output is NaN in the same rows either way, since a NaN score
makes its exp2, the row sum and the row of P @ V NaN.

`attention_2q` gives each block two query tiles that share every K and V tile: the two online
softmaxes and their matrix products are independent, so the compiler may overlap one tile's
exponentials with the other's tensor-core work (FlashAttention-3's ping-pong, as far as one
program can express it).
"""
import math
import sys

import numpy as np

import tilejit as tile
from tilejit import api
from tilejit.runtime import current_backend

LOG2E = 1.0 / math.log(2.0)


@tile.function
def scores(tq, k, kvh, j, BM, BN, D):
    """S = Q K^T for K tile ``j`` of KV head ``kvh`` (float32)."""
    tk = k.load((kvh, j, 0), (1, BN, D), latency=2).reshape((BN, D))
    return tile.mma(tq, tk.T, tile.zeros((BM, BN), tile.float32))    # .T: a transposed load


@tile.function
def masked(s, i, j, seq, BM, BN, CAUSAL):
    """-inf for keys past the end and, with CAUSAL, above the diagonal of query tile ``i``."""
    cols = j * BN + tile.arange(BN)[None, :]
    valid = cols < seq
    if CAUSAL:
        valid = valid & (cols <= i * BM + tile.arange(BM)[:, None])
    return tile.where(valid, s, -math.inf)


@tile.function
def online_update(s, v, kvh, j, m, l, acc, scale, BN, D):
    """Fold the scores of K/V tile ``j`` into the running max ``m``, sum ``l`` and ``acc``."""
    m_new = tile.maximum(m, tile.max(s, axis=1, keepdims=True, propagate_nan=False) * scale,
                         propagate_nan=False)
    p = tile.exp2(s * scale - m_new, flush_to_zero=True)
    alpha = tile.exp2(m - m_new, flush_to_zero=True)
    l = l * alpha + tile.sum(p, axis=1, keepdims=True)
    tv = v.load((kvh, j, 0), (1, BN, D), latency=4).reshape((BN, D))
    return m_new, l, tile.mma(p.astype(tv.dtype), tv, acc * alpha)


@tile.function
def key_range(i, seq, BM, BN, CAUSAL):
    """(number of K tiles, first tile that needs the mask) for query tile ``i``."""
    n_blocks = tile.cdiv(seq, BN)
    first_masked = seq // BN                             # only a ragged end needs masking
    if CAUSAL:
        n_blocks = tile.cdiv(min((i + 1) * BM, seq), BN)
        first_masked = min(i * BM // BN, first_masked)
    return n_blocks, first_masked


@tile.entry(occupancy=2)
def attention(o, q, k, v, BN: tile.Constant[int], CAUSAL: tile.Constant[bool]):
    BM, _, D = o.shape
    i, h, _ = o.block
    scale = (1.0 / D ** 0.5) * LOG2E                     # folded at compile time
    kvh = h // (q.shape[0] // k.shape[0])                # GQA: the KV head of query head h
    tq = q.load((h, i, 0), (1, BM, D)).reshape((BM, D))
    m = tile.full((BM, 1), -math.inf, tile.float32)
    l = tile.zeros((BM, 1), tile.float32)
    acc = tile.zeros((BM, D), tile.float32)
    n_blocks, first_masked = key_range(i, k.shape[1], BM, BN, CAUSAL)
    for j in range(n_blocks):
        s = scores(tq, k, kvh, j, BM, BN, D)
        if j >= first_masked:                            # split out of the loop by tilejit
            s = masked(s, i, j, k.shape[1], BM, BN, CAUSAL)
        m, l, acc = online_update(s, v, kvh, j, m, l, acc, scale, BN, D)
    out = tile.truediv(acc, l, flush_to_zero=True, rounding_mode=tile.RoundingMode.APPROX)
    o.store(out.astype(o.dtype).reshape((BM, 1, D)))


@tile.entry(occupancy=1)
def attention_2q(o, q, k, v, BN: tile.Constant[int], CAUSAL: tile.Constant[bool]):
    """Two query tiles per block: ``o`` partitioned (2 * BM, 1, D); tiles 2i and 2i + 1."""
    BM2, _, D = o.shape
    BM = BM2 // 2
    i2, h, _ = o.block
    ia, ib = 2 * i2, 2 * i2 + 1
    scale = (1.0 / D ** 0.5) * LOG2E
    kvh = h // (q.shape[0] // k.shape[0])
    qa = q.load((h, ia, 0), (1, BM, D)).reshape((BM, D))
    # with an odd number of query tiles the last block's tile b is past the end (its rows are
    # not stored): it reads tile a's rows rather than a tile index out of bounds
    qb = q.load((h, min(ib, tile.cdiv(q.shape[1], BM) - 1), 0), (1, BM, D)).reshape((BM, D))
    ma = tile.full((BM, 1), -math.inf, tile.float32)
    mb = tile.full((BM, 1), -math.inf, tile.float32)
    la = tile.zeros((BM, 1), tile.float32)
    lb = tile.zeros((BM, 1), tile.float32)
    acc_a = tile.zeros((BM, D), tile.float32)
    acc_b = tile.zeros((BM, D), tile.float32)
    na, fa = key_range(ia, k.shape[1], BM, BN, CAUSAL)
    nb, fb = key_range(ib, k.shape[1], BM, BN, CAUSAL)   # nb >= na: tile b is below tile a
    seq = k.shape[1]
    for j in range(na):
        sa = scores(qa, k, kvh, j, BM, BN, D)
        sb = scores(qb, k, kvh, j, BM, BN, D)
        if j >= fa:                                      # fa <= fb: one split for both
            sa = masked(sa, ia, j, seq, BM, BN, CAUSAL)
            sb = masked(sb, ib, j, seq, BM, BN, CAUSAL)
        ma, la, acc_a = online_update(sa, v, kvh, j, ma, la, acc_a, scale, BN, D)
        mb, lb, acc_b = online_update(sb, v, kvh, j, mb, lb, acc_b, scale, BN, D)
    for j in range(na, nb):                              # causal: tile b's last diagonal tiles
        sb = masked(scores(qb, k, kvh, j, BM, BN, D), ib, j, seq, BM, BN, CAUSAL)
        mb, lb, acc_b = online_update(sb, v, kvh, j, mb, lb, acc_b, scale, BN, D)
    out_a = tile.truediv(acc_a, la, flush_to_zero=True, rounding_mode=tile.RoundingMode.APPROX)
    out_b = tile.truediv(acc_b, lb, flush_to_zero=True, rounding_mode=tile.RoundingMode.APPROX)
    o.store(tile.cat(out_a, out_b, axis=0).astype(o.dtype).reshape((BM2, 1, D)))


def reference(q, k, v, causal):
    """softmax(q k^T / sqrt(d)) v in float64; k and v may have fewer heads (GQA)."""
    g = q.shape[0] // k.shape[0]
    k, v = np.repeat(k, g, axis=0), np.repeat(v, g, axis=0)
    s = q.astype(np.float64) @ np.swapaxes(k, 1, 2).astype(np.float64) / math.sqrt(q.shape[2])
    if causal:
        n = q.shape[1]
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v.astype(np.float64)


def main() -> int:
    gpu = current_backend() == "cuda"
    bh, s, d = (64, 2048, 128) if gpu else (2, 200, 32)
    bm, bn = (128, 64) if gpu else (64, 32)
    rng = np.random.default_rng(0)
    qn, kn, vn = (rng.standard_normal((bh, s, d)).astype(np.float16) for _ in range(3))
    q, k, v = (api.from_numpy(a).sync() for a in (qn, kn, vn))
    ok = True
    for causal in (False, True):
        o = api.zeros((bh, s, d), tile.float16).sync()
        attention(o.permute(1, 0, 2).partition((bm, 1, d)), q, k, v, bn, causal).sync()
        ref = reference(qn[:4], kn[:4], vn[:4], causal)      # a few heads suffice to check
        err = np.abs(o.to_numpy()[:4].astype(np.float64) - ref).max()
        o2 = api.zeros((bh, s, d), tile.float16).sync()
        attention_2q(o2.permute(1, 0, 2).partition((2 * bm, 1, d)), q, k, v, bn, causal).sync()
        err2 = np.abs(o2.to_numpy()[:4].astype(np.float64) - ref).max()
        # GQA: two query heads per KV head
        kv_heads = (api.from_numpy(a[: bh // 2]).sync() for a in (kn, vn))
        og = api.zeros((bh, s, d), tile.float16).sync()
        attention(og.permute(1, 0, 2).partition((bm, 1, d)), q, *kv_heads, bn, causal).sync()
        g = min(2, bh // 2)                                  # KV heads checked
        errg = np.abs(og.to_numpy()[:2 * g].astype(np.float64) -
                      reference(qn[:2 * g], kn[:g], vn[:g], causal)).max()
        good = max(err, err2, errg) < 5e-3
        ok &= good
        print(f"  {'causal' if causal else 'non-causal'}: max error {err:.1e}, two query tiles "
              f"{err2:.1e}, GQA {errg:.1e}")
    print(f"flash_attention: {bh} heads, S={s}, D={d} {'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
