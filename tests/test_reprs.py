"""What notebooks and the REPL show: tensors (state, values summarized like NumPy), lazy DeviceOps
(what they will run, without running it; whether they ran) and kernels (signature,
specializations, stats)."""
import html as _html

import numpy as np
import pytest

import tilejit as tile
from tilejit import api

pytestmark = pytest.mark.usefixtures("simulator_backend")


@tile.entry
def copy(z, x):
    z.store(tile.load_tile_like(x, z))


def test_tensor_repr_states_and_values():
    t = api.from_numpy(np.arange(10, dtype=np.float32)).sync()
    assert repr(t) == ("tile.Tensor(shape=(10,), dtype=float32, device=sim:0, "
                       "[0., 1., 2., 3., 4., 5., 6., 7., 8., 9.])")
    p = t.partition((8,))
    assert "written by a live partition" in repr(t)
    del p
    moved = t.into_partition((8,))
    assert "moved into a partition" in repr(t) and "moved into a partition" in t.state()
    moved.unpartition()
    assert t.state() == "owned"


def test_tensor_html_shows_values_as_numpy_does():
    small = api.from_numpy(np.arange(6, dtype=np.int32).reshape(2, 3)).sync()
    h = small._repr_html_()
    assert "<b>tile.Tensor</b>" in h and "[[0 1 2]\n [3 4 5]]" in h and "owned" in h
    a = np.arange(2000, dtype=np.float32)
    big = api.from_numpy(a).sync()
    assert _html.escape(np.array2string(a)) in big._repr_html_()          # [0. 1. 2. ... 1999.]


@pytest.mark.parametrize("shape", [(1000,), (1001,), (10, 100), (3, 400, 5), (7, 7, 7), (2, 1, 2000)])
def test_tensor_values_summarize_like_numpy(shape):
    """NumPy's rule (threshold 1000, 3 edge items) at every size: a 1000-element tensor in full,
    a 1001-element one as its edges, never nothing."""
    a = np.arange(np.prod(shape), dtype=np.int64).reshape(shape)
    r = repr(api.from_numpy(a).sync())
    assert np.array2string(a, separator=", ", prefix="    ") in r
    assert ("..." in r) == (a.size > 1000)


def test_a_large_tensor_repr_reads_only_its_edges(monkeypatch):
    from tilejit.runtime import preview
    read = []
    real = preview._read
    monkeypatch.setattr(preview, "_read", lambda v: read.append(v.size) or real(v))
    t = api.zeros((1000, 1000)).sync()
    r = repr(t)
    assert r.count("...") == 7 and sum(read) == 36          # 6 rows and a row of dots; 4 x 3 x 3
    read.clear()
    with np.printoptions(threshold=10, edgeitems=1):        # NumPy's print options apply
        assert repr(api.zeros((20,)).sync()).endswith("[0., ..., 0.])")
    assert sum(read) == 2


@pytest.mark.filterwarnings("ignore:DeviceOp .* was never run:RuntimeWarning")   # on purpose
def test_deviceop_reprs_describe_without_running():
    x = api.from_numpy(np.ones(16, np.float32)).sync()
    z = api.zeros((16,)).sync()
    launch = copy(z.partition((8,)), x)
    r = repr(launch)
    assert "launch copy(z=partition of (16,) float32 by (8,), x=tensor (16,) float32)" in r
    assert "grid from the partitions" in r and "lazy" in r
    assert "grid (2, 1, 1)" in repr(launch.grid((2, 1, 1)))
    assert np.all(z.to_numpy() == 0)                     # nothing ran
    chained = launch.then(lambda out: api.dup(x))
    assert "then <lambda>(output)" in repr(chained)
    assert "copy tensor (16,) float32 to the host" in repr(api.to_host(x))
    assert "copy tensor (16,) float32 into tensor (16,) float32" in repr(api.memcpy(z, x))
    assert "copy a NumPy array (3,) to the device" in repr(api.from_numpy(np.ones(3)))
    assert "fill tensor (16,) float32 with 2.0" in repr(api.fill(z, 2.0))
    assert "zip of" in repr(tile.zip(api.dup(x), api.dup(z)))
    assert "<b>KernelLaunch</b>" in launch._repr_html_()
    z2 = api.zeros((16,)).sync()
    nested = copy(z2.partition((8,)), api.dup(x))
    assert "x=(a contiguous copy of tensor (16,) float32)" in repr(nested)


@pytest.mark.filterwarnings("ignore:DeviceOp .* was never run:RuntimeWarning")   # on purpose
def test_api_ops_show_what_they_are_and_a_launch_says_it_ran():
    z = api.zeros((8,))
    assert repr(z).startswith("<api.zeros: a new tensor (8,) float32 of zeros (lazy")
    assert "<b>api.zeros</b> (lazy DeviceOp, not run yet)" in z._repr_html_()
    assert "filled with 2.5" in repr(api.full((2,), 2.5).shared())
    t = z.sync()
    assert repr(z).endswith("(ran)>") and "(DeviceOp, ran)" in z._repr_html_()
    x = api.from_numpy(np.ones(16, np.float32)).sync()
    out = api.zeros((16,)).sync()
    launch = copy(out.partition((8,)), x)
    assert "(lazy:" in repr(launch)
    launch.sync()
    assert repr(launch).endswith("grid from the partitions (ran)>")
    assert "(a new tensor (3, 4) int32 of zeros)" in repr(api.dup(api.zeros((3, 4), tile.int32)).first())
    assert t.shape == (8,)


def test_kernel_repr_lists_specializations_and_stats():
    @tile.entry
    def twice(z, x, s):
        z.store(tile.load_tile_like(x, z) * s)

    assert repr(twice) == "<tile.entry twice(z, x, s): 0 compiled specializations, 0 launches>"
    assert "nothing compiled yet" in twice._repr_html_()
    x = api.from_numpy(np.ones(16, np.float32)).sync()
    z = api.zeros((16,)).sync()
    twice(z.partition((8,)), x, 2.0).sync()
    assert "1 compiled specialization, 1 launches" in repr(twice)
    h = twice._repr_html_()
    assert "partition float32 1-d tile (8,)" in h and "float64 scalar (weak)" in h
    assert "KernelStats(compiles=1" in h
