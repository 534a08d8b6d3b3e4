"""Run-time Python scalars of ``ct.kernel`` launches are strong values, as in cuTile Python: a
``float`` is a float32 rank-0 tile, an ``int`` an int32 one (``ct.ScalarInt64``: int64), a
``bool`` a bool_ one, so ``x_f16 + y`` with ``y = 5.0`` computes in float32. ``@tile.entry``
keeps NumPy's weak rule (the same expression stays float16). Both launch paths (CI runs this
file with ``TILEJIT_NATIVE=0`` too); test_native_stub.py checks the C path's bytes."""
import numpy as np
import pytest

import tilejit as tile
import tilejit.cutile as ct
from tilejit import api, keys, scalars

pytestmark = pytest.mark.usefixtures("simulator_backend")


def _stream():
    return tile.Device(0).new_stream()


@ct.kernel
def add_scalar(x, out, y, TILE: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,)) + y
    ct.store(out, index=(ct.bid(0),), tile=t)


@ct.kernel
def add_scalar_same_dtype(x, out, y, TILE: ct.Constant[int]):
    """The sum stored as computed: its dtype shows through the store's implicit cast rule."""
    ct.store(out, index=(ct.bid(0),), tile=(ct.load(x, index=(ct.bid(0),), shape=(TILE,)) + y)
             .astype(out.dtype))


def test_a_python_float_is_float32_against_a_float16_tile():
    # 1000 + 0.25 is 1000.25 in float32; float16 has no such value (its step there is 0.5)
    x = np.full(8, 1000.0, np.float16)
    out = np.zeros(8, np.float32)
    for _ in range(2):                      # the second launch replays (C path when built)
        ct.launch(_stream(), (2,), add_scalar, (x, out, 0.25, 4))
        np.testing.assert_array_equal(out, 1000.25)
    assert "y: Tile[float32, ()]" in add_scalar.inspect_types(x, out, 0.25, 4)


def test_an_int_is_int32_against_an_int8_tile():
    x = np.full(8, 100, np.int8)
    out = np.zeros(8, np.int32)
    ct.launch(_stream(), (2,), add_scalar_same_dtype, (x, out, 100, 4))
    np.testing.assert_array_equal(out, 200)          # int8 would wrap to -56
    assert "y: Tile[int32, ()]" in add_scalar_same_dtype.inspect_types(x, out, 100, 4)


def test_an_int_against_a_float_tile_and_a_bool_are_strong_too():
    x = np.full(8, 0.5, np.float16)
    out = np.zeros(8, np.float32)
    ct.launch(_stream(), (2,), add_scalar, (x, out, 3, 4))
    np.testing.assert_array_equal(out, 3.5)
    assert "y: Tile[bool_, ()]" in add_scalar.inspect_types(x, out, True, 4)


@ct.kernel
def add_wide(x, out, y: ct.ScalarInt64, TILE: ct.Constant[int]):
    ct.store(out, index=(ct.bid(0),), tile=ct.load(x, index=(ct.bid(0),), shape=(TILE,)) + y)


def test_an_int_beyond_int32_needs_scalar_int64():
    x = np.zeros(4, np.int64)
    out = np.zeros(4, np.int64)
    with pytest.raises(OverflowError, match=r"2147483648 out of bounds for int32.*ScalarInt64"):
        ct.launch(_stream(), (1,), add_scalar, (x, out, 2 ** 31, 4))
    ct.launch(_stream(), (1,), add_wide, (x, out, 2 ** 40, 4))
    np.testing.assert_array_equal(out, 2 ** 40)
    assert "y: Tile[int64, ()]" in add_wide.inspect_types(x, out, 2 ** 40, 4)


@ct.kernel
def add_pair(x, out, pair, TILE: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,))
    ct.store(out, index=(ct.bid(0),), tile=t + pair[0] + pair[1])


def test_scalars_inside_a_tuple_argument_are_strong():
    x = np.full(4, 1000.0, np.float16)
    out = np.zeros(4, np.float32)
    ct.launch(_stream(), (1,), add_pair, (x, out, (0.125, 1), 4))
    np.testing.assert_array_equal(out, 1001.125)


def test_numpy_scalars_keep_their_dtype():
    x = np.full(4, 1000.0, np.float16)
    out = np.zeros(4, np.float32)
    ct.launch(_stream(), (1,), add_scalar, (x, out, np.float16(0.25), 4))
    np.testing.assert_array_equal(out, 1000.0)      # float16 + float16: 1000.25 rounds down
    # float16 + float64 is float64, which ct.store converts to float32 only explicitly
    ct.launch(_stream(), (1,), add_scalar_same_dtype, (x, out, np.float64(0.25), 4))
    np.testing.assert_array_equal(out, 1000.25)


@tile.entry
def entry_add(x, out, y):
    out.store(tile.load_tile_like(x, out) + y)


def test_tile_entry_keeps_the_weak_rule():
    x = api.from_numpy(np.full(4, 1000.0, np.float16)).sync()
    out = api.zeros((4,), tile.float16).sync()
    entry_add(x, out.partition((4,)), 0.25).sync()
    np.testing.assert_array_equal(out.to_numpy(), 1000.0)   # float16 arithmetic
    assert "y: float64" in entry_add.inspect_types(x, out.partition((4,)), 0.25)


def test_the_strong_annotations_and_their_plans():
    """One annotation object per dtype (the C launcher looks plans up by identity), and a plan
    per Python scalar type with a strong key (scalars.annotated_plans)."""
    assert scalars.strong() is scalars.strong(None)
    assert scalars.strong(tile.int64) is scalars.strong(tile.int64)
    assert add_wide._anns == (scalars.strong(),) * 2 + (scalars.strong(tile.int64),)
    plans = scalars.annotated_plans()
    int_plan, float_plan, bool_plan = plans[scalars.strong()]
    assert int_plan == (keys.scalar_key("int32", False), -2 ** 31, 2 ** 31 - 1)
    assert float_plan[0] == keys.scalar_key("float32", False)
    assert bool_plan == (keys.scalar_key("bool_", False), 0, 1)
    assert plans[scalars.strong(tile.int64)][0][0] == keys.scalar_key("int64", False)
