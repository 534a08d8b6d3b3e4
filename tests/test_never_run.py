"""A lazy DeviceOp dropped without ever running warns, as an un-awaited coroutine does (API.md §3):
a forgotten ``.sync()`` must not leave its outputs silently unchanged. Composed ops warn once, for
the outermost op; ops that ran, were consumed by an op that ran, or whose construction failed stay
quiet."""
import asyncio
import gc
import re
import warnings

import numpy as np
import pytest

import tilejit as tile
from tilejit import api
from tilejit.deviceops.deviceop import RAN_SLOT, DeviceOp, has_run

pytestmark = pytest.mark.usefixtures("simulator_backend")

NEVER_RUN = r"DeviceOp \S+ \(.*\) was never run; call \.sync\(\)"


@tile.entry
def add(z, x, y):
    z.store(tile.load_tile_like(x, z) + tile.load_tile_like(y, z))


def _never_run_warnings(fn):
    """The 'never run' warnings raised while ``fn()`` runs and its garbage is collected."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
        gc.collect()
    return [w for w in caught if issubclass(w.category, RuntimeWarning)
            and "was never run" in str(w.message)]


def _tensors():
    x = api.ones((256,)).sync()
    y = api.ones((256,)).sync()
    z = api.zeros((256,)).sync()
    return x, y, z


def test_the_readme_example_without_sync_warns_at_the_users_line():
    x, y, z = _tensors()

    def forgot():
        add(z.partition((64,)), x, y)

    (w,) = _never_run_warnings(forgot)
    assert re.match(NEVER_RUN, str(w.message))
    assert "KernelLaunch (launch add(z=partition of (256,) float32 by (64,)" in str(w.message)
    assert w.filename == __file__ and w.lineno == forgot.__code__.co_firstlineno + 1
    assert np.all(z.to_numpy() == 0)


def test_the_readme_example_with_sync_does_not_warn():
    x, y, z = _tensors()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        add(z.partition((64,)), x, y).sync()
        op = add(z.partition((64,)), x, y)
        op.sync_on(tile.Device(0).new_stream())
        assert has_run(op)
        del op
        gc.collect()
    assert np.all(z.to_numpy() == 2)


def test_every_way_of_running_counts():
    x, y, z = _tensors()
    s = tile.Device(0).new_stream()

    async def awaited():
        return await add(z.partition((64,)), x, y)

    def run_them():
        add(z.partition((64,)), x, y).submit_on(s).result()
        add(z.partition((64,)), x, y).schedule().result()
        asyncio.run(awaited())
        add(z.partition((64,)), x, y).graph_on(s)
        p = add(z.partition((64,)), x, y).prepare(s)
        p.launch()
        p.close()
        with tile.CudaGraph.scope(s) as g:
            g.record(add(z.partition((64,)), x, y))
        api.zeros((8,)).then(lambda t: api.fill(t, 1.0)).sync()
        tile.zip(api.zeros((4,)), api.ones((4,))).first().sync()
        a, b = tile.zip(api.zeros((4,)), api.ones((4,))).unzip()
        a.sync(), b.sync()
        add(z.partition((64,)), api.dup(x), y).sync()       # a lazy argument runs with it
        add(z.partition((64,)), x, y).grid((4, 1, 1)).sync()   # the copy ran, it replaced one
        tile.shared(x)                                      # already computed
        api.arange(10).map(lambda t: t).sync()

    assert _never_run_warnings(run_them) == []


def test_only_the_outermost_of_a_composed_op_warns():
    x, y, z = _tensors()
    cases = {
        "then": lambda: api.zeros((4,)).then(lambda t: api.fill(t, 1.0)),
        "zip": lambda: tile.zip(api.zeros((4,)), api.dup(x), 3),
        "first of a map": lambda: api.ones((4,)).map(lambda t: (t, t)).first(),
        "lazy argument": lambda: add(z.partition((64,)), api.dup(x), y),
        "grid copy": lambda: add(z.partition((64,)), x, y).grid((4, 1, 1)),
        # the replaced launch holds a lazy argument: its finalizer accounts for it (in Python)
        "grid copy of a lazy argument": lambda: add(z.partition((64,)), api.dup(x), y).grid(
            (4, 1, 1)),
        "to_host": lambda: api.zeros((4,)).to_host(),
    }
    for what, make in cases.items():
        ws = _never_run_warnings(make)
        assert len(ws) == 1, (what, [str(w.message) for w in ws])


def test_failed_construction_and_refused_ops_do_not_warn():
    x, y, z = _tensors()

    def errors():
        with pytest.raises(TypeError, match="needs a callable"):
            tile.value(1).map(5)
        with pytest.raises(tile.SchedulingError, match="sync"):
            tile.value(1).sync_on(None)
        with pytest.raises(tile.SchedulingError, match="unzip"):
            tile.value(1).map(lambda v: (v, v)).unzip()
        with pytest.raises(tile.LaunchError, match="argument `x` is a DeviceOp"):
            add(z.partition((64,)), api.dup(x), y).prepare()
        with pytest.raises(TypeError):
            add(z.partition((64,)), x, y).compile_options(3)

    assert _never_run_warnings(errors) == []


def test_the_slot_is_one_name_shared_with_the_c_launcher():
    assert RAN_SLOT in DeviceOp.__slots__
    op = tile.value(1)
    assert not has_run(op)
    op.sync()
    assert has_run(op) and getattr(op, RAN_SLOT) is True
