"""NumPy kernel arguments are copied in through buffers each stream reuses (runtime.staging)."""
import numpy as np
import pytest

import tilejit as tile
from tilejit import api
from tilejit.runtime import staging

pytestmark = pytest.mark.usefixtures("simulator_backend")


@tile.entry
def add_rows(z, x, y):
    z.store(tile.load_tile_like(x, z) + tile.load_tile_like(y, z))


def _pooled(stream):
    return {n: len(free) for n, free in (stream._staging or {}).items()}


def test_numpy_arguments_reuse_a_streams_buffers_and_stay_right():
    s = tile.Device(0).new_stream()
    z = api.zeros((8, 64)).sync_on(s)
    rng = np.random.default_rng(0)
    rows = [(rng.standard_normal(64).astype(np.float32),
             rng.standard_normal(64).astype(np.float32)) for _ in range(8)]
    for i, (a, b) in enumerate(rows):                  # queued back to back, one sync at the end
        add_rows(z[i].partition((64,)), a, b).submit_on(s)
    s.synchronize()
    for i, (a, b) in enumerate(rows):
        np.testing.assert_allclose(z.to_numpy()[i], a + b, rtol=1e-6)
    assert _pooled(s) == {256: 2}                      # two buffers served all eight launches
    ids = {id(f) for f in s._staging[256]}
    add_rows(z[0].partition((64,)), *rows[0]).sync_on(s)
    assert {id(f) for f in s._staging[256]} == ids     # the same two again


@tile.entry
def scatter_twice(z, out, x):
    idx = tile.arange(64)
    v = tile.gather(x, idx)
    tile.scatter(out, idx, v * 2.0)
    z.store(v)


def test_tile_atomic_numpy_is_copied_back_before_its_buffer_is_reused():
    s = tile.Device(0).new_stream()
    z = api.zeros((64,)).sync_on(s)
    for k in range(1, 4):
        a = np.arange(64, dtype=np.float32) * k
        out = np.zeros(64, np.float32)
        scatter_twice(z.partition((64,)), tile.atomic(out), a).sync_on(s)
        np.testing.assert_array_equal(out, a * 2)      # copied back from its own buffer
        np.testing.assert_array_equal(z.to_numpy(), a)
    assert _pooled(s) == {256: 2}


def test_what_is_not_pooled():
    s = tile.Device(0).new_stream()
    n = staging.MAX_BYTES // 4 + 1024                  # larger than the pooled size
    big = np.ones(n, np.float32)
    z = api.zeros((n,)).sync_on(s)
    add_rows(z.partition((1024,)), big, big).sync_on(s)
    assert _pooled(s) == {}
    np.testing.assert_allclose(z.to_numpy()[-4:], 2.0)
    other = tile.Device(0).new_stream()                # a buffer last used elsewhere is dropped
    st = staging.take(256, s)
    st.use(other)
    staging.give_back(st, s)
    assert _pooled(s) == {256: 0}
