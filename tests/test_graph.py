"""CUDA graphs (API.md §5): capture by execution, imperative scopes, replay, update, safety."""
import numpy as np
import pytest

import tilejit as tile
from tilejit import api

# CPU suite: always the simulator. tests/gpu/test_graph_gpu.py reruns these tests on CUDA (it
# star-imports this module and sets its own pytestmark, so it does not inherit this one).
pytestmark = pytest.mark.usefixtures("simulator_backend")


@tile.entry
def axpy(z, x, a):
    z.store(tile.load_tile_like(z, z) + tile.load_tile_like(x, z) * a)


@tile.entry
def double(z, x):
    z.store(tile.load_tile_like(x, z) * 2.0)


def _t(values):
    return api.from_numpy(np.asarray(values, np.float32)).sync()


@pytest.fixture
def stream():
    return tile.Device(0).new_stream()


def test_graph_on_captures_and_replays(stream):
    x = _t(np.arange(300))
    z = api.zeros((300,)).sync()
    g = axpy(z.partition((128,)), x, 1.0).graph_on(stream)
    out = g.take_output()
    assert len(out) == 3 and out[1] is x and g.take_output() is None
    stream.synchronize()
    np.testing.assert_array_equal(z.to_numpy(), np.arange(300))   # the capture ran it once
    for _ in range(3):
        g.launch().sync_on(stream)
    np.testing.assert_array_equal(z.to_numpy(), 4 * np.arange(300))


def test_update_copies_new_inputs_before_replay(stream):
    inp = api.zeros((256,)).sync()
    out = api.zeros((256,)).sync()
    g = double(out.partition((64,)), inp).graph_on(stream)
    for k in range(3):
        src = _t(np.full(256, k + 1.0))
        g.update(api.memcpy(inp, src))
        g.launch().sync_on(stream)
        np.testing.assert_array_equal(out.to_numpy(), np.full(256, 2.0 * (k + 1)))


def test_scope_records_kernels_and_memcpy(stream):
    a = _t(np.arange(128))
    b = api.zeros((128,)).sync()
    c = api.zeros((128,)).sync()
    with tile.CudaGraph.scope(stream) as s:
        s.record(double(b.partition((64,)), a))
        s.record(api.memcpy(c, b))
    g = s.graph
    stream.synchronize()
    np.testing.assert_array_equal(c.to_numpy(), 2 * np.arange(128))
    api.fill(c, 0.0).sync()
    g.launch().sync_on(stream)
    np.testing.assert_array_equal(c.to_numpy(), 2 * np.arange(128))


def test_allocating_ops_are_rejected(stream):
    x = _t(np.ones(64))
    with pytest.raises(tile.SchedulingError, match="graph"):
        with tile.CudaGraph.scope(stream) as s:
            s.record(api.zeros((64,)))                     # not graph-safe: refused at record
    with pytest.raises(tile.SchedulingError, match="allocat"):
        double(api.zeros((64,)).partition((64,)), x).graph_on(stream)   # allocates while running
    with pytest.raises(tile.SchedulingError, match="allocat"):
        double(api.zeros((64,)).sync().partition((64,)), np.ones(64, np.float32)).graph_on(stream)
    # the stream still works normally after a failed capture
    z = api.zeros((64,)).sync()
    double(z.partition((64,)), x).sync_on(stream)
    np.testing.assert_array_equal(z.to_numpy(), 2 * np.ones(64))


def test_record_outside_scope_and_closed_graph(stream):
    s = tile.CudaGraph.scope(stream)
    with pytest.raises(tile.SchedulingError, match="inside"):
        s.record(api.memcpy(api.zeros((4,)).sync(), api.zeros((4,)).sync()))
    z = api.zeros((64,)).sync()
    g = double(z.partition((64,)), _t(np.ones(64))).graph_on(stream)
    g.close()
    with pytest.raises(tile.SchedulingError, match="closed"):
        g.launch().sync_on(stream)


def test_graph_keeps_buffers_alive(stream):
    z = api.zeros((256,)).sync()
    g = double(z.partition((128,)), _t(np.arange(256))).graph_on(stream)   # input only in graph
    api.fill(z, 0.0).sync()
    import gc
    gc.collect()
    g.launch().sync_on(stream)
    np.testing.assert_array_equal(z.to_numpy(), 2 * np.arange(256))


def test_graph_records_buffers_last_used_on_the_capture_stream(stream):
    # Regression: the launch fast path skipped Storage.use for storages whose last use was on the
    # launch stream, so buffers already used on the capture stream were missing from the graph's
    # storages (which keep them alive and order replays on other streams).
    x = api.from_numpy(np.arange(256, dtype=np.float32)).sync_on(stream)
    z = api.zeros((256,)).sync_on(stream)
    double(z.partition((128,)), x).sync_on(stream)            # both last used on `stream`
    assert x.storage.last_stream is stream and z.storage.last_stream is stream
    g = double(z.partition((128,)), x).graph_on(stream)
    assert x.storage in g._storages and z.storage in g._storages
    g.launch().sync_on(stream)
    np.testing.assert_array_equal(z.to_numpy(), 2 * np.arange(256))


def test_prepared_launch_inside_a_capture_records_its_buffers(stream):
    x = api.from_numpy(np.arange(128, dtype=np.float32)).sync_on(stream)
    z = api.zeros((128,)).sync_on(stream)
    with double(z.partition((64,)), x).prepare(stream) as p:
        p.launch()                                             # last use on `stream`
        with tile.CudaGraph.scope(stream) as s:
            p.launch()
    assert x.storage in s.graph._storages and z.storage in s.graph._storages
