"""Matrix multiply for fp16, bf16 and float32 (on tf32 tensor cores), tuned by `tile.autotune`.

    python examples/matmul.py

`matmul`: each block computes one (BM, BN) tile of C with a K loop of `tile.mma`; a branch on
`a.dtype` (decided when the kernel is specialized) sends float32 through tf32. It is tuned over
the default search space (no `configs=`): the output tile, the K tile `BK` (a `tile.Constant`
whose name says what it is), occupancy and clusters (`num_ctas`).

`matmul_hinted` (``hinted``, autotuned over a few configs): a latency hint on the loads, for
skinny products.

`matmul_scheduled`: the same product with the block order in the kernel's hands. Tiles are
visited in groups of GROUP row tiles (the blocks running at once share tiles of B in L2), and with
PERSISTENT one wave of blocks (a block per SM and occupancy slot) loops over all tiles, so no
block is scheduled twice and the last wave's tail is spread over every SM.

The first call for a given shape times every config on the GPU and remembers the winner (also on
disk, next to the cubin cache); on the simulator the first config that compiles is used.
"""
import sys

import numpy as np

import tilejit as tile
from tilejit import api
from tilejit.runtime import current_backend


@tile.autotune(key=["a", "b"])
@tile.entry
def matmul(c, a, b, BK: tile.Constant[int]):
    """fp16 / bf16 inputs, or float32 rounded to tf32 for the tensor cores; float32 accumulation."""
    BM, BN = c.shape
    bm, bn = c.block
    acc = tile.zeros((BM, BN), tile.float32)
    for k in range(tile.cdiv(a.shape[1], BK)):
        ta = a.load((bm, k), (BM, BK))
        tb = b.load((k, bn), (BK, BN))
        if a.dtype == tile.float32:             # decided per specialization, before typing
            ta, tb = ta.astype(tile.tfloat32), tb.astype(tile.tfloat32)
        acc = tile.mma(ta, tb, acc)
    c.store(acc.astype(c.dtype))


@tile.entry
def matmul_hinted(c, a, b, BK: tile.Constant[int], LATENCY: tile.Constant[int]):
    """``matmul`` with a latency hint on both loads (how far ahead tileiras issues them): for
    skinny products (M <= 256), whose few blocks each stream a long strip of B."""
    BM, BN = c.shape
    bm, bn = c.block
    acc = tile.zeros((BM, BN), tile.float32)
    for k in range(tile.cdiv(a.shape[1], BK)):
        acc = tile.mma(a.load((bm, k), (BM, BK), latency=LATENCY),
                       b.load((k, bn), (BK, BN), latency=LATENCY), acc)
    c.store(acc.astype(c.dtype))


#: matmul_hinted's candidates (benchmarks/explore_skinny.py, H200 2026-11-27: at M = 256,
#: N = K = 8192, 128x128x64 tiles with latency 6 ran 2-4% faster than without the hint)
HINTED_CONFIGS = [tile.Config(tile=t, BK=bk, LATENCY=lat, occupancy=occ)
                  for (t, bk, lat, occ) in (((16, 64), 128, 3, 1), ((16, 64), 128, 3, 2),
                                            ((64, 128), 64, 6, 2), ((128, 128), 64, 6, 1))]
hinted = tile.autotune(configs=HINTED_CONFIGS, key=["a", "b"])(matmul_hinted)


@tile.function
def grouped_position(t, num_m, num_n, GROUP):
    """Tile ``t`` of a grouped order: GROUP row tiles walk each column of tiles together."""
    width = GROUP * num_n
    first_m = (t // width) * GROUP
    size_m = min(num_m - first_m, GROUP)
    return first_m + (t % width) % size_m, (t % width) // size_m


@tile.function
def k_range_product(a, b, pm, pn, k0, k1, BM, BN, BK, TMA=True, FAST_ACC=False):
    """The float32 (BM, BN) tile (pm, pn) of A[:, K0:K1] @ B[K0:K1, :] over K tiles k0 .. k1 - 1
    (split-K's slices, Stream-K's shares); ``TMA=False`` keeps the loads off the TMA unit (plain
    loads by the block's threads); ``FAST_ACC`` (fp8 only) keeps the running sum in the tensor
    cores' reduced precision."""
    acc = tile.zeros((BM, BN), tile.float32)
    for k in range(k0, k1):
        acc = tile.mma(a.load((pm, k), (BM, BK), allow_tma=TMA),
                       b.load((k, pn), (BK, BN), allow_tma=TMA), acc, fast_acc=FAST_ACC)
    return acc


@tile.function
def tile_product(a, b, pm, pn, BM, BN, BK, TMA=True, FAST_ACC=False):
    """The float32 (BM, BN) tile (pm, pn) of a @ b: k_range_product over all of K."""
    return k_range_product(a, b, pm, pn, 0, tile.cdiv(a.shape[1], BK), BM, BN, BK, TMA, FAST_ACC)


@tile.entry
def matmul_scheduled(c, a, b, BM: tile.Constant[int], BN: tile.Constant[int],
                     BK: tile.Constant[int], GROUP: tile.Constant[int],
                     PERSISTENT: tile.Constant[bool], TMA: tile.Constant[bool] = True,
                     FAST_ACC: tile.Constant[bool] = False):
    """C = A @ B for fp16 / bf16 / fp8 inputs; ``c`` is a writable tensor (``tile.atomic``);
    ``TMA=False`` loads without the TMA unit (Triton's tutorial 09 times both); ``FAST_ACC``: the
    fp8 sum in the tensor cores' reduced precision (Triton's default for fp8 on sm_90)."""
    num_m = tile.cdiv(a.shape[0], BM)
    num_n = tile.cdiv(b.shape[1], BN)
    out = c.partition((BM, BN))
    if PERSISTENT:
        for t in range(tile.bid(0), num_m * num_n, tile.num_blocks(0)):
            pm, pn = grouped_position(t, num_m, num_n, GROUP)
            tile.store(out, (pm, pn),
                       tile_product(a, b, pm, pn, BM, BN, BK, TMA, FAST_ACC).astype(c.dtype))
    else:
        pm, pn = grouped_position(tile.bid(0), num_m, num_n, GROUP)
        tile.store(out, (pm, pn),
                   tile_product(a, b, pm, pn, BM, BN, BK, TMA, FAST_ACC).astype(c.dtype))


def scheduled_grid(cfg, args, sms=None):
    """One block per tile, or with PERSISTENT one wave: SMs x occupancy blocks at most."""
    k = cfg.constants
    m, n = args["a"].shape[0], args["b"].shape[1]
    tiles = tile.cdiv(m, k["BM"]) * tile.cdiv(n, k["BN"])
    if not k["PERSISTENT"]:
        return (tiles, 1, 1)
    sms = sms or tile.Device(0).multiprocessor_count
    return (min(tiles, sms * (cfg.occupancy or 1)), 1, 1)


#: candidates for matmul_scheduled (the benchmark times them; see benchmarks/vendor.py):
#: 128x256 and 256x128 tiles take two compute warp groups (num_worker_warps=8), without which
#: tileiras spills their accumulators
SCHEDULED_CONFIGS = [tile.Config(BM=bm, BN=bn, BK=bk, GROUP=8, PERSISTENT=p, occupancy=occ,
                                 num_worker_warps=None if bm * bn <= 128 * 128 else 8)
                     for (bm, bn, bk, occ) in ((128, 128, 64, 1), (128, 128, 64, 2),
                                               (128, 256, 64, 1), (128, 256, 32, 1),
                                               (256, 128, 64, 1))
                     for p in (False, True)]


def scheduled(configs=SCHEDULED_CONFIGS):
    """``matmul_scheduled`` autotuned over ``configs`` (call with tile.atomic(c), a, b)."""
    return tile.autotune(configs=configs, key=["a", "b"], grid=scheduled_grid)(matmul_scheduled)


def _check(name, c, a, b, tol) -> bool:
    ref = a.to_numpy().astype(np.float32) @ b.to_numpy().astype(np.float32)
    err = np.abs(c.to_numpy().astype(np.float32) - ref).max() / np.abs(ref).max()
    print(f"  {name}: max relative error {err:.1e}")
    return bool(err < tol)


def main() -> int:
    m, k, n = (4096, 4096, 4096) if current_backend() == "cuda" else (96, 64, 80)
    rng = np.random.default_rng(0)
    ok = True
    for dtype, tol in ((tile.float16, 2e-2), (tile.bfloat16, 3e-2), (tile.float32, 1e-2)):
        a32 = rng.standard_normal((m, k)).astype(np.float32)
        b32 = rng.standard_normal((k, n)).astype(np.float32)
        a = api.from_numpy(a32, dtype).sync()
        b = api.from_numpy(b32, dtype).sync()
        c = api.zeros((m, n), dtype).sync()
        matmul(c, a, b).sync()
        ok &= _check(f"{dtype.name:9s} {m}x{k}x{n}, config {matmul.best_config(c, a, b)}",
                     c, a, b, tol)
    a16, b16 = (api.from_numpy(v.to_numpy(), tile.float16).sync() for v in (a, b))
    c = api.zeros((m, n), tile.float16).sync()                  # a latency hint: same values
    tile.autotune(configs=[tile.Config(tile=(32, 32), BK=32, LATENCY=3)])(matmul_hinted)(
        c, a16, b16).sync()
    ok &= _check("hinted (latency=3)", c, a16, b16, 2e-2)
    small = [tile.Config(BM=32, BN=32, BK=32, GROUP=2, PERSISTENT=p) for p in (True, False)]
    for cfg in small:                    # both schedules, on the last (float32 -> fp16) inputs
        c = api.zeros((m, n), tile.float16).sync()
        tuned = scheduled([cfg])
        tuned(tile.atomic(c), a16, b16).sync()
        ok &= _check(f"scheduled, persistent={cfg.constants['PERSISTENT']}", c, a16, b16, 2e-2)
    print(f"matmul: fp16, bf16, tf32, grouped and persistent {'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
