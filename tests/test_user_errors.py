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


# --- issue 45: bad inputs that were internal errors, raw exceptions or accepted ---------------------
def test_static_range_with_a_zero_step():
    @tile.entry
    def k(out):
        acc = 0
        for i in tile.static_range(0, 4, 0):
            acc += i
        tile.scatter(out, 0, acc)

    out = api.zeros((1,), tile.int32).sync()
    with pytest.raises(tile.UnsupportedError, match="step must not be zero"):
        k(tile.atomic(out)).grid((1, 1, 1)).sync()


def test_reduce_with_a_combiner_of_the_wrong_arity_is_a_user_error():
    @tile.entry
    def k(z, x):
        z.store(tile.reduce(x.load((0,), (8,)), 0, lambda a: a, keepdims=True))

    with pytest.raises(tile.TypingError, match=r"takes 1 argument\(s\), 2 given") as e:
        k(api.zeros((1,)).sync().partition((1,)), np.ones(8, np.float32)).sync()
    assert "please report" not in str(e.value)


@pytest.mark.parametrize("kwargs, match", [
    ({"tile": "64"}, "tile must be a tuple of positive ints"),
    ({"tile": (0,)}, "tile must be a tuple of positive ints"),
    ({"tile": (64,), "occupancy": "2"}, "occupancy must be a non-negative int"),
])
def test_config_checks_its_values(kwargs, match):
    with pytest.raises(TypeError, match=match):
        tile.Config(**kwargs)
    assert tile.Config(tile=64).tile == (64,)


def test_cutile_hints_and_streams_are_checked():
    import tilejit.cutile as ct
    with pytest.raises(TypeError, match="occupancy must be a non-negative int"):
        ct.kernel(occupancy="2")(lambda x: None)

    @ct.kernel
    def k(x):
        ct.scatter(x, 0, 1)

    with pytest.raises(ValueError, match="stream handle -1 is negative"):
        ct.launch(-1, (1,), k, (tile.atomic(api.zeros((1,), tile.int32).sync()),))


def test_other_compilers_names_say_tilejits():
    with pytest.raises(AttributeError, match=r"tilejit spells it tile.bid\(axis\)"):
        tile.program_id  # noqa: B018

    @tile.entry
    def k(out):
        tile.scatter(out, 0, tile.program_id(0))

    with pytest.raises(tile.TypingError, match=r"tilejit spells it tile.bid\(axis\)"):
        k(tile.atomic(api.zeros((1,), tile.int32).sync())).grid((1, 1, 1)).sync()


def test_a_lazy_op_asked_for_a_tensors_attribute_says_to_sync():
    op = api.zeros((4,))
    with pytest.raises(AttributeError, match=r"run it first: op.sync\(\).to_numpy"):
        op.to_numpy()
    op.sync()


def test_a_numpy_output_without_a_partition_names_tile_partition():
    @tile.entry
    def k(z, x):
        z.store(x.load((0,), (4,)))

    with pytest.raises(tile.LaunchError, match=r"tile.partition\(array, tile_shape\)"):
        k(np.zeros(4, np.float32), np.ones(4, np.float32)).sync()


def test_a_variable_assigned_only_under_a_false_constant_if_is_located():
    @tile.entry
    def k(out, F: tile.Constant[bool]):
        if F:
            v = 3
        tile.scatter(out, 0, v)     # noqa: F821 (the point)

    with pytest.raises(tile.TypingError, match="'v' is used but never assigned") as e:
        k(tile.atomic(api.zeros((1,), tile.int32).sync()), False).grid((1, 1, 1)).sync()
    assert e.value.loc is not None and "unknown location" not in str(e.value)


def test_a_variable_assigned_in_one_branch_and_used_in_the_other():
    # Numba's SSA left the else branch's use pointing at the then branch's value: invalid Tile IR
    @tile.entry
    def k(z, a):
        t = a.load((0, 0), (2, 2))
        if tile.bid(0) == 0:
            acc = tile.zeros((2, 2), tile.float32)
            acc = tile.mma(t, t, acc)
        else:
            acc = tile.mma(t, t, acc)     # noqa: F821 (the point)
        z.store(acc)

    z = api.zeros((4, 2)).sync()
    with pytest.raises(tile.TypingError, match="undefined variable: 'acc' may be used before"):
        k(z.partition((2, 2)), np.ones((4, 2), np.float32)).sync()
