"""Kernels that tileiras has miscompiled (tests/gpu/test_tileiras_quirks_gpu.py pins them on the
GPU): the simulator runs the same Tile IR, and must get them right."""
import numpy as np
import pytest

import tilejit as tile
from tilejit import api

ZERO = tile.PaddingMode.ZERO


@tile.entry
def rows_scaled_double_buffered(y, x, ROWS: tile.Constant[int], WIDTH: tile.Constant[int],
                                TMA: tile.Constant[bool] = True):
    """A persistent row loop whose next row block is loaded one iteration ahead (the tile is an
    iteration value of the loop); ``TMA=False`` loads it into registers (``LDG``), not through
    shared memory."""
    step = tile.num_blocks(0)
    last = tile.cdiv(x.shape[0], ROWS) - 1
    t = x.load((tile.bid(0), 0), (ROWS, WIDTH), padding=ZERO, latency=4, allow_tma=TMA)
    for r in range(tile.bid(0), last + 1, step):
        nxt = x.load((min(r + step, last), 0), (ROWS, WIDTH), padding=ZERO, latency=4,
                     allow_tma=TMA)
        tf = t.astype(tile.float32)
        rs = tile.rsqrt(tile.sum(tf * tf, axis=1, keepdims=True) / x.shape[1] + 1e-6)
        tile.store(y.partition((ROWS, WIDTH)), (r, 0), (tf * rs).astype(y.dtype))
        t = nxt


def _run(m, n, rows, grid, tma=True):
    xn = np.random.default_rng(0).standard_normal((m, n)).astype(np.float16)
    x32 = xn.astype(np.float32)
    ref = x32 / np.sqrt((x32 * x32).mean(1, keepdims=True) + 1e-6)
    y = api.zeros((m, n), tile.float16).sync()
    rows_scaled_double_buffered(tile.atomic(y), api.from_numpy(xn).sync()).generics(
        ROWS=rows, WIDTH=n, TMA=tma).grid((grid, 1, 1)).sync()
    return y.to_numpy().astype(np.float32), ref


@pytest.mark.parametrize("tma", [True, False])
def test_the_simulator_runs_the_double_buffered_loop_right(tma):
    """Each of 2 blocks loops over 4 row blocks, so every tile is carried once."""
    got, ref = _run(32, 64, 4, 2, tma)
    np.testing.assert_allclose(got, ref, rtol=1e-2, atol=1e-2)
