"""What notebooks and the REPL show: tensors (state, values for small ones only), lazy DeviceOps
(what they will run, without running it) and kernels (signature, specializations, stats)."""
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
    assert repr(t).startswith("tile.Tensor(shape=(10,), dtype=float32, device=sim:0, [0, 1,")
    p = t.partition((8,))
    assert "written by a live partition" in repr(t)
    del p
    moved = t.into_partition((8,))
    assert "moved into a partition" in repr(t) and "moved into a partition" in t.state()
    moved.unpartition()
    assert t.state() == "owned"


def test_tensor_html_shows_all_values_only_for_small_tensors():
    small = api.from_numpy(np.arange(6, dtype=np.int32).reshape(2, 3)).sync()
    h = small._repr_html_()
    assert "<b>tile.Tensor</b>" in h and "[[0 1 2]\n [3 4 5]]" in h and "owned" in h
    big = api.zeros((2000,)).sync()
    assert "not fetched: 2000 elements" in big._repr_html_()


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
