"""Block-scaled matmul cases (``tile.mma_scaled``, issue 25 item 1), shared by
tests/test_mma_scaled.py (simulator, both lowerings) and tests/gpu/test_mma_scaled_gpu.py."""
import ml_dtypes
import numpy as np

import tilejit as tile
from tilejit import api

#: (input dtype, scale dtype, scale block along K)
FORMATS = [(ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e8m0fnu, 32),
           (ml_dtypes.float8_e5m2, ml_dtypes.float8_e8m0fnu, 32),
           (ml_dtypes.float4_e2m1fn, ml_dtypes.float8_e8m0fnu, 32),
           (ml_dtypes.float4_e2m1fn, ml_dtypes.float8_e8m0fnu, 16),
           (ml_dtypes.float4_e2m1fn, ml_dtypes.float8_e4m3fn, 16)]
IDS = [f"{a.__name__}-{s.__name__}-{b}" for a, s, b in FORMATS]


@tile.entry
def scaled_matmul(c, a, sa, b, sb, BM: tile.Constant[int], BN: tile.Constant[int],
                  BK: tile.Constant[int], BS: tile.Constant[int]):
    """A K loop of block-scaled products, as in a blockwise MXFP8/MXFP4 GEMM."""
    i, j = tile.bid(0), tile.bid(1)
    acc = tile.zeros((BM, BN), tile.float32)
    for k in range(tile.cdiv(a.shape[1], BK)):
        ta = a.load((i, k), (BM, BK))
        tb = b.load((k, j), (BK, BN))
        tsa = sa.load((i, k), (BM, BK // BS))
        tsb = sb.load((k, j), (BK // BS, BN))
        acc = tile.mma_scaled(ta, tsa, tb, tsb, acc)
    c.store(acc)


def operands(idt, sdt, block, m=64, n=32, k=128, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-6, 6, (m, k)).astype(idt)
    b = rng.uniform(-6, 6, (k, n)).astype(idt)
    if sdt is ml_dtypes.float8_e8m0fnu:
        sa = (2.0 ** rng.integers(-8, 8, (m, k // block))).astype(sdt)
        sb = (2.0 ** rng.integers(-8, 8, (k // block, n))).astype(sdt)
    else:
        sa = rng.uniform(0.01, 4, (m, k // block)).astype(sdt)
        sb = rng.uniform(0.01, 4, (k // block, n)).astype(sdt)
    return a, sa, b, sb


def reference(a, sa, b, sb):
    """float64 (exact products) ``(a * sa) @ (b * sb)`` with the scales repeated over K."""
    f = np.float64
    ka, kb = a.shape[1] // sa.shape[1], b.shape[0] // sb.shape[0]
    return (a.astype(f) * np.repeat(sa.astype(f), ka, 1)) @ (b.astype(f) *
                                                              np.repeat(sb.astype(f), kb, 0))


def run(idt, sdt, block, m=64, n=32, k=128, bm=32, bn=32, bk=64, seed=0):
    a, sa, b, sb = operands(idt, sdt, block, m, n, k, seed)
    c = api.zeros((m, n)).sync()
    scaled_matmul(c.partition((bm, bn)), *(api.from_numpy(x).sync() for x in (a, sa, b, sb)),
                  bm, bn, bk, block).sync()
    return c.to_numpy(), reference(a, sa, b, sb)


def check(idt, sdt, block, **kw):
    got, want = run(idt, sdt, block, **kw)
    # exact products; float32 sums in an order of their own
    scale = np.abs(want).max()
    np.testing.assert_allclose(got, want, rtol=0, atol=scale * 2e-6)
