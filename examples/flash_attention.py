"""Flash attention forward, causal and non-causal, checked against softmax(QK^T/sqrt(d))V.

    python examples/flash_attention.py

The output is partitioned as the (S, B*H, D) view of the (B*H, S, D) tensor, so the partition
gives the grid and each block its (query tile, head); consecutive blocks work on the same head,
which keeps its K and V in L2. The online softmax runs in exp2 with float32 statistics. The
causal mask is written as an `if` on the key tile index: tilejit splits the loop into an
unmasked part and the masked diagonal tiles, so most iterations carry no branch.
"""
import math
import sys

import numpy as np

import tilejit as tile
from tilejit import api
from tilejit.runtime import current_backend

LOG2E = 1.0 / math.log(2.0)


@tile.entry(occupancy=2)
def attention(o, q, k, v, BN: tile.Constant[int], CAUSAL: tile.Constant[bool]):
    BM, _, D = o.shape
    i, h, _ = o.block
    scale = (1.0 / D ** 0.5) * LOG2E                     # folded at compile time
    tq = q.load((h, i, 0), (1, BM, D)).reshape((BM, D))
    rows = i * BM + tile.arange(BM)[:, None]
    m = tile.full((BM, 1), -math.inf, tile.float32)
    l = tile.zeros((BM, 1), tile.float32)
    acc = tile.zeros((BM, D), tile.float32)
    seq = k.shape[1]
    n_blocks = tile.cdiv(seq, BN)
    first_masked = seq // BN                             # only a ragged end needs masking
    if CAUSAL:
        n_blocks = tile.cdiv(min((i + 1) * BM, seq), BN)
        first_masked = min(i * BM // BN, first_masked)
    for j in range(n_blocks):
        tk = k.load((h, j, 0), (1, BN, D), latency=2).reshape((BN, D))
        s = tile.mma(tq, tk.T, tile.zeros((BM, BN), tile.float32))   # .T: a transposed load
        if j >= first_masked:
            cols = j * BN + tile.arange(BN)[None, :]
            valid = cols < seq
            if CAUSAL:
                valid = valid & (cols <= rows)
            s = tile.where(valid, s, -math.inf)
        m_new = tile.maximum(m, tile.max(s, axis=1, keepdims=True) * scale)
        p = tile.exp2(s * scale - m_new, flush_to_zero=True)
        alpha = tile.exp2(m - m_new, flush_to_zero=True)
        l = l * alpha + tile.sum(p, axis=1, keepdims=True)
        tv = v.load((h, j, 0), (1, BN, D), latency=4).reshape((BN, D))
        acc = tile.mma(p.astype(tv.dtype), tv, acc * alpha)
        m = m_new
    out = tile.truediv(acc, l, flush_to_zero=True, rounding_mode=tile.RoundingMode.APPROX)
    o.store(out.astype(o.dtype).reshape((BM, 1, D)))


def reference(q, k, v, causal):
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
        good = err < 5e-3
        ok &= good
        print(f"  {'causal' if causal else 'non-causal'}: max error {err:.1e}")
    print(f"flash_attention: {bh} heads, S={s}, D={d} {'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
