"""Stream-K matmul (examples/matmul_streamk.py) on the GPU: shared tiles summed once by the last
block to arrive, under contention (up to thousands of blocks sharing tiles' K iterations), the
arrival counters left zero, and the result the same in every launch (summed in block order)."""
import os
import sys

import numpy as np
import pytest

import tilejit as tile
from tilejit import api

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import matmul_streamk as SKM  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("m,k,n,bm,bn,bk,blocks,waves", [
    (4096, 4096, 4096, 128, 256, 64, 132, 1),    # the benchmark's shape: 512 tiles, 116 shared
    (1000, 3000, 1500, 64, 64, 32, 2000, 1),     # ragged; 2000 blocks share 384 tiles
    (2048, 1024, 2048, 128, 128, 32, 300, 2),    # two stream-K waves
])
def test_streamk_matches_a_reference_every_launch(m, k, n, bm, bn, bk, blocks, waves):
    rng = np.random.default_rng(m + n)
    an = rng.standard_normal((m, k)).astype(np.float16)
    bn_ = rng.standard_normal((k, n)).astype(np.float16)
    a, b = api.from_numpy(an).sync(), api.from_numpy(bn_).sync()
    ref = an.astype(np.float32) @ bn_.astype(np.float32)
    ws, arrived = SKM.workspace(blocks, bm, bn, waves)
    opts = tile.CompileOptions(num_worker_warps=8) if bm * bn > 128 * 128 else None
    first = None
    for _ in range(3):
        c = api.full((m, n), np.nan, tile.float16).sync()
        op = SKM.streamk(c, a, b, ws, arrived, bm, bn, bk, sk_waves=waves, blocks=blocks)
        (op.compile_options(opts) if opts else op).sync()
        got = c.to_numpy()
        assert np.abs(got.astype(np.float32) - ref).max() / np.abs(ref).max() < 1e-2
        assert not arrived.to_numpy().any()
        if first is None:
            first = got
        else:
            np.testing.assert_array_equal(got, first)
