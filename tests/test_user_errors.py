"""Errors in the kernel's words: out-of-bounds tile indices on the simulator name the array, the
index and the array's shape and tiles (not Tile IR types), and ``breakpoint()`` in a kernel points
to the simulator debugging workflow."""
import numpy as np
import pytest

import tilejit as tile
from tilejit import api
from tilejit.simulator import SimulatorError

pytestmark = pytest.mark.usefixtures("simulator_backend")


@tile.entry
def load_past_the_end(z, x):
    z.store(x.load((tile.bid(0) + 5,), (8,)))


@tile.entry
def view_load(z, x):
    z.store(x.partition((8,)).load((7,)))


@tile.entry
def store_past_the_end(z, x):
    tile.store(z.partition((8,)), (9,), x.load((0,), (8,)))


@tile.entry
def transposed(z, k):
    z.store(k.load((0, 3), (4, 8), order=(1, 0)))


def _error(kernel, z, x, grid=None):
    op = kernel(z, x)
    with pytest.raises(SimulatorError) as e:
        (op.grid(grid) if grid else op).sync()
    return str(e.value)


def test_an_out_of_bounds_load_names_the_array_its_shape_and_tiles():
    x = api.from_numpy(np.arange(16, dtype=np.float32)).sync()
    z = api.zeros((8,)).sync()
    msg = _error(load_past_the_end, z.partition((8,)), x)
    assert msg.startswith("x.load: tile index (5,) is out of bounds: array 'x' of shape (16,) has "
                          "(2,) tiles of shape (8,)"), msg
    assert "(5 on axis 0 is not)" in msg and "block (0, 0, 0), kernel 'load_past_the_end'" in msg
    assert "partition_view" not in msg and "tensor_view" not in msg          # no IR types
    assert "z.store(x.load((tile.bid(0) + 5,), (8,)))" in msg               # the source line
    msg = _error(view_load, z.partition((8,)), x)
    assert msg.startswith("x.load: tile index (7,) is out of bounds: array 'x'"), msg


def test_an_out_of_bounds_store_and_an_ordered_load():
    x = api.from_numpy(np.arange(8, dtype=np.float32)).sync()
    z = api.zeros((8,)).sync()
    msg = _error(store_past_the_end, tile.atomic(z), x, grid=(1, 1, 1))
    assert msg.startswith("z.store: tile index (9,) is out of bounds: array 'z' of shape (8,) "
                          "has (1,) tiles of shape (8,)"), msg
    k = api.zeros((16, 4)).sync()
    out = api.zeros((4, 8)).sync()
    msg = _error(transposed, out.partition((4, 8)), k)
    assert "array 'k' of shape (16, 4) read with order=(1, 0) has (1, 2) tiles of shape " \
           "(4, 8)" in msg and "(3 on axis 1 is not)" in msg, msg


@tile.entry
def stops(z, x):
    breakpoint()
    z.store(tile.load_tile_like(x, z))


def test_breakpoint_in_a_kernel_points_to_the_simulator_workflow():
    x = api.zeros((8,)).sync()
    z = api.zeros((8,)).sync()
    with pytest.raises(tile.UnsupportedError) as e:
        stops(z.partition((8,)), x).sync()
    msg = str(e.value)
    assert "breakpoint() cannot stop inside a tile kernel" in msg
    assert "TILEJIT_SIMULATE=1" in msg and "tile.printf" in msg and "Stepping through a kernel" in msg
    assert "pass it as an argument" not in msg
