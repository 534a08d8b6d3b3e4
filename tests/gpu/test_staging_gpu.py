"""NumPy arguments through reused upload buffers (runtime.staging) while the GPU lags behind:
the copy into a reused buffer must wait for the kernel that last read it (stream order)."""
import numpy as np
import pytest

import tilejit as tile
from tilejit import api

pytestmark = pytest.mark.gpu


@tile.entry
def vadd(z, x, y):
    z.store(tile.load_tile_like(x, z) + tile.load_tile_like(y, z))


def test_reused_upload_buffers_follow_stream_order():
    s = tile.Device(0).new_stream()
    n, rows = 1 << 24, 64
    big = api.rand((n,), seed=3).sync_on(s)
    sink = api.zeros((n,)).sync_on(s)
    z = api.zeros((rows, 1024)).sync_on(s)
    rng = np.random.default_rng(1)
    data = [(rng.standard_normal(1024).astype(np.float32),
             rng.standard_normal(1024).astype(np.float32)) for _ in range(rows)]
    for _ in range(3):                                  # keeps the GPU busy while we queue
        vadd(sink.partition((1024,)), big, big).submit_on(s)
    for i, (a, b) in enumerate(data):
        vadd(z[i].partition((1024,)), a, b).submit_on(s)
    s.synchronize()
    got = z.to_numpy()
    for i, (a, b) in enumerate(data):
        np.testing.assert_allclose(got[i], a + b, rtol=1e-6)
    assert sum(len(f) for f in s._staging.values()) == 2
