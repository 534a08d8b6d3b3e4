"""Stream-K matmul: the last, partial wave of output tiles shared out by K iterations.

    python examples/matmul_streamk.py

A persistent grid of G blocks (one per SM and occupancy slot) computes the first
``tiles - tiles % G`` output tiles whole, as ``matmul_scheduled`` does. Run alone, the remaining
``tiles % G`` tiles would leave the rest of the SMs idle: 4096^2 in 128x256 tiles is 512 tiles,
and on 132 SMs the fourth wave fills only 116 of them. Here each block instead takes an equal
share of those tiles' K iterations (Stream-K, Osama et al., 2023), so every SM finishes at
about the same time.

A tile split between blocks is summed by the last block to finish its part: each block writes its
float32 part into the workspace ``ws`` and counts its arrival (``atomic_add``, acquire-release);
the block that arrives last adds the parts in block order (the result does not depend on timing),
stores the tile, and puts the counter back to zero for the next launch. Nobody waits on anybody,
so no schedule can deadlock (the simulator's serial one included).

It is correct but, for now, 15-30% slower than ``matmul_scheduled`` (2026-11-27, H200,
BENCHMARKS.md). The SASS (tileiras 13.4) shows why: in this kernel tileiras waits for every
MMA (``WARPGROUP.DEPBAR.LE gsb0, 0x0`` after each ``HGMMA``) in both loops, where
``matmul_scheduled`` keeps one group of MMAs in flight (``0x1``). The same happens to any
kernel with a second loop nest of MMAs beside the first, or an ``if`` that stores the
accumulator one of two ways. A single loop nest with a branch-free epilogue stays pipelined.
"""
import sys

import numpy as np

import tilejit as tile
from tilejit import api
from tilejit.runtime import current_backend

from matmul import grouped_position, k_range_product, tile_product


@tile.function
def sum_parts(c, ws, arrived, t, iters, per, dp_tiles, num_m, num_n, GROUP, BM, BN, STRIP):
    """Stream-K tile ``t``'s parts summed into C, in block order (the result does not depend on
    timing), a column strip at a time, loaded without the TMA unit; then its arrival counter
    back to zero for the next launch. Block q's part is in slot 2 * q, or 2 * q + 1 when it is
    not q's first segment. (tileiras 13.4, 128x256 tiles, two warp groups: whole (BM, BN)
    tiles, TMA loads, and strips of 32 or 128 columns all spilled the accumulator; 64 did
    not.)"""
    pm, pn = grouped_position(dp_tiles + t, num_m, num_n, GROUP)
    W = min(STRIP, BN)
    strips = ws.partition((BM, W))
    out = c.partition((BM, W))
    first = (t * iters) // per
    last = (t * iters + iters - 1) // per
    # the strips that hold columns of C (a ragged last tile may end before its last strip)
    for j in range(min(BN // W, tile.cdiv(c.shape[1], W) - pn * (BN // W))):
        strip_sum = tile.zeros((BM, W), tile.float32)
        for q in range(first, last + 1):
            q_slot = 2 * q
            if q * per < t * iters:
                q_slot += 1
            strip_sum += strips.load((q_slot, j), allow_tma=False)
        tile.store(out, (pm, pn * (BN // W) + j), strip_sum.astype(c.dtype))
    tile.atomic_xchg(arrived, t, 0)


@tile.entry
def matmul_streamk(c, ws, arrived, a, b, BM: tile.Constant[int], BN: tile.Constant[int],
                   BK: tile.Constant[int], GROUP: tile.Constant[int],
                   SK_WAVES: tile.Constant[int], STRIP: tile.Constant[int] = 64):
    """C = A @ B on a persistent grid: whole tiles first, then the last ``tiles % G`` tiles
    (plus G more per extra SK_WAVES, where there are enough) by equal shares of K iterations.
    ``c``, ``ws`` (2 * G * BM, BN) float32 and ``arrived`` (G * SK_WAVES int32, zero on entry
    and left zero) are writable."""
    num_m = tile.cdiv(a.shape[0], BM)
    num_n = tile.cdiv(b.shape[1], BN)
    tiles = num_m * num_n
    iters = tile.cdiv(a.shape[1], BK)
    g = tile.num_blocks(0)
    me = tile.bid(0)
    sk_tiles = tiles % g
    if tiles >= g * SK_WAVES:
        sk_tiles += g * (SK_WAVES - 1)
    dp_tiles = tiles - sk_tiles
    out = c.partition((BM, BN))
    for t in range(me, dp_tiles, g):
        pm, pn = grouped_position(t, num_m, num_n, GROUP)
        tile.store(out, (pm, pn), tile_product(a, b, pm, pn, BM, BN, BK).astype(c.dtype))
    total = sk_tiles * iters
    per = tile.cdiv(total, g)
    start = min(me * per, total)
    end = min(start + per, total)
    parts = ws.partition((BM, BN))
    # the tiles this block's share of iterations touches (a for loop: tileiras spilled the
    # accumulator of a while loop over segments)
    sum_first = -1
    sum_last = -1
    if start < end:
        for t in range(start // iters, (end - 1) // iters + 1):
            k0 = max(start, t * iters) - t * iters
            k1 = min(end, t * iters + iters) - t * iters
            pm, pn = grouped_position(dp_tiles + t, num_m, num_n, GROUP)
            acc = k_range_product(a, b, pm, pn, k0, k1, BM, BN, BK)
            if k0 == 0 and k1 == iters:
                tile.store(out, (pm, pn), acc.astype(c.dtype))
            else:
                # a block's parts: its first segment in slot 2 * me, its last (when that is
                # another one) in slot 2 * me + 1; every tile between them is whole
                slot = 2 * me
                if t * iters > start:
                    slot += 1
                tile.store(parts, (slot, 0), acc)
                first = (t * iters) // per
                last = (t * iters + iters - 1) // per
                # ACQ_REL (the default): this part is visible before its arrival counts, and
                # the last block sees every other part after it
                if tile.atomic_add(arrived, t, 1) == last - first:
                    if slot == 2 * me:
                        sum_first = t
                    else:
                        sum_last = t
    # the shared tiles this block arrived last at (summed after the loop: inside it tileiras
    # spilled the accumulator)
    if sum_first >= 0:
        sum_parts(c, ws, arrived, sum_first, iters, per, dp_tiles, num_m, num_n, GROUP, BM, BN,
                  STRIP)
    if sum_last >= 0:
        sum_parts(c, ws, arrived, sum_last, iters, per, dp_tiles, num_m, num_n, GROUP, BM, BN,
                  STRIP)


def workspace(blocks: int, bm: int, bn: int, sk_waves: int = 1):
    """(ws, arrived) for ``blocks`` persistent blocks of (bm, bn) tiles: two float32 parts a
    block, and one arrival counter per stream-K tile (zeros)."""
    ws = api.zeros((2 * blocks * bm, bn), tile.float32).sync()
    arrived = api.zeros((blocks * sk_waves,), tile.int32).sync()
    return ws, arrived


def streamk(c, a, b, ws, arrived, bm, bn, bk, group=8, sk_waves=1, blocks=None, strip=64):
    """The launch of ``matmul_streamk`` on ``blocks`` blocks (default: ws's share, one per two
    parts of (bm, bn)); shared tiles are summed ``strip`` columns at a time."""
    blocks = blocks or ws.shape[0] // (2 * bm)
    return matmul_streamk(tile.atomic(c), tile.atomic(ws), tile.atomic(arrived), a, b, bm, bn,
                          bk, group, sk_waves, strip).grid((blocks, 1, 1))


def main() -> int:
    gpu = current_backend() == "cuda"
    m, k, n = (4096, 4096, 4096) if gpu else (96, 320, 96)
    bm, bn, bk = (128, 256, 32) if gpu else (32, 32, 32)
    blocks = tile.Device(0).multiprocessor_count if gpu else 4
    rng = np.random.default_rng(0)
    an = rng.standard_normal((m, k)).astype(np.float16)
    bn_ = rng.standard_normal((k, n)).astype(np.float16)
    a, b = api.from_numpy(an).sync(), api.from_numpy(bn_).sync()
    ref = an.astype(np.float32) @ bn_.astype(np.float32)
    ws, arrived = workspace(blocks, bm, bn)
    ok = True
    for _ in range(2):                   # twice: the arrival counters are left zero
        c = api.zeros((m, n), tile.float16).sync()
        streamk(c, a, b, ws, arrived, bm, bn, bk, blocks=blocks).sync()
        err = np.abs(c.to_numpy().astype(np.float32) - ref).max() / np.abs(ref).max()
        ok &= bool(err < 2e-2) and not arrived.to_numpy().any()
    print(f"matmul_streamk: {m}x{k}x{n} on {blocks} blocks, max relative error {err:.1e} "
          f"{'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
