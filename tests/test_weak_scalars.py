"""Python scalars at the call follow NumPy 2 (NEP 50; issue 21 items 4-7, API.md "Numerics follow
NumPy 2"): a Python int/float argument is weak, it takes the dtype of the tile it meets, exactly
(a float travels as float64, the kernel converts it once); an int that does not fit the dtype it
is converted into raises OverflowError at the call with NumPy's wording; comparisons with Python
ints are exact; ``api.full``/``api.fill`` keep the value exactly or refuse it.

Every launch runs twice: through the C launcher (when built) and through the pure-Python path."""
import warnings

import numpy as np
import pytest

import tilejit as tile
from tilejit import api

import launch_paths

pytestmark = pytest.mark.usefixtures("simulator_backend")


PATHS = ["c", "python"]


@tile.entry
def scale(z, x, a):
    z.store(tile.load_tile_like(x, z) * a)


@tile.entry
def add_n(z, x, n):
    z.store(tile.load_tile_like(x, z) + n)


@tile.entry
def greater(z, x, n):
    z.store((tile.load_tile_like(x, z) > n).astype(z.dtype))


@tile.entry
def compares(z, x, n):
    t = tile.load_tile_like(x, z)
    r = (t < n).astype(tile.int32) + (t <= n).astype(tile.int32) * 2 + \
        (t > n).astype(tile.int32) * 4 + (t >= n).astype(tile.int32) * 8 + \
        (t == n).astype(tile.int32) * 16 + (t != n).astype(tile.int32) * 32
    z.store(r)


@tile.entry
def greater_than_minus_one(z, x):
    z.store((tile.load_tile_like(x, z) > -1).astype(z.dtype))


def _tensors(s, x, out_dtype=None):
    xt = api.from_numpy(x).sync_on(s)
    zt = api.from_numpy(np.zeros(x.shape, out_dtype or x.dtype)).sync_on(s)
    return xt, zt


@pytest.mark.parametrize("path", PATHS)
def test_a_float_argument_meets_float64_tiles_exactly(path):
    s = tile.Device(0).new_stream()
    x = np.array([1.0, 2.0, -3.0, 0.5], np.float64)
    xt, zt = _tensors(s, x)
    for a in (0.1, 1e39, 1e-300, 1 / 3, 1e300):
        launch_paths.run(scale(zt.partition((4,)), xt, a), path, s)
        np.testing.assert_array_equal(zt.to_numpy(), x * a)
    assert zt.to_numpy()[0] == 1e300 != np.inf


@pytest.mark.parametrize("path", PATHS)
def test_a_float_argument_meeting_float32_is_converted_once(path):
    s = tile.Device(0).new_stream()
    x = np.array([1.0, 3.0, -7.0, 0.25], np.float32)
    xt, zt = _tensors(s, x)
    launch_paths.run(scale(zt.partition((4,)), xt, 0.1), path, s)
    np.testing.assert_array_equal(zt.to_numpy(), x * 0.1)      # NumPy 2: float32 * weak 0.1
    assert zt.to_numpy().dtype == np.float32
    with pytest.warns(RuntimeWarning, match="overflow encountered in cast"):
        launch_paths.run(scale(zt.partition((4,)), xt, 1e39), path, s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(zt.to_numpy(), x * np.float32(np.inf))
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # in range: no warning
        launch_paths.run(scale(zt.partition((4,)), xt, 3.0e38), path, s)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype,n", [(np.int8, 1000), (np.int8, -129), (np.int32, 2 ** 40 + 5),
                                     (np.uint8, 256), (np.uint64, -1), (np.uint32, -1),
                                     (np.int16, 1 << 15)])
def test_an_int_that_does_not_fit_raises_at_the_call(path, dtype, n):
    s = tile.Device(0).new_stream()
    x = np.arange(4).astype(dtype)
    xt, zt = _tensors(s, x)
    with pytest.raises(OverflowError, match=f"^Python integer {n} out of bounds for "
                                            f"{np.dtype(dtype).name}$"):
        launch_paths.run(add_n(zt.partition((4,)), xt, n), path, s)
    np.testing.assert_array_equal(zt.to_numpy(), np.zeros(4, dtype))     # nothing ran
    info = np.iinfo(dtype)
    for ok in (info.max if info.max < 2 ** 63 else 5, info.min, 0):
        inside = int(ok) - (1 if ok == info.max else 0)
        launch_paths.run(add_n(zt.partition((4,)), xt, inside), path, s)
    launch_paths.run(add_n(zt.partition((4,)), xt, 2), path, s)     # still launches
    np.testing.assert_array_equal(zt.to_numpy(), x + dtype(2))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", [np.uint32, np.uint64])
def test_unsigned_greater_than_minus_one_is_true(path, dtype):
    s = tile.Device(0).new_stream()
    x = np.array([0, 1, 7, np.iinfo(dtype).max], dtype)
    xt, zt = _tensors(s, x, np.int32)
    launch_paths.run(greater(zt.partition((4,)), xt, -1), path, s)
    np.testing.assert_array_equal(zt.to_numpy(), (x > -1).astype(np.int32))
    assert (zt.to_numpy() == 1).all()
    launch_paths.run(greater_than_minus_one(zt.partition((4,)), xt), path, s)
    assert (zt.to_numpy() == 1).all()


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype,values", [
    (np.uint32, [-1, 0, 5, 2 ** 32 - 1, 2 ** 32, -(2 ** 40)]),
    (np.uint64, [-1, 0, 5, -(2 ** 63)]),
    (np.int8, [1000, -1000, -128, 127, 3]),
    (np.int32, [2 ** 40, -(2 ** 40), 2 ** 31 - 1, -(2 ** 31), 0])])
def test_comparisons_with_python_ints_are_exact(path, dtype, values):
    s = tile.Device(0).new_stream()
    info = np.iinfo(dtype)
    x = np.array([info.min, 0, 3, info.max], dtype)
    xt, zt = _tensors(s, x, np.int32)
    for n in values:
        launch_paths.run(compares(zt.partition((4,)), xt, n), path, s)
        want = ((x < n) * 1 + (x <= n) * 2 + (x > n) * 4 + (x >= n) * 8 + (x == n) * 16 +
                (x != n) * 32).astype(np.int32)
        np.testing.assert_array_equal(zt.to_numpy(), want, err_msg=f"n={n}")


def test_api_full_keeps_the_value_or_refuses_it():
    for shape, value, dtype in [((3,), 300, tile.int8), ((3,), -1, tile.uint8),
                                ((2,), 1 << 70, tile.int64)]:
        with pytest.raises(OverflowError, match=f"Python integer {value} out of bounds for "
                                                f"{dtype.name}"):
            api.full(shape, value, dtype)
    for value in (1e300, 0.1, 1e-300, 1 / 3, -2.5e-310):
        got = api.full((2,), value, tile.float64).sync().to_numpy()
        np.testing.assert_array_equal(got, np.full((2,), value, np.float64))
    assert (api.full((2,), 255, tile.uint8).sync().to_numpy() == 255).all()
    assert (api.full((2,), -128, tile.int8).sync().to_numpy() == -128).all()
    big = api.full((2,), 2 ** 64 - 1, tile.uint64).sync().to_numpy()
    assert (big == np.uint64(2 ** 64 - 1)).all()
    with pytest.warns(RuntimeWarning, match="overflow encountered in cast"):
        got = api.full((2,), 1e300, tile.float32).sync().to_numpy()
    assert np.isinf(got).all()


def test_api_fill_keeps_float64_exact():
    t = api.zeros((5,), tile.float64).sync()
    api.fill(t, 1 / 3).sync()
    np.testing.assert_array_equal(t.to_numpy(), np.full(5, 1 / 3))
    u = api.zeros((4,), tile.int16).sync()
    with pytest.raises(OverflowError, match="Python integer 40000 out of bounds for int16"):
        api.fill(u, 40000)
    api.fill(u, -32768).sync()
    assert (u.to_numpy() == -32768).all()


def test_weak_scalars_compile_for_the_gpu():
    """The float64 parameter, its conversion and the exact comparisons are valid Tile IR."""
    s = tile.Device(0).new_stream()
    x32 = api.from_numpy(np.ones(64, np.float32)).sync_on(s)
    z32 = api.zeros((64,)).sync_on(s)
    assert scale.compile(z32.partition((64,)), x32, 0.1, arch="sm_90")[:4] == b"\x7fELF"
    xu = api.from_numpy(np.ones(64, np.uint32)).sync_on(s)
    zi = api.zeros((64,), tile.int32).sync_on(s)
    assert compares.compile(zi.partition((64,)), xu, -1, arch="sm_90")[:4] == b"\x7fELF"
    xu64 = api.from_numpy(np.ones(64, np.uint64)).sync_on(s)
    assert greater.compile(zi.partition((64,)), xu64, -1, arch="sm_90")[:4] == b"\x7fELF"
    assert greater_than_minus_one.compile(zi.partition((64,)), xu64, arch="sm_90")[:4] == \
        b"\x7fELF"


def test_the_key_and_abi_of_python_scalars():
    from tilejit.runtime.argspec import classify
    f = classify(0.1)
    assert f.key == ("scalar", "float64", True) and f.params == (0.1,) and f.slots == ("f64",)
    i = classify(-5)
    assert i.key == ("scalar", "int64", True) and i.params == (-5,) and i.slots == ("i64",)
    n = classify(np.float32(0.1))
    assert n.key == ("scalar", "float32", False) and n.slots == ("f32",)
