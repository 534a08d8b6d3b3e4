"""Triton tutorial 09, persistent matmul, in tilejit: one wave of blocks loops over all tiles.

    python examples/triton_tutorials/t09_persistent_matmul.py

The tutorial launches as many programs as the GPU has SMs; each walks the output tiles with a
stride of the grid (in the grouped order of tutorial 03), so no block is scheduled twice and the
last wave's tail is spread over every SM. That is `matmul_scheduled` with PERSISTENT=True in
examples/matmul.py; the file runs it next to the one-block-per-tile form.

The tutorial's TMA variants need no separate kernel: tilejit's tile loads use TMA where the layout
allows it (`allow_tma=True` is the default), so the plain kernel is the TMA one, and
``tma=False`` below (``allow_tma=False`` on its loads) is the one without, as the tutorial's
pointer-based persistent kernel. Its warp-specialized variant cannot be written: Tile IR has no
warps or warp roles (a block is one thread of tile operations), and `tileiras` chooses the
pipelining and warp specialization that Triton's ``num_stages`` and ``warp_specialize`` set.

The tutorial's fp8 runs are the same kernel given float8_e4m3fn tensors: A (M, K), B stored
transposed ((N, K) row-major, so both operands are K-contiguous as Hopper's fp8 tensor cores read
them) and C in e4m3 as in the tutorial. On sm_90 Triton keeps an fp8 ``tl.dot``'s running sum in
the tensor cores' reduced precision by default; ``fast_acc=True`` (``tile.mma(fast_acc=True)``)
is the same choice, and with it 128x128 tiles are the fastest on Hopper (with the promoted
float32 sum, 64x128: BENCHMARKS.md, 2026-11-27).
"""
import os
import sys

import ml_dtypes
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # examples/

import tilejit as tile  # noqa: E402
from tilejit import api  # noqa: E402
from tilejit.runtime import current_backend  # noqa: E402

from matmul import matmul_scheduled, scheduled_grid  # noqa: E402


def persistent_matmul(a, b, c, tiles, persistent=True, sms=None, occupancy=1, tma=True,
                      fast_acc=False):
    """Launch ``matmul_scheduled`` (``c`` a writable fp16 or fp8 tensor): one wave of
    SMs x occupancy blocks, or with ``persistent=False`` one block per tile; ``tma=False``
    keeps the loads off the TMA unit; ``fast_acc`` (fp8): the tensor cores' reduced-precision
    sum."""
    bm, bn, bk = tiles
    cfg = tile.Config(BM=bm, BN=bn, BK=bk, GROUP=8, PERSISTENT=persistent, occupancy=occupancy)
    grid = scheduled_grid(cfg, {"a": a, "b": b}, sms=sms)
    return matmul_scheduled(tile.atomic(c), a, b, bm, bn, bk, 8, persistent, tma,
                            fast_acc).grid(grid)


def fp8_error(got, ref, fast_acc=False):
    """The largest error of e4m3 results ``got`` against the float32 product ``ref``, as a
    fraction of what is allowed: half a unit in the last place of e4m3 (1/16 of the value's power
    of two; 2^-10 below the normal range), plus the sum's own error: 0.1% of the largest value
    for float32 sums in another order, 1% for the tensor cores' reduced-precision sum (fast_acc).
    Above 1 is a wrong result."""
    got, ref = np.asarray(got, np.float32), np.asarray(ref, np.float32)
    allowed = (np.maximum(np.abs(ref), 2.0 ** -6) / 16 +
               (1e-2 if fast_acc else 1e-3) * np.abs(ref).max())
    return float(np.max(np.abs(got - ref) / allowed))


def check_fp8(m, k, n, tiles, sms, rng) -> bool:
    """The tutorial's fp8 runs: e4m3 A and transposed B, e4m3 C, with TMA and without, the
    promoted and the fast sum."""
    # scaled by K^-1/4: the sums have unit variance, far below e4m3's largest value (448)
    an = (rng.standard_normal((m, k)) * k ** -0.25).astype(ml_dtypes.float8_e4m3fn)
    btn = (rng.standard_normal((n, k)) * k ** -0.25).astype(ml_dtypes.float8_e4m3fn)
    a = api.from_numpy(an).sync()
    b = api.from_numpy(btn).sync().permute(1, 0)          # (K, N), K contiguous
    ref = an.astype(np.float32) @ btn.astype(np.float32).T
    ok = True
    for tma, fast in ((True, True), (False, True), (True, False)):
        c = api.empty((m, n), tile.float8_e4m3fn).sync()
        persistent_matmul(a, b, c, tiles, True, sms, tma=tma, fast_acc=fast).sync()
        err = fp8_error(c.to_numpy().astype(np.float32), ref, fast)
        ok &= err <= 1
        print(f"  fp8 e4m3 tma={tma} fast_acc={fast}: error {err:.2f} of the rounding bound")
    return ok


def main() -> int:
    gpu = current_backend() == "cuda"
    m, k, n = (4096, 4096, 4096) if gpu else (128, 64, 160)
    tiles = (128, 128, 64) if gpu else (32, 32, 32)
    tiles8 = (128, 128, 128) if gpu else (32, 32, 64)   # fp8: twice fp16's K tile, same bytes
    sms = None if gpu else 3                        # the simulator: a wave of 3 blocks
    rng = np.random.default_rng(0)
    an = rng.standard_normal((m, k)).astype(np.float16)
    bn_ = rng.standard_normal((k, n)).astype(np.float16)
    a, b = api.from_numpy(an).sync(), api.from_numpy(bn_).sync()
    ref = an.astype(np.float32) @ bn_.astype(np.float32)
    ok = True
    for persistent, tma in ((True, True), (True, False), (False, True)):
        c = api.empty((m, n), tile.float16).sync()
        persistent_matmul(a, b, c, tiles, persistent, sms, tma=tma).sync()
        got = c.to_numpy().astype(np.float32)
        err = np.abs(got - ref).max() / np.abs(ref).max()
        ok &= bool(err < 1e-2)
        print(f"  persistent={persistent} tma={tma}: max relative error {err:.1e}")
    ok &= check_fp8(m, k, n, tiles8, sms, rng)
    print(f"t09_persistent_matmul: fp16 and fp8 {m}x{k}x{n} {'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
