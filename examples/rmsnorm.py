"""RMSNorm forward: y = x / sqrt(mean(x^2) + eps) * w, three ways.

    python examples/rmsnorm.py

`rmsnorm`: several whole rows per block, tuned over the default search space (rows per block and
occupancy: the rows stay whole because the kernel reduces along axis 1 of its block's tile).
`rmsnorm_persistent`: one wave of blocks looping over row blocks, w read once per block (the
latency hint lets tileiras pipeline the row loads). `rmsnorm_chunked`: rows longer than one tile,
the sum of squares over column chunks, then a second pass (from L2) that scales.

Every store is ``allow_tma=False``: written from registers rather than staged in shared memory
for the TMA unit, which for a row kernel is latency on every block (H200, 2026-11-27, 4K-element
fp16 rows: 3.89 against 3.80 TB/s; 16K rows 3.83 against 3.57; BENCHMARKS.md).
"""
import sys

import numpy as np

import tilejit as tile
from tilejit import api
from tilejit.runtime import current_backend

from softmax import rows_grid  # noqa: F401  (one block per ROWS rows, or one wave: persistent)
from layernorm import ROW_BOX

ZERO = tile.PaddingMode.ZERO


@tile.autotune(key=["x"])
@tile.entry
def rmsnorm(y, x, w, eps):
    BM, BN = y.shape
    box = ROW_BOX if BN == 1024 else BN       # 128-byte TMA box rows (layernorm.py)
    t = x.load(y.block, y.shape, padding=ZERO, box_width=box).astype(tile.float32)
    # zero padding adds nothing; one division a block, not one per row (tileiras's IEEE
    # division has a slow path)
    ms = tile.sum(t * t, axis=1, keepdims=True) * (1.0 / x.shape[1])
    wv = w.load((0,), (BN,), padding=ZERO, box_width=box).astype(tile.float32)[None, :]
    y.store((t * tile.rsqrt(ms + eps) * wv).astype(y.dtype), allow_tma=False)


@tile.entry
def rmsnorm_persistent(y, x, w, eps, ROWS: tile.Constant[int], WIDTH: tile.Constant[int],
                       LATENCY: tile.Constant[int]):
    """``y`` a writable tensor (``tile.atomic``); grid: one wave of blocks (softmax.rows_grid)."""
    step = tile.num_blocks(0)
    last = tile.cdiv(x.shape[0], ROWS) - 1
    wv = w.load((0,), (WIDTH,), padding=ZERO).astype(tile.float32)[None, :]
    for r in range(tile.bid(0), last + 1, step):
        # loaded in the iteration that uses it: a tile carried to the next iteration (a register
        # double buffer) came out wrong from tileiras 13.4 (NOTES.md, tileiras quirks)
        tf = x.load((r, 0), (ROWS, WIDTH), padding=ZERO, latency=LATENCY).astype(tile.float32)
        rs = tile.rsqrt(tile.sum(tf * tf, axis=1, keepdims=True) * (1.0 / x.shape[1]) + eps)
        tile.store(y.partition((ROWS, WIDTH)), (r, 0), (tf * rs * wv).astype(y.dtype),
                   allow_tma=False)


@tile.entry
def rmsnorm_chunked(y, x, w, eps, ROWS: tile.Constant[int], CHUNK: tile.Constant[int]):
    """``y`` a writable tensor; grid: one block per ROWS rows (softmax.rows_grid)."""
    i = tile.bid(0)
    acc = tile.zeros((ROWS, CHUNK), tile.float32)     # element-wise: one reduction, after the loop
    for j in range(tile.cdiv(x.shape[1], CHUNK)):
        t = x.load((i, j), (ROWS, CHUNK), padding=ZERO).astype(tile.float32)
        acc += t * t
    rs = tile.rsqrt(tile.sum(acc, axis=1, keepdims=True) * (1.0 / x.shape[1]) + eps)
    for j in range(tile.cdiv(x.shape[1], CHUNK)):
        t = x.load((i, j), (ROWS, CHUNK), padding=ZERO).astype(tile.float32)
        wv = w.load((j,), (CHUNK,), padding=ZERO).astype(tile.float32)[None, :]
        tile.store(y.partition((ROWS, CHUNK)), (i, j), (t * rs * wv).astype(y.dtype),
                   allow_tma=False)


def main() -> int:
    gpu = current_backend() == "cuda"
    m, n = (8192, 4096) if gpu else (40, 200)
    width = 1 << (n - 1).bit_length()
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((m, n)).astype(np.float16)
    wn = rng.standard_normal(n).astype(np.float16)
    x, w = api.from_numpy(xn).sync(), api.from_numpy(wn).sync()
    x32 = xn.astype(np.float32)
    ref = x32 / np.sqrt((x32 * x32).mean(1, keepdims=True) + 1e-6) * wn.astype(np.float32)
    runs = {"rows": lambda y: rmsnorm(y, x, w, 1e-6),
            "persistent": lambda y: tile.autotune(
                configs=[tile.Config(ROWS=4, WIDTH=width, LATENCY=4, occupancy=2)],
                grid=rows_grid)(rmsnorm_persistent)(tile.atomic(y), x, w, 1e-6),
            "chunked": lambda y: tile.autotune(
                configs=[tile.Config(ROWS=2, CHUNK=min(width, 4096 if gpu else 64))],
                grid=rows_grid)(rmsnorm_chunked)(tile.atomic(y), x, w, 1e-6)}
    ok, report = True, []
    for name, run in runs.items():
        y = api.zeros((m, n), tile.float16).sync()
        run(y).sync()
        good = np.allclose(y.to_numpy().astype(np.float32), ref, rtol=1e-2, atol=1e-2)
        ok &= good
        report.append(f"{name} {'ok' if good else 'MISMATCH'}")
    print(f"rmsnorm: {m}x{n} fp16, {', '.join(report)} {'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
