"""Matrix multiplies with a K loop (fp16, bf16, tf32 via astype, int8 -> int32), a batched
matmul, `a @ b`, and flash attention forward with online softmax and causal masking."""
import ml_dtypes
import numpy as np

import tilejit as tile

from . import Case, In, Out, rand

NEG_INF = float("-inf")


def matmul(c, a, b, BK: tile.Constant[int]):
    BM, BN = c.shape
    i, j = c.block
    acc = tile.zeros((BM, BN), tile.float32)
    for k in range(tile.cdiv(a.shape[1], BK)):
        ta = a.load((i, k), (BM, BK))
        tb = b.load((k, j), (BK, BN))
        acc = tile.mma(ta, tb, acc)
    c.store(acc.astype(c.dtype))


def matmul_tf32(c, a, b, BK: tile.Constant[int]):
    BM, BN = c.shape
    i, j = c.block
    acc = tile.zeros((BM, BN), tile.float32)
    for k in range(tile.cdiv(a.shape[1], BK)):
        ta = a.load((i, k), (BM, BK)).astype(tile.tfloat32)
        tb = b.load((k, j), (BK, BN)).astype(tile.tfloat32)
        acc = tile.mma(ta, tb, acc)
    c.store(acc)


def matmul_int8(c, a, b, BK: tile.Constant[int]):
    BM, BN = c.shape
    i, j = c.block
    acc = tile.zeros((BM, BN), tile.int32)
    for k in range(tile.cdiv(a.shape[1], BK)):
        acc = tile.mma(a.load((i, k), (BM, BK)), b.load((k, j), (BK, BN)), acc)
    c.store(acc)


def matmul_operator(c, a, b):
    """Single-tile K: `a @ b` (float32 accumulation, float16 result) plus a bias row."""
    BM, BN = c.shape
    i, j = c.block
    K = 64
    t = a.load((i, 0), (BM, K)) @ b.load((0, j), (K, BN))
    c.store(t + 1.0)


def batched_matmul(c, a, b, BK: tile.Constant[int]):
    BB, BM, BN = c.shape
    bi, i, j = c.block
    acc = tile.zeros((BB, BM, BN), tile.float32)
    for k in range(tile.cdiv(a.shape[2], BK)):
        acc = tile.mma(a.load((bi, i, k), (BB, BM, BK)), b.load((bi, k, j), (BB, BK, BN)), acc)
    c.store(acc.astype(c.dtype))


def flash_attention(o, q, k, v, BN: tile.Constant[int], CAUSAL: tile.Constant[bool]):
    """One head per grid z-index; q, k, v, o are (H, S, D); online softmax in float32."""
    _, BM, D = o.shape
    h, i, _ = o.block
    scale = 1.0 / (D ** 0.5)
    tq = q.load((h, i, 0), (1, BM, D)).reshape((BM, D))
    m = tile.full((BM, 1), NEG_INF, tile.float32)
    l = tile.zeros((BM, 1), tile.float32)
    acc = tile.zeros((BM, D), tile.float32)
    seq = k.shape[1]
    rows = i * BM + tile.arange(BM)[:, None]
    n_blocks = tile.cdiv(seq, BN)
    if CAUSAL:
        n_blocks = tile.cdiv(min((i + 1) * BM, seq), BN)
    for j in range(n_blocks):
        tk = k.load((h, j, 0), (1, BN, D)).reshape((BN, D))
        tv = v.load((h, j, 0), (1, BN, D)).reshape((BN, D))
        s = tile.mma(tq, tk.T, tile.zeros((BM, BN), tile.float32)) * scale
        cols = j * BN + tile.arange(BN)[None, :]
        valid = cols < seq
        if CAUSAL:
            valid = valid & (cols <= rows)
        s = tile.where(valid, s, NEG_INF)
        m_new = tile.maximum(m, tile.max(s, axis=1, keepdims=True))
        p = tile.exp(s - m_new)
        alpha = tile.exp(m - m_new)
        l = l * alpha + tile.sum(p, axis=1, keepdims=True)
        acc = acc * alpha + tile.mma(p.astype(tv.dtype), tv, tile.zeros((BM, D), tile.float32))
        m = m_new
    out = acc / l
    o.store(out.astype(o.dtype).reshape((1, BM, D)))


def _mm_ref(c, a, b, BK=None):
    r = a.astype(np.float64) @ b.astype(np.float64)
    return {"c": r.astype(c.dtype)}


def _mm_int_ref(c, a, b, BK):
    return {"c": (a.astype(np.int32) @ b.astype(np.int32)).astype(np.int32)}


def _mm_op_ref(c, a, b):
    r = a[:, :64].astype(np.float32) @ b[:64, :].astype(np.float32)
    return {"c": (r.astype(np.float16).astype(np.float32) + 1.0).astype(np.float16)}


def _bmm_ref(c, a, b, BK):
    return {"c": np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(c.dtype)}


def _attn_ref(o, q, k, v, BN, CAUSAL):
    qf, kf, vf = (t.astype(np.float32) for t in (q, k, v))
    d = q.shape[2]
    s = qf @ np.swapaxes(kf, 1, 2) / np.sqrt(d)
    if CAUSAL:
        n = s.shape[1]
        s = np.where(np.tril(np.ones((n, s.shape[2]), bool)), s, -np.inf)
    s = s - s.max(axis=2, keepdims=True)
    p = np.exp(s)
    p = p / p.sum(axis=2, keepdims=True)
    return {"o": (p @ vf).astype(o.dtype)}


def _mats(r, m, k, n, dtype, lo=-1.0, hi=1.0):
    return rand(r, (m, k), dtype, lo, hi), rand(r, (k, n), dtype, lo, hi)


def _mm_case(name, kernel, dtype, out_dtype, ref, tol, lo=-1.0, hi=1.0):
    def make(r):
        a, b = _mats(r, 200, 100, 136, dtype, lo, hi)
        return dict(c=Out(np.zeros((200, 136), out_dtype), (64, 64)), a=In(a), b=In(b))
    return Case(name, kernel, make, ref, constants={"BK": 32}, rtol=tol, atol=tol)


CASES = [
    _mm_case("matmul_fp16", matmul, np.float16, np.float16, _mm_ref, 1e-2),
    _mm_case("matmul_bf16", matmul, ml_dtypes.bfloat16, ml_dtypes.bfloat16, _mm_ref, 3e-2),
    _mm_case("matmul_fp32_out", matmul, np.float16, np.float32, _mm_ref, 1e-3),
    _mm_case("matmul_tf32", matmul_tf32, np.float32, np.float32, _mm_ref, 2e-2),
    _mm_case("matmul_int8", matmul_int8, np.int8, np.int32, _mm_int_ref, 0, lo=-8, hi=8),
    Case("matmul_operator", matmul_operator,
         lambda r: dict(c=Out(np.zeros((96, 80), np.float16), (32, 32)),
                        a=In(rand(r, (96, 64), np.float16)), b=In(rand(r, (64, 80), np.float16))),
         _mm_op_ref, rtol=1e-2, atol=1e-2),
    Case("batched_matmul", batched_matmul,
         lambda r: dict(c=Out(np.zeros((3, 70, 50), np.float32), (1, 32, 32)),
                        a=In(rand(r, (3, 70, 40), np.float16)),
                        b=In(rand(r, (3, 40, 50), np.float16))),
         _bmm_ref, constants={"BK": 16}, rtol=1e-3, atol=1e-3),
    Case("flash_attention_causal", flash_attention,
         lambda r: dict(o=Out(np.zeros((2, 100, 64), np.float16), (1, 32, 64)),
                        q=In(rand(r, (2, 100, 64), np.float16)),
                        k=In(rand(r, (2, 100, 64), np.float16)),
                        v=In(rand(r, (2, 100, 64), np.float16))),
         _attn_ref, constants={"BN": 32, "CAUSAL": True}, rtol=1e-2, atol=1e-2),
    Case("flash_attention", flash_attention,
         lambda r: dict(o=Out(np.zeros((2, 90, 32), np.float32), (1, 16, 32)),
                        q=In(rand(r, (2, 90, 32), np.float32)),
                        k=In(rand(r, (2, 90, 32), np.float32)),
                        v=In(rand(r, (2, 90, 32), np.float32))),
         _attn_ref, constants={"BN": 16, "CAUSAL": False}, rtol=1e-4, atol=1e-4),
]
