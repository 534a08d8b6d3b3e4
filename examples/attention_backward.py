"""Flash attention backward (FlashAttention-2's algorithm), causal and not, checked against the
float64 gradients of softmax(QK^T/sqrt(d))V.

    python examples/attention_backward.py

The forward (`attention_fwd_lse`, flash_attention.py's loop) also saves each row's log2-sum-exp,
so the backward recomputes P = exp2(S * scale - lse) tile by tile instead of storing it. Then:

* `attention_bwd_delta`: delta = rowsum(dO * O) per query row;
* `attention_bwd_dkdv`: one block per (K/V tile, head) walks the query tiles that see it:
  dV += P^T dO, dP^T = V dO^T, dS^T = P^T * (dP^T - delta), dK += dS^T Q (kept transposed, so
  every product is a plain tile.mma with K/V-tile rows);
* `attention_bwd_dq`: one block per (query tile, head) walks the K/V tiles it saw:
  dQ += dS K with dS = P * (dP - delta).

dQ is computed by its own blocks rather than by atomic adds from the dK/dV blocks: no float
atomics and a deterministic result, for S and dP computed twice (7 tile products per tile pair
instead of 5). Layout (B * H, S, D) for q, k, v, o and the gradients; lse and delta (B * H, S).
"""
import math
import sys

import numpy as np

import tilejit as tile
from tilejit import api
from tilejit.runtime import current_backend

from flash_attention import LOG2E, key_range, masked, online_update, scores

ZERO = tile.PaddingMode.ZERO


@tile.entry(occupancy=2)
def attention_fwd_lse(o, lse, q, k, v, BN: tile.Constant[int], CAUSAL: tile.Constant[bool]):
    """flash_attention.attention, plus lse[h, row] = log2(sum(exp2(s * scale))) (writable)."""
    BM, _, D = o.shape
    i, h, _ = o.block
    scale = (1.0 / D ** 0.5) * LOG2E
    tq = q.load((h, i, 0), (1, BM, D)).reshape((BM, D))
    m = tile.full((BM, 1), -math.inf, tile.float32)
    l = tile.zeros((BM, 1), tile.float32)
    acc = tile.zeros((BM, D), tile.float32)
    n_blocks, first_masked = key_range(i, k.shape[1], BM, BN, CAUSAL)
    for j in range(n_blocks):
        s = scores(tq, k, h, j, BM, BN, D)
        if j >= first_masked:
            s = masked(s, i, j, k.shape[1], BM, BN, CAUSAL)
        m, l, acc = online_update(s, v, h, j, m, l, acc, scale, BN, D)
    out = tile.truediv(acc, l, flush_to_zero=True, rounding_mode=tile.RoundingMode.APPROX)
    o.store(out.astype(o.dtype).reshape((BM, 1, D)))
    tile.store(lse.partition((1, BM)), (h, i), (m + tile.log2(l)).reshape((1, BM)))


@tile.entry
def attention_bwd_delta(delta, o, do, D: tile.Constant[int]):
    """delta (B * H, S) partitioned (1, BM): rowsum(dO * O) in float32."""
    _, BM = delta.shape
    h, i = delta.block
    t = o.load((h, i, 0), (1, BM, D), padding=ZERO).astype(tile.float32) * \
        do.load((h, i, 0), (1, BM, D), padding=ZERO).astype(tile.float32)
    delta.store(tile.sum(t, axis=2))


# two compute warp groups share the dK and dV accumulators (H200, D128: 1.3-1.5x SDPA's flash
# backward with them; benchmarks/vendor.py picks occupancy 2 without them at D64)
@tile.entry(occupancy=1, num_worker_warps=8)
def attention_bwd_dkdv(dk, dv, q, k, v, do, lse, delta, BM: tile.Constant[int],
                       CAUSAL: tile.Constant[bool]):
    """dk, dv: the (S, B * H, D) views partitioned (BN, 1, D); one block per K/V tile."""
    BN, _, D = dk.shape
    j, h, _ = dk.block
    scale = (1.0 / D ** 0.5) * LOG2E
    seq = q.shape[1]
    tk = k.load((h, j, 0), (1, BN, D)).reshape((BN, D))
    tv = v.load((h, j, 0), (1, BN, D)).reshape((BN, D))
    dk_acc = tile.zeros((BN, D), tile.float32)
    dv_acc = tile.zeros((BN, D), tile.float32)
    keys = j * BN + tile.arange(BN)[:, None]
    first, diag_end = 0, 0
    if CAUSAL:
        first = j * BN // BM                             # query tiles above see no key here
        diag_end = tile.cdiv((j + 1) * BN, BM)           # ... and these cross the diagonal
    # Query rows past the end need no mask: their q, dO, lse and delta load as zeros, which
    # makes their dV term P^T dO and their dS^T, hence their dK term, zero.
    for i in range(first, tile.cdiv(seq, BM)):
        tq = q.load((h, i, 0), (1, BM, D)).reshape((BM, D))
        tdo = do.load((h, i, 0), (1, BM, D)).reshape((BM, D))
        lse_i = lse.load((h, i), (1, BM), padding=ZERO)                  # (1, BM)
        st = tile.mma(tk, tq.T, tile.zeros((BN, BM), tile.float32))      # S^T
        pt = tile.exp2(st * scale - lse_i, flush_to_zero=True)
        if i < diag_end:                                 # split out of the loop by tilejit
            pt = tile.where(keys <= i * BM + tile.arange(BM)[None, :], pt, 0.0)
        dv_acc = tile.mma(pt.astype(tdo.dtype), tdo, dv_acc)
        dpt = tile.mma(tv, tdo.T, tile.zeros((BN, BM), tile.float32))    # dP^T
        dst = pt * (dpt - delta.load((h, i), (1, BM), padding=ZERO))
        dk_acc = tile.mma(dst.astype(tq.dtype), tq, dk_acc)
    dk.store((dk_acc * (1.0 / D ** 0.5)).astype(dk.dtype).reshape((BN, 1, D)))
    dv.store(dv_acc.astype(dv.dtype).reshape((BN, 1, D)))


@tile.entry(occupancy=1, num_worker_warps=8)
def attention_bwd_dq(dq, q, k, v, do, lse, delta, BN: tile.Constant[int],
                     CAUSAL: tile.Constant[bool]):
    """dq: the (S, B * H, D) view partitioned (BM, 1, D); one block per query tile."""
    BM, _, D = dq.shape
    i, h, _ = dq.block
    scale = (1.0 / D ** 0.5) * LOG2E
    seq = k.shape[1]
    tq = q.load((h, i, 0), (1, BM, D)).reshape((BM, D))
    tdo = do.load((h, i, 0), (1, BM, D)).reshape((BM, D))
    lse_i = lse.load((h, i), (1, BM), padding=ZERO).reshape((BM, 1))
    delta_i = delta.load((h, i), (1, BM), padding=ZERO).reshape((BM, 1))
    rows = i * BM + tile.arange(BM)[:, None]
    dq_acc = tile.zeros((BM, D), tile.float32)
    n_blocks, first_masked = key_range(i, seq, BM, BN, CAUSAL)
    for j in range(n_blocks):
        tk = k.load((h, j, 0), (1, BN, D), latency=2).reshape((BN, D))
        tv = v.load((h, j, 0), (1, BN, D), latency=2).reshape((BN, D))
        s = tile.mma(tq, tk.T, tile.zeros((BM, BN), tile.float32))
        p = tile.exp2(s * scale - lse_i, flush_to_zero=True)
        if j >= first_masked:
            cols = j * BN + tile.arange(BN)[None, :]
            valid = cols < seq
            if CAUSAL:
                valid = valid & (cols <= rows)
            p = tile.where(valid, p, 0.0)
        dp = tile.mma(tdo, tv.T, tile.zeros((BM, BN), tile.float32))
        ds = p * (dp - delta_i)
        dq_acc = tile.mma(ds.astype(tk.dtype), tk, dq_acc)
    dq.store((dq_acc * (1.0 / D ** 0.5)).astype(dq.dtype).reshape((BM, 1, D)))


def forward(o, lse, q, k, v, bm, bn, causal):
    """The forward launch (tilejit tensors or GPU arrays such as torch tensors)."""
    d = q.shape[2]
    return attention_fwd_lse(tile.partition(o.permute(1, 0, 2), (bm, 1, d)), tile.atomic(lse),
                             q, k, v, bn, causal)


def backward(dq, dk, dv, q, k, v, o, do, lse, delta, tiles, causal):
    """The three launches of the backward (``tiles``: (BM, BN) for dq, (BN, BM) for dk/dv and
    the delta tile)."""
    (bm, bn), (kn, km) = tiles
    d = q.shape[2]
    ops = [attention_bwd_delta(tile.partition(delta, (1, bm)), o, do, d),
           attention_bwd_dkdv(tile.partition(dk.permute(1, 0, 2), (kn, 1, d)),
                              tile.partition(dv.permute(1, 0, 2), (kn, 1, d)), q, k, v, do, lse,
                              delta, km, causal),
           attention_bwd_dq(tile.partition(dq.permute(1, 0, 2), (bm, 1, d)), q, k, v, do, lse,
                            delta, bn, causal)]
    return ops[0].then(lambda _: ops[1]).then(lambda _: ops[2])


def reference(q, k, v, do, causal):
    """(o, dq, dk, dv) in float64."""
    q, k, v, do = (a.astype(np.float64) for a in (q, k, v, do))
    sc = 1.0 / math.sqrt(q.shape[2])
    s = q @ np.swapaxes(k, 1, 2) * sc
    if causal:
        s = np.where(np.tril(np.ones(s.shape[1:], bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = p @ v
    dv = np.swapaxes(p, 1, 2) @ do
    dp = do @ np.swapaxes(v, 1, 2)
    ds = p * (dp - (do * o).sum(-1, keepdims=True))
    return o, ds @ k * sc, np.swapaxes(ds, 1, 2) @ q * sc, dv


def main() -> int:
    gpu = current_backend() == "cuda"
    bh, s, d = (32, 2048, 128) if gpu else (2, 160, 32)
    bm, bn = (128, 64) if gpu else (64, 32)
    rng = np.random.default_rng(0)
    qn, kn, vn, don = (rng.standard_normal((bh, s, d)).astype(np.float16) for _ in range(4))
    q, k, v, do = (api.from_numpy(a).sync() for a in (qn, kn, vn, don))
    ok = True
    for causal in (False, True):
        o = api.zeros((bh, s, d), tile.float16).sync()
        lse = api.zeros((bh, s), tile.float32).sync()
        delta = api.zeros((bh, s), tile.float32).sync()
        grads = [api.zeros((bh, s, d), tile.float16).sync() for _ in range(3)]
        forward(o, lse, q, k, v, bm, bn, causal).sync()
        backward(*grads, q, k, v, o, do, lse, delta, ((bm, bn), (bn, bm)), causal).sync()
        n = min(bh, 2)                                       # a few heads suffice to check
        refs = reference(qn[:n], kn[:n], vn[:n], don[:n], causal)
        errs = [np.abs(t.to_numpy()[:n].astype(np.float64) - r).max() / np.abs(r).max()
                for t, r in zip([o] + grads, refs)]
        good = max(errs) < 1e-2
        ok &= good
        print(f"  {'causal' if causal else 'non-causal'}: max relative error o {errs[0]:.1e}, "
              f"dq {errs[1]:.1e}, dk {errs[2]:.1e}, dv {errs[3]:.1e}")
    print(f"attention_backward: {bh} heads, S={s}, D={d} {'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
