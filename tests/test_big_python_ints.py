"""Python ints beyond int64 follow NumPy 2 (issue 45): an int in [2**63, 2**64) is a weak uint64
argument (``uint64_array + 2**63`` works, an int64 tile refuses it with NumPy's OverflowError at
the call), and comparisons with an int outside every int dtype (``t == 2**64``) are decided by
value, for constants and arguments alike."""
import linecache

import numpy as np
import pytest

import tilejit as tile
from tilejit import api

import launch_paths

pytestmark = pytest.mark.usefixtures("simulator_backend")

PATHS = ["c", "python"]
U64_MAX = 2 ** 64 - 1


@tile.entry
def add_n(z, x, n):
    z.store(tile.load_tile_like(x, z) + n)


@tile.entry
def compares(z, x, n):
    t = tile.load_tile_like(x, z)
    r = (t < n).astype(tile.int32) + (t <= n).astype(tile.int32) * 2 + \
        (t > n).astype(tile.int32) * 4 + (t >= n).astype(tile.int32) * 8 + \
        (t == n).astype(tile.int32) * 16 + (t != n).astype(tile.int32) * 32
    z.store(r)


def _want(x, n):
    return ((x < n) * 1 + (x <= n) * 2 + (x > n) * 4 + (x >= n) * 8 + (x == n) * 16 +
            (x != n) * 32).astype(np.int32)


def _tensors(s, x, out_dtype=None):
    xt = api.from_numpy(x).sync_on(s)
    zt = api.from_numpy(np.zeros(x.shape, out_dtype or x.dtype)).sync_on(s)
    return xt, zt


def _kernel(source: str, name: str):
    """A kernel from ``source`` (constants spelled in it), with its lines known to tracebacks."""
    fn = f"<big-int {name}>"
    linecache.cache[fn] = (len(source), None, source.splitlines(True), fn)
    g = {"tile": tile}
    exec(compile(source, fn, "exec"), g)
    return g[name]


def _constant_compares(c):
    return _kernel(f"""
@tile.entry
def cmp(z, x):
    t = tile.load_tile_like(x, z)
    r = (t < {c}).astype(tile.int32) + (t <= {c}).astype(tile.int32) * 2 + \\
        (t > {c}).astype(tile.int32) * 4 + (t >= {c}).astype(tile.int32) * 8 + \\
        (t == {c}).astype(tile.int32) * 16 + (t != {c}).astype(tile.int32) * 32
    z.store(r)
""", "cmp")


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("n", [2 ** 63, 2 ** 63 + 12345, U64_MAX - 4])
def test_an_int_above_int64_meets_a_uint64_tile(path, n):
    s = tile.Device(0).new_stream()
    x = np.array([0, 1, 2, 3], np.uint64)
    xt, zt = _tensors(s, x)
    launch_paths.run(add_n(zt.partition((4,)), xt, n), path, s)
    np.testing.assert_array_equal(zt.to_numpy(), x + n)
    launch_paths.run(add_n(zt.partition((4,)), xt, 7), path, s)      # an int64-sized one too
    np.testing.assert_array_equal(zt.to_numpy(), x + 7)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8])
def test_an_int_above_int64_refused_where_numpy_refuses_it(path, dtype):
    s = tile.Device(0).new_stream()
    x = np.arange(4).astype(dtype)
    xt, zt = _tensors(s, x)
    with pytest.raises(OverflowError):
        np.array([1], dtype) + 2 ** 63                  # NumPy 2 refuses it too
    with pytest.raises(OverflowError, match=f"^Python integer {2 ** 63} out of bounds for "
                                            f"{np.dtype(dtype).name}$"):
        launch_paths.run(add_n(zt.partition((4,)), xt, 2 ** 63), path, s)
    np.testing.assert_array_equal(zt.to_numpy(), np.zeros(4, dtype))


@pytest.mark.parametrize("path", PATHS)
def test_an_int_above_int64_meets_a_float_tile(path):
    s = tile.Device(0).new_stream()
    x = np.array([0.5, 1, 2, 3], np.float32)
    xt, zt = _tensors(s, x)
    launch_paths.run(add_n(zt.partition((4,)), xt, 2 ** 63), path, s)
    np.testing.assert_array_equal(zt.to_numpy(), x + 2 ** 63)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("n", [2 ** 64, -(2 ** 63) - 1])
def test_an_int_beyond_every_dtype_is_refused_at_the_call(path, n):
    s = tile.Device(0).new_stream()
    x = np.arange(4).astype(np.uint64)
    xt, zt = _tensors(s, x)
    name = "uint64" if n > 0 else "int64"
    with pytest.raises(OverflowError, match=f"^Python integer {n} out of bounds for {name}$"):
        launch_paths.run(add_n(zt.partition((4,)), xt, n), path, s)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint64, np.uint16])
def test_comparisons_with_an_argument_above_int64_are_exact(path, dtype):
    s = tile.Device(0).new_stream()
    info = np.iinfo(dtype)
    x = np.array([info.min, 0, 3, info.max], dtype)
    xt, zt = _tensors(s, x, np.int32)
    for n in (2 ** 63, U64_MAX, int(info.max)):
        launch_paths.run(compares(zt.partition((4,)), xt, n), path, s)
        np.testing.assert_array_equal(zt.to_numpy(), _want(x, n), err_msg=f"n={n}")


@pytest.mark.parametrize("c", [2 ** 64, 2 ** 70, -(2 ** 63) - 1, -(2 ** 80), 2 ** 63, U64_MAX])
def test_comparisons_with_out_of_range_constants_are_decided_by_value(c):
    s = tile.Device(0).new_stream()
    kernel = _constant_compares(c)
    for dtype in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
                  np.uint64):
        info = np.iinfo(dtype)
        x = np.array([info.min, 0, 3, info.max], dtype)
        xt, zt = _tensors(s, x, np.int32)
        kernel(zt.partition((4,)), xt).sync_on(s)
        want = _want(x, c)                   # NumPy 2: == False, != True, < and > by sign
        np.testing.assert_array_equal(zt.to_numpy(), want, err_msg=f"{dtype.__name__} {c}")


def test_arithmetic_with_an_int_beyond_every_dtype_is_a_compile_error():
    kernel = _kernel("""
@tile.entry
def plus(z, x):
    z.store(tile.load_tile_like(x, z) + 2 ** 64)
""", "plus")
    s = tile.Device(0).new_stream()
    xt, zt = _tensors(s, np.arange(4).astype(np.uint64))
    with pytest.raises(tile.TypingError, match=r"18446744073709551616 .*out of bounds for uint64"):
        kernel(zt.partition((4,)), xt).sync_on(s)


@pytest.mark.parametrize("body", ["z.store(tile.full(z.shape, 2 ** 64, tile.uint64))",
                                  "z.store(tile.full(z.shape, 0, tile.uint64) + "
                                  "tile.uint64(-2 ** 64))"])
def test_converting_an_int_beyond_every_dtype_is_a_compile_error(body):
    kernel = _kernel(f"@tile.entry\ndef conv(z, x):\n    {body}\n", "conv")
    s = tile.Device(0).new_stream()
    xt, zt = _tensors(s, np.arange(4).astype(np.uint64))
    with pytest.raises(tile.TypingError, match=r"integer -?18446744073709551616 out of bounds "
                                               r"for uint64"):
        kernel(zt.partition((4,)), xt).sync_on(s)


def test_an_int_beyond_every_dtype_converts_to_float():
    kernel = _kernel("""
@tile.entry
def conv(z, x):
    z.store(tile.load_tile_like(x, z) * tile.full(z.shape, 2 ** 64, tile.float32) +
            tile.float32(-2 ** 65))
""", "conv")
    s = tile.Device(0).new_stream()
    xt, zt = _tensors(s, np.arange(4).astype(np.float32))
    kernel(zt.partition((4,)), xt).sync_on(s)
    want = np.arange(4, dtype=np.float32) * np.float32(2 ** 64) + np.float32(-2 ** 65)
    np.testing.assert_array_equal(zt.to_numpy(), want)
    assert want[3] == 2 ** 64


def test_out_of_range_comparisons_compile_for_the_gpu():
    s = tile.Device(0).new_stream()
    xt, zt = _tensors(s, np.ones(64, np.int64), np.int32)
    assert _constant_compares(2 ** 64).compile(zt.partition((64,)), xt, arch="sm_90")[:4] == \
        b"\x7fELF"
    xu = api.from_numpy(np.ones(64, np.uint64)).sync_on(s)
    assert add_n.compile(api.zeros((64,), tile.uint64).sync_on(s).partition((64,)), xu, 2 ** 63,
                         arch="sm_90")[:4] == b"\x7fELF"


BIG = 2 ** 64


@tile.entry
def below_global(z, x):
    z.store((tile.load_tile_like(x, z) < BIG).astype(tile.int32))


def test_a_global_or_captured_int_beyond_every_dtype_compares_by_value():
    s = tile.Device(0).new_stream()
    xt, zt = _tensors(s, np.arange(4).astype(np.int64), np.int32)
    below_global(zt.partition((4,)), xt).sync_on(s)
    assert (zt.to_numpy() == 1).all()
    low = -(2 ** 70)

    @tile.entry
    def above_captured(z, x):
        z.store((tile.load_tile_like(x, z) > low).astype(tile.int32) * 2)

    above_captured(zt.partition((4,)), xt).sync_on(s)
    assert (zt.to_numpy() == 2).all()
