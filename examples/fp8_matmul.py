"""FP8 (e4m3) matmul with per-tensor scales, the layout of `torch._scaled_mm`.

    python examples/fp8_matmul.py

C = (A @ B) * scale_a * scale_b in bf16, with A (M, K) row-major and B (K, N) column-major (the
transpose of a row-major (N, K) matrix): both operands are K-contiguous, which is what Hopper's
FP8 tensor cores read. The scales are one-element float32 tensors read inside the kernel, so no
value goes back to the host. The K tile is twice fp16's for the same bytes per stage.

``FAST_ACC=True`` lets the tensor cores keep the running sum in their own reduced precision
(``torch._scaled_mm(use_fast_accum=True)``), about twice the error (7e-3 against 3e-3 relative,
bf16 out). By default the sum is promoted to float32.

``fp8_matmul_scheduled`` is the fast form (``scheduled(fast_acc)`` autotunes it; so does
``tile.autotune`` with no configs): tiles in matmul.py's grouped order, one persistent wave of
blocks, and with K tiles of 256 (``PROMOTE=AUTO``, the default, or 1) the promoted sum
written in the kernel, each K tile's fast tensor-core sum added into a float32 accumulator
(``promoted_product``). With 128x128x256 tiles and two warp groups it ran at 1330-1470 TFLOP/s
on an H200, 1.03-1.18x ``_scaled_mm`` with single runs (0.98-1.14x in a loop), and the same
error as tileiras's own promotion (1210-1300 TFLOP/s). Every K tile of 256 is one promotion
(cuBLAS promotes every 128; a K tile of 128 promoted each ran at 0.25-0.7x).
"""
import sys

import ml_dtypes
import numpy as np

import tilejit as tile
from tilejit import api
from tilejit.runtime import current_backend

from matmul import grouped_position, scheduled_grid, tile_product


@tile.entry
def fp8_matmul(c, a, b, scale_a, scale_b, BK: tile.Constant[int],
               FAST_ACC: tile.Constant[bool] = False):
    BM, BN = c.shape
    bm, bn = c.block
    acc = tile.zeros((BM, BN), tile.float32)
    for k in range(tile.cdiv(a.shape[1], BK)):
        acc = tile.mma(a.load((bm, k), (BM, BK)), b.load((k, bn), (BK, BN)), acc,
                       fast_acc=FAST_ACC)
    scale = scale_a.load((0,), ()) * scale_b.load((0,), ())
    c.store((acc * scale).astype(c.dtype))


#: candidates timed by benchmarks/vendor.py (fp8 tiles: twice fp16's K tile). With the sum
#: promoted to float32 (the default) tileiras keeps two accumulators: 128x128 tiles need two
#: compute warp groups (num_worker_warps=8; H200, tileiras 13.4: 1080-1120 TFLOP/s, 470-530
#: with one), 64x128 tiles fit one (840-1100). With FAST_ACC 128x128 with one group is fastest.
#: 128x256 and 256x128 tiles run at 0.04-0.4x of these, so they are not tried.
CONFIGS = [tile.Config(tile=(bm, 128), BK=bk, occupancy=occ, num_worker_warps=warps)
           for (bm, bk, occ, warps) in ((64, 128, 2, None), (64, 128, 3, None),
                                        (64, 128, 4, None), (64, 256, 2, None),
                                        (128, 128, 2, None), (128, 128, 1, None),
                                        (128, 128, 1, 8), (128, 256, 1, 8), (128, 128, 2, 8))]
tuned = tile.autotune(configs=CONFIGS, key=["a", "b"])(fp8_matmul)


@tile.function
def promoted_product(a, b, pm, pn, BM, BN, BK, EVERY):
    """Tile (pm, pn) of a @ b with the sum promoted in the kernel: the tensor cores' fast sums
    over EVERY K tiles, each added into a float32 accumulator (CUTLASS promotes every 128 K
    elements on Hopper, cuBLAS's ``_scaled_mm`` too)."""
    acc = tile.zeros((BM, BN), tile.float32)
    n = tile.cdiv(a.shape[1], BK)
    for k0 in range(0, n, EVERY):
        part = tile.zeros((BM, BN), tile.float32)
        for k in range(k0, min(k0 + EVERY, n)):
            part = tile.mma(a.load((pm, k), (BM, BK)), b.load((k, pn), (BK, BN)), part,
                            fast_acc=True)
        acc = acc + part
    return acc


#: PROMOTE's default: in the kernel every K tile where K tiles are 256 wide (1370-1470 TFLOP/s on
#: an H200 against tileiras's 1210-1300), else by tileiras (a K tile of 128 promoted each ran at
#: 0.25-0.7x); never for a fast sum
AUTO = -1


@tile.function
def scaled_product(a, b, pm, pn, BM, BN, BK, FAST_ACC, PROMOTE):
    """Tile (pm, pn) of a @ b, its sum promoted in the kernel (PROMOTE > 0), else by tileiras
    (or not at all: FAST_ACC)."""
    tile.static_assert(PROMOTE >= AUTO, "PROMOTE is AUTO (-1), 0 (tileiras promotes) or the "
                       "number of K tiles between promotions in the kernel")
    if PROMOTE > 0:
        return promoted_product(a, b, pm, pn, BM, BN, BK, PROMOTE)
    if PROMOTE == AUTO and not FAST_ACC and BK >= 256:
        return promoted_product(a, b, pm, pn, BM, BN, BK, 1)
    return tile_product(a, b, pm, pn, BM, BN, BK, True, FAST_ACC)


@tile.entry
def fp8_matmul_scheduled(c, a, b, scale_a, scale_b, BM: tile.Constant[int],
                         BN: tile.Constant[int], BK: tile.Constant[int],
                         GROUP: tile.Constant[int], PERSISTENT: tile.Constant[bool],
                         FAST_ACC: tile.Constant[bool] = False,
                         PROMOTE: tile.Constant[int] = AUTO):
    """``fp8_matmul`` in matmul.py's grouped (and optionally persistent) tile order: the blocks
    running at once share tiles of B in L2. ``c`` is a writable tensor (``tile.atomic``); the
    grid is ``matmul.scheduled_grid``. ``PROMOTE=n`` (n > 0) promotes the sum in the kernel
    every n K tiles (``promoted_product``) instead of leaving it to tileiras (0); the default,
    ``AUTO``, promotes in the kernel every K tile of 256 and leaves narrower ones to tileiras."""
    num_m = tile.cdiv(a.shape[0], BM)
    num_n = tile.cdiv(b.shape[1], BN)
    out = c.partition((BM, BN))
    scale = scale_a.load((0,), ()) * scale_b.load((0,), ())
    if PERSISTENT:
        for t in range(tile.bid(0), num_m * num_n, tile.num_blocks(0)):
            pm, pn = grouped_position(t, num_m, num_n, GROUP)
            acc = scaled_product(a, b, pm, pn, BM, BN, BK, FAST_ACC, PROMOTE)
            tile.store(out, (pm, pn), (acc * scale).astype(c.dtype))
    else:
        pm, pn = grouped_position(tile.bid(0), num_m, num_n, GROUP)
        acc = scaled_product(a, b, pm, pn, BM, BN, BK, FAST_ACC, PROMOTE)
        tile.store(out, (pm, pn), (acc * scale).astype(c.dtype))


def _scheduled_configs(tiles, promote=0):
    return [tile.Config(BM=bm, BN=bn, BK=bk, GROUP=8, PERSISTENT=p, occupancy=occ,
                        num_worker_warps=warps, **({"PROMOTE": promote} if promote else {}))
            for (bm, bn, bk, occ, warps) in tiles for p in (False, True)]


#: fp8_matmul_scheduled's candidates, per sum: the promoted sum's two float32 accumulators
#: limit it to 128x128 tiles (with two compute warp groups) or 64x128, tileiras's promotion or
#: the kernel's every K tile of 256 (H200, 2026-11-27: 1370-1470 TFLOP/s against tileiras's
#: 1220-1300); the fast sum's one accumulator takes 128x256 with two groups, as fp16 does
SCHEDULED_CONFIGS = {
    False: _scheduled_configs(((128, 128, 128, 1, 8), (64, 128, 128, 2, None))) +
    _scheduled_configs(((128, 128, 256, 1, 8),), promote=1),
    True: _scheduled_configs(((128, 128, 128, 1, None), (128, 128, 128, 2, None),
                              (128, 256, 128, 1, 8), (256, 128, 128, 1, 8))),
}


def scheduled(fast_acc: bool, configs=None):
    """``fp8_matmul_scheduled`` autotuned over the candidates of its sum (call with
    ``tile.atomic(c), a, b, scale_a, scale_b, FAST_ACC=fast_acc``)."""
    return tile.autotune(configs=configs or SCHEDULED_CONFIGS[fast_acc], key=["a", "b"],
                         grid=scheduled_grid)(fp8_matmul_scheduled)


def quantize(x: np.ndarray):
    """Per-tensor e4m3 quantization: (values, scale) with x ~ values * scale."""
    scale = np.float32(np.abs(x).max() / 448.0)
    return (x / scale).astype(ml_dtypes.float8_e4m3fn), scale


def main() -> int:
    m, k, n = (4096, 4096, 4096) if current_backend() == "cuda" else (64, 128, 96)
    rng = np.random.default_rng(0)
    a8, sa = quantize(rng.standard_normal((m, k)).astype(np.float32))
    bt8, sb = quantize(rng.standard_normal((n, k)).astype(np.float32))      # B^T, row-major
    a = api.from_numpy(a8).sync()
    b = api.from_numpy(bt8).sync().permute(1, 0)                           # (K, N) column-major
    c = api.zeros((m, n), tile.bfloat16).sync()
    scales = [api.from_numpy(np.array([s], np.float32)).sync() for s in (sa, sb)]
    ref = (a8.astype(np.float32) @ bt8.astype(np.float32).T) * sa * sb
    ok = True
    for fast in (False, True):
        tuned(c, a, b, *scales, FAST_ACC=fast).sync()
        err = np.abs(c.to_numpy().astype(np.float32) - ref).max() / np.abs(ref).max()
        ok &= bool(err < 1e-2)
        cfg = tuned.best_config(c, a, b, *scales, FAST_ACC=fast)
        print(f"  {m}x{k}x{n} e4m3 -> bf16, FAST_ACC={fast}, config {cfg}, "
              f"max relative error {err:.1e} {'ok' if err < 1e-2 else 'MISMATCH'}")
    small = [tile.Config(BM=32, BN=32, BK=64, GROUP=2, PERSISTENT=p, PROMOTE=e)
             for p, e in ((False, 0), (True, 0), (True, 1))]
    for cfg in small:                  # the grouped order, both schedules (small configs)
        c = api.zeros((m, n), tile.bfloat16).sync()
        scheduled(False, [cfg])(tile.atomic(c), a, b, *scales).sync()
        err = np.abs(c.to_numpy().astype(np.float32) - ref).max() / np.abs(ref).max()
        ok &= bool(err < 1e-2)
        print(f"  fp8_matmul_scheduled, persistent={cfg.constants['PERSISTENT']}, promoted in "
              f"the kernel every {cfg.constants['PROMOTE']} K tiles (0: by tileiras): max "
              f"relative error {err:.1e} {'ok' if err < 1e-2 else 'MISMATCH'}")
    print(f"fp8_matmul: promoted and fast sums, grouped and persistent "
          f"{'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
