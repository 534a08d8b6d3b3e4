"""tilejit's CPU simulator against Triton's interpreter (``TRITON_INTERPRET=1``), CPU time.

    python benchmarks/simulator_vs_triton.py [--reps N]

The same two kernels written in each language, the same algorithm (a 256x1024 row softmax, one
row a block; a 512^3 float32 matmul in 64x64x32 tiles), timed warm (compiles and first calls
excluded) as process CPU time per call, in one process. Needs torch and triton (CPU builds do);
without them it prints ``simulator_vs_triton: skipped: <why>`` and exits 0.
"""
import argparse
import os
import statistics
import sys
import time

os.environ["TRITON_INTERPRET"] = "1"          # before triton is imported
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cpu_seconds(fn, reps):
    fn()
    times = []
    for _ in range(reps):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return statistics.median(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args(argv)
    try:
        import torch
        import triton
        import triton.language as tl
    except ImportError as e:
        print(f"simulator_vs_triton: skipped: {e}")
        return 0
    import numpy as np
    import tilejit as tile
    from tilejit.runtime import backend

    @triton.jit
    def t_softmax(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        m = offs < n_cols
        x = tl.load(x_ptr + row * n_cols + offs, mask=m, other=-float("inf"))
        x = x - tl.max(x, 0)
        e = tl.exp(x)
        tl.store(y_ptr + row * n_cols + offs, e / tl.sum(e, 0), mask=m)

    @triton.jit
    def t_matmul(a_ptr, b_ptr, c_ptr, K, N, BM: tl.constexpr, BN: tl.constexpr,
                 BK: tl.constexpr):
        pm, pn = tl.program_id(0), tl.program_id(1)
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
            b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
            acc += tl.dot(a, b)
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)

    @tile.entry
    def j_softmax(y, x):
        t = tile.load_tile_like(x, y)
        t = t - t.max(axis=1, keepdims=True)
        e = tile.exp(t)
        y.store(e / e.sum(axis=1, keepdims=True))

    @tile.entry
    def j_matmul(c, a, b, BK: tile.Constant[int]):
        bm, bn = c.shape
        acc = tile.zeros((bm, bn), tile.float32)
        for k in range(tile.cdiv(a.shape[1], BK)):
            acc = tile.mma(a.load((tile.bid(0), k), (bm, BK)), b.load((k, tile.bid(1)), (BK, bn)),
                           acc)
        c.store(acc)

    rows = []
    x = torch.randn(256, 1024)
    y = torch.empty_like(x)
    xn, yn = x.numpy(), np.empty((256, 1024), np.float32)
    n = 512
    a, b = torch.randn(n, n), torch.randn(n, n)
    c = torch.empty(n, n)
    an, bn, cn = a.numpy(), b.numpy(), np.empty((n, n), np.float32)
    with backend.force("simulator"):
        for name, tri, sim, check in (
                ("softmax 256x1024",
                 lambda: t_softmax[(256,)](x, y, 1024, BLOCK=1024),
                 lambda: j_softmax(tile.partition(yn, (1, 1024)), xn).sync(),
                 lambda: np.testing.assert_allclose(yn, y.numpy(), rtol=1e-5, atol=1e-6)),
                ("matmul 512^3 f32",
                 lambda: t_matmul[(n // 64, n // 64)](a, b, c, n, n, BM=64, BN=64, BK=32),
                 lambda: j_matmul(tile.partition(cn, (64, 64)), an, bn, 32).sync(),
                 lambda: np.testing.assert_allclose(cn, c.numpy(), rtol=1e-3, atol=1e-2))):
            ts = cpu_seconds(tri, args.reps)
            js = cpu_seconds(sim, args.reps)
            check()
            rows.append((name, js, ts))
    print("| kernel | tilejit simulator (CPU s) | Triton interpreter (CPU s) | speedup |")
    print("|---|---|---|---|")
    for name, js, ts in rows:
        print(f"| {name} | {js:.3f} | {ts:.3f} | {ts / js:.1f}x |")
    print("simulator_vs_triton: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
