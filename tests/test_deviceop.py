"""DeviceOp semantics: laziness, combinators, sharing, scheduling policies, non-reentrancy."""
import threading

import numpy as np
import pytest

import tilejit as tile
from tilejit.deviceops import DeviceOp, ExecutionContext
from tilejit.deviceops import scheduling
from tilejit.deviceops import transfer as T


pytestmark = pytest.mark.usefixtures("simulator_backend")


class Probe(DeviceOp):
    """Records each execution (and its stream) and returns ``out``."""

    def __init__(self, log, name, out=None):
        self.log, self.name, self.out = log, name, out

    def _execute(self, ctx):
        assert isinstance(ctx, ExecutionContext)
        self.log.append((self.name, ctx.stream))
        return self.out if self.out is not None else self.name


def test_nothing_runs_before_execution():
    log = []
    op = (Probe(log, "a", 1).then(lambda x: Probe(log, "b", x + 1))
          .map(lambda x: x * 10).inspect(lambda x: log.append(("seen", x))))
    z = tile.zip(op, Probe(log, "c"))
    s = z.shared()
    first = s.first()
    assert log == []
    assert first.sync() == 20
    assert [e[0] for e in log] == ["a", "b", "seen", "c"]


def test_then_chains_share_one_stream():
    log = []
    stream = tile.Device(0).new_stream()
    out = Probe(log, "a", 2).then(lambda x: Probe(log, "b", x * 3)).sync_on(stream)
    assert out == 6
    assert all(s is stream for _, s in log)


def test_then_requires_an_op_and_map_transforms():
    with pytest.raises(TypeError, match="must return a DeviceOp.*\\.map"):
        tile.value(1).then(lambda x: x + 1).sync()
    assert tile.value(3).map(lambda x: x * 2).sync() == 6
    assert tile.value(3).then(lambda x: tile.value(x + 1)).sync() == 4
    with pytest.raises(TypeError, match=r"map\(\) needs a callable, got int"):
        tile.value(1).map(5)


def test_then_with_context_and_with_context():
    seen = []
    stream = tile.Device(0).new_stream()
    out = tile.value(5).then_with_context(
        lambda ctx, x: (seen.append(ctx.stream), tile.value(x))[1]).sync_on(stream)
    assert out == 5 and seen == [stream]
    assert tile.with_context(lambda ctx: ctx.stream).sync_on(stream) is stream
    assert tile.with_context(lambda ctx: tile.value(ctx.cuda_stream)).sync_on(stream) == 0


@pytest.mark.filterwarnings("ignore:DeviceOp .* was never run:RuntimeWarning")   # .arity only
def test_inspect_passes_through():
    seen = []
    assert tile.value((1, 2)).inspect(seen.append).sync() == (1, 2)
    assert seen == [(1, 2)]
    assert tile.value((1, 2)).inspect(seen.append).arity == 2
    with pytest.raises(TypeError, match=r"inspect\(\) needs a callable, got str"):
        tile.value(1).inspect("print")


def test_context_reports_graph_capture():
    assert tile.with_context(lambda ctx: ctx.capturing).sync() is False
    graph = tile.with_context(lambda ctx: ctx.capturing).graph_on(tile.Device(0).new_stream())
    assert graph.take_output() is True


def test_zip_first_last_unzip():
    log = []
    z = tile.zip(Probe(log, "a"), Probe(log, "b"), 7)          # plain values are accepted
    assert z.sync() == ("a", "b", 7)
    assert z.first().sync() == "a" and z.last().sync() == 7
    a, b, c = z.unzip()
    log.clear()
    assert (c.sync(), a.sync(), b.sync()) == (7, "a", "b")
    assert [e[0] for e in log] == ["a", "b"]                   # upstream ran once
    with pytest.raises(tile.SchedulingError, match="pass it: op.unzip\\(n\\)"):
        tile.value(1).map(lambda x: (x, x)).unzip()
    p, q = tile.value(1).map(lambda x: (x, x + 1)).unzip(2)
    assert (p.sync(), q.sync()) == (1, 2)
    with pytest.raises(tile.SchedulingError, match="needs an op whose output is a tuple"):
        tile.value(3).first().sync()


def test_shared_runs_once_and_tile_shared_wraps_values():
    log = []
    s = Probe(log, "x", 42).shared()
    assert s.sync() == 42 and s.sync() == 42
    assert s.map(lambda v: v + 1).sync() == 43
    assert len(log) == 1 and s.is_done
    w = tile.shared([1, 2])
    assert w.sync() is w.sync()


def test_shared_runs_once_across_threads():
    log = []
    gate = threading.Event()

    class Slow(DeviceOp):
        def _execute(self, ctx):
            gate.wait(2)
            log.append(1)
            return object()

    s = Slow().shared()
    results = []
    threads = [threading.Thread(target=lambda: results.append(s.sync())) for _ in range(4)]
    for t in threads:
        t.start()
    gate.set()
    for t in threads:
        t.join()
    assert len(log) == 1 and len({id(r) for r in results}) == 1


def test_sync_inside_a_running_op_is_refused():
    with pytest.raises(tile.SchedulingError, match="non-reentrant.*then_unchecked"):
        tile.value(1).then(lambda x: tile.value(tile.value(x).sync())).sync()
    with pytest.raises(tile.SchedulingError, match="non-reentrant"):
        tile.value(1).map(lambda x: tile.value(x).sync()).sync()
    t = T.from_numpy(np.arange(3.0, dtype=np.float32)).sync()
    with pytest.raises(tile.SchedulingError, match="non-reentrant"):
        tile.value(t).map(lambda t: t.to_numpy()).sync()
    with pytest.raises(tile.SchedulingError, match="non-reentrant"):
        tile.value(1).map(lambda x: tile.value(x).schedule()).sync()
    # the guard is released after an error: normal use continues
    assert tile.value(2).sync() == 2
    # repr inside a running op does not raise
    assert "values not shown" in tile.value(t).map(repr).sync()


def test_then_unchecked_allows_nested_sync():
    out = tile.value(1).then_unchecked(lambda x: tile.value(tile.value(x + 1).sync())).sync()
    assert out == 2
    with pytest.raises(tile.SchedulingError):            # the guard is back afterwards
        tile.value(1).then(lambda x: tile.value(tile.value(x).sync())).sync()


def test_round_robin_policy_cycles_streams():
    pol = tile.StreamPoolRoundRobin(tile.Device(0), n=3)
    streams = [pol.next_stream() for _ in range(7)]
    assert len({id(s) for s in streams[:3]}) == 3
    assert streams[3] is streams[0] and streams[6] is streams[0]
    log = []
    for i in range(4):
        Probe(log, i).schedule(pol).result()
    assert log[3][1] is log[0][1] and log[1][1] is not log[0][1]
    with pytest.raises(ValueError, match="at least one stream"):
        tile.StreamPoolRoundRobin(n=0)


def test_single_stream_and_custom_policies():
    single = tile.SingleStream(tile.Device(0))
    log = []
    Probe(log, "a").schedule(single)
    Probe(log, "b").schedule(single)
    assert log[0][1] is log[1][1] is single.stream

    class Mine:
        def __init__(self):
            self.s = tile.Device(0).new_stream()
            self.calls = 0

        def next_stream(self):
            self.calls += 1
            return self.s

    mine = Mine()
    fut = Probe(log, "c", 9).schedule(mine)
    assert fut.done() and fut.result() == 9 and mine.calls == 1

    class Broken:
        def next_stream(self):
            raise RuntimeError("no streams today")

    with pytest.raises(tile.SchedulingError, match="no streams today"):
        tile.value(1).schedule(Broken())


def test_set_default_policy():
    log = []
    mine = tile.SingleStream(tile.Device(0))
    old = scheduling.default_policy(0)
    tile.set_default_policy(mine)
    try:
        Probe(log, "a").sync()
        assert log[0][1] is mine.stream
    finally:
        tile.set_default_policy(old)
    with pytest.raises(TypeError, match="next_stream"):
        tile.set_default_policy(object())
    assert isinstance(scheduling.default_policy(0), tile.StreamPoolRoundRobin)


def test_errors_propagate_and_leave_no_guard_behind():
    class Boom(DeviceOp):
        def _execute(self, ctx):
            raise tile.LaunchError("bad grid")

    with pytest.raises(tile.LaunchError, match="bad grid"):
        Boom().then(lambda x: tile.value(x)).sync()
    with pytest.raises(tile.LaunchError):
        Boom().schedule()
    assert tile.value(1).sync() == 1


def test_sync_on_accepts_raw_handles_and_rejects_none():
    with pytest.raises(tile.SchedulingError, match="sync\\(\\)"):
        tile.value(1).sync_on(None)
    assert tile.value(1).sync_on(5) == 1


def test_tensor_conveniences_on_ops():
    a = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    op = T.from_numpy(a)
    assert np.array_equal(op.reshape(6, 4).to_host().sync(), a.reshape(6, 4))
    p = op.partition((2, 2)).sync()
    assert isinstance(p, tile.Partition) and p.is_owned and p.tensor.is_moved
    t = op.partition((2, 2)).unpartition().sync()
    assert isinstance(t, tile.Tensor) and not t.is_moved
    assert np.array_equal(t.to_host().sync(), a)
    with pytest.raises(tile.SchedulingError, match="output is a Partition"):
        tile.value(3).unpartition().sync()
    assert op.boxed() is op


def test_shared_tensor_consumers_see_one_tensor():
    a = np.random.default_rng(1).standard_normal(8).astype(np.float32)
    s = T.from_numpy(a).shared()
    t1 = s.sync()
    t2 = tile.zip(s, s).sync()
    assert t2[0] is t1 and t2[1] is t1
    with pytest.raises(tile.TensorError, match="shared tensor"):
        t1.partition((4,))


def test_value_ops_can_be_captured():
    g = tile.value(41).map(lambda v: v + 1).graph()
    assert g.take_output() == 42


def test_allocation_guard_for_graph_capture():
    from tilejit.runtime.memory import forbid_allocation
    with forbid_allocation():
        with pytest.raises(tile.SchedulingError, match="allocates device memory.*recording a CUDA "
                                                       "graph"):
            T.empty((4,), tile.float32).sync()
        assert tile.value(3).sync() == 3
    assert T.empty((4,), tile.float32).sync().shape == (4,)
    assert T.Memcpy.graph_safe and not T.Empty.graph_safe and T.Empty.allocates


def test_device_future():
    fut = tile.value(5).schedule()
    assert isinstance(fut, tile.DeviceFuture)
    assert fut.done() and fut.result() == 5 and fut.result(timeout=1) == 5
    assert "done" in repr(fut)
    with pytest.raises(tile.SchedulingError, match="non-reentrant"):
        tile.value(1).map(lambda _: fut.result()).sync()
