"""``astile``, ``insert`` (``t.insert``), ``pack_to_bytes`` and ``unpack_from_bytes`` (issue 44,
missing language): values against NumPy in tilejit's front end and through ``tilejit.cutile``,
cuTile's error messages for bad input, and one tileiras compile per op (skipped without
tileiras). tests/gpu/test_astile_insert_pack_gpu.py runs the same tests on a GPU."""
import ml_dtypes
import numpy as np
import pytest

import tilejit as tile
import tilejit.cutile as ct
from tilejit import api

pytestmark = pytest.mark.usefixtures("simulator_backend")


def _stream():
    return tile.Device(0).new_stream()


def _tileiras():
    from tilejit.toolchain import tileiras
    try:
        tileiras.find_toolchain()
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"tileiras is not installed ({e})")


# --- astile ---------------------------------------------------------------------------------------
@tile.entry
def _astile_mixed(z, a: int, b: int, c: float, d: bool):
    z.store(tile.astile((((1, a), (2, b)), ((3, c), (4, d))), tile.float32))


def test_astile_run_time_and_constant_leaves():
    z = api.zeros((2, 2, 2), tile.float32).sync()
    _astile_mixed(z.partition((2, 2, 2)), 10, 20, 3.5, False).sync()
    assert z.to_numpy().tolist() == [[[1, 10], [2, 20]], [[3, 3.5], [4, 0]]]


VALUES = [(1,), (((1,),),), (1, 2), ((1, 2), (3, 4)), (((1, 2), (3, 4)), ((5, 6), (7, 8)))]


@pytest.mark.parametrize("value", VALUES, ids=str)
def test_astile_shapes_cutile(value):
    want = np.array(value, np.int32)

    @ct.kernel
    def k(X):
        t = ct.astile(value, dtype=ct.int32)
        ct.store(X, ct.static_eval((0,) * len(want.shape)), t)

    x = api.zeros(want.shape, tile.int32).sync()
    ct.launch(_stream(), (1,), k, (tile.atomic(x),))
    assert np.array_equal(x.to_numpy(), want)


@pytest.mark.parametrize("dtype", [tile.int8, tile.uint16, tile.int64, tile.float16,
                                   tile.bfloat16, tile.float64, tile.float8_e4m3fn, tile.bool_])
def test_astile_dtypes(dtype):
    value = ((0, 1.5), (True, 4))

    @ct.kernel
    def k(X):
        ct.store(X, (0, 0), ct.astile(value, dtype=dtype))

    want = np.array([[0, 1.5], [1, 4]], np.float64).astype(dtype.np_dtype)
    x = api.zeros((2, 2), dtype).sync()
    ct.launch(_stream(), (1,), k, (tile.atomic(x),))
    assert np.array_equal(x.to_numpy().astype(np.float64), want.astype(np.float64))


def test_astile_scalars_and_0d_tiles():
    @ct.kernel
    def k(X, a: float, b: bool):
        tp = (ct.int8(1), ct.astile(2, dtype=ct.int64), ct.full((), 3, dtype=ct.float32), a)
        ct.store(X, (0,), ct.astile(tp, dtype=ct.int32))
        ct.store(X, (1,), ct.astile(((a, 0.0), (b, 2.5)), dtype=ct.bool_).astype(ct.int32)
                 .reshape((4,)))
        ct.store(X, 8, ct.astile(a, dtype=ct.int32))
        ct.store(X, 9, ct.astile(5, dtype=ct.int32))

    x = api.zeros((16,), tile.int32).sync()
    ct.launch(_stream(), (1,), k, (tile.atomic(x), 42.0, True))
    assert x.to_numpy().tolist()[:10] == [1, 2, 3, 42, 1, 0, 1, 1, 42, 5]


@pytest.mark.parametrize("body, match", [
    ("ct.astile((), dtype=ct.int32)", "Tuple length 0 at value is not a power of 2"),
    ("ct.astile((1, 2, 3), dtype=ct.int32)", "Tuple length 3 at value is not a power of 2"),
    ("ct.astile((1, 'a'), dtype=ct.int32)", r"Expected scalar elements at value\[1\]"),
    ("ct.astile(((1,), (ct.full((2, 2), 1, dtype=ct.int32),)), dtype=ct.int32)",
     r"Expected scalar elements at value\[1\]\[0\]"),
    ("ct.astile(((1, 2), (3,)), dtype=ct.int32)", "Tuple has non-uniform inner shapes at value"),
    ("ct.astile(ct.full((4,), 1, dtype=ct.int32), dtype=ct.int32)",
     r"Expected a scalar or \(possibly nested\) tuple of scalars"),
])
def test_astile_errors(body, match):
    _ct_error(f"    {body}\n", match)


def _ct_error(body, match, args=(), params=""):
    ns = {"ct": ct}
    exec(compile(f"@ct.kernel\ndef k(X{params}):\n{body}", "<kernel>", "exec"), ns)
    x = api.zeros((128,), tile.float16).sync()
    with pytest.raises(ct.TileTypeError, match=match):
        ct.launch(_stream(), (1,), ns["k"], (tile.atomic(x),) + args)


def test_astile_compiles_with_tileiras():
    _tileiras()
    z = api.zeros((2, 2, 2), tile.float32).sync()
    assert len(_astile_mixed.compile(z.partition((2, 2, 2)), 1, 2, 3.0, True, arch="sm_90")) > 0


# --- insert ---------------------------------------------------------------------------------------
@tile.entry
def _insert_2d(z, x, i: int, j: int):
    t = x.load((0, 0), (16, 8))
    sub = tile.extract(t, (i, j), (4, 2)) + 5.0
    z.store(t.insert((i, j), sub))


@pytest.mark.parametrize("i, j", [(0, 0), (3, 1), (2, 3)])
def test_insert_run_time_index(i, j):
    x = np.arange(128, dtype=np.float32).reshape(16, 8)
    z = api.zeros((16, 8), tile.float32).sync()
    _insert_2d(z.partition((16, 8)), x, i, j).sync()
    want = x.copy()
    want[4 * i:4 * i + 4, 2 * j:2 * j + 2] += 5
    assert np.array_equal(z.to_numpy(), want)


@ct.kernel
def _ct_insert_1d(x, y, SUB: ct.Constant[int], IDX: ct.Constant[int],
                  use_method: ct.Constant[bool]):
    tx = ct.load(x, index=0, shape=32)
    sub = ct.extract(tx, index=IDX, shape=SUB) + 5.0
    if use_method:
        tx = tx.insert(IDX, sub)
    else:
        tx = ct.insert(tx, IDX, sub)
    ct.store(y, index=0, tile=tx)


@pytest.mark.parametrize("sub, idx", [(8, 0), (8, 3), (1, 7), (32, 0)])
@pytest.mark.parametrize("use_method", [True, False])
def test_insert_cutile(sub, idx, use_method):
    x = np.arange(32, dtype=np.float16)
    y = api.zeros((32,), tile.float16).sync()
    ct.launch(_stream(), (1,), _ct_insert_1d, (x, tile.atomic(y), sub, idx, use_method))
    want = x.copy()
    want[idx * sub:(idx + 1) * sub] += 5
    assert np.array_equal(y.to_numpy(), want)


@ct.kernel
def _ct_insert_0d_dynamic(x, idx, y):
    tx = ct.load(x, index=0, shape=32)
    i = ct.load(idx, index=0, shape=())
    s = ct.extract(tx, index=i, shape=()) + 5.0
    ct.store(y, index=0, tile=ct.insert(tx, i, s))


@pytest.mark.parametrize("i", [0, 9, 31])
def test_insert_0d_value_at_a_loaded_index(i):
    x = np.arange(32, dtype=np.float32)
    y = api.zeros((32,), tile.float32).sync()
    ct.launch(_stream(), (1,), _ct_insert_0d_dynamic, (x, np.array([i], np.int32),
                                                       tile.atomic(y)))
    want = x.copy()
    want[i] += 5
    assert np.array_equal(y.to_numpy(), want)


@pytest.mark.parametrize("body, match", [
    ("    t = ct.full((128,), 1, dtype=ct.float16)\n"
     "    ct.insert(t, 0, ct.full((64,), 1, dtype=ct.int32))\n", "Cannot insert a tile of dtype"),
    ("    t = ct.full((128,), 1, dtype=ct.float16)\n"
     "    ct.insert(t, 0, ct.full((256,), 1, dtype=ct.float16))\n", "not divisible by"),
    ("    t = ct.full((128,), 1, dtype=ct.float16)\n"
     "    ct.insert(t, 2, ct.full((64,), 1, dtype=ct.float16))\n", "out of bounds"),
    ("    t = ct.full((8, 8), 1, dtype=ct.float16)\n"
     "    ct.insert(t, (0, 0), ct.full((8,), 1, dtype=ct.float16))\n",
     "does not match the tile rank"),
])
def test_insert_errors(body, match):
    _ct_error(body, match)


def test_insert_compiles_with_tileiras():
    _tileiras()
    z = api.zeros((16, 8), tile.float32).sync()
    assert len(_insert_2d.compile(z.partition((16, 8)), np.zeros((16, 8), np.float32), 1, 2,
                                  arch="sm_90")) > 0


# --- pack_to_bytes / unpack_from_bytes ----------------------------------------------------------
PACK_DTYPES = [tile.int8, tile.uint8, tile.int16, tile.uint16, tile.int32, tile.uint32,
               tile.int64, tile.uint64, tile.float16, tile.bfloat16, tile.float32, tile.float64,
               tile.float8_e4m3fn, tile.float8_e5m2]


def _sample(dtype, n, seed=0):
    rng = np.random.default_rng(seed)
    if dtype.is_integer:
        info = np.iinfo(dtype.np_dtype)
        return rng.integers(info.min, info.max, n, dtype=dtype.np_dtype, endpoint=True)
    return (rng.standard_normal(n) * 4).astype(dtype.np_dtype)


@tile.entry
def _pack(z, x):
    z.store(tile.pack_to_bytes(x.load((0, 0), (4, 8))))


@tile.entry
def _unpack(z, x):
    z.store(tile.unpack_from_bytes(x.load((0,), (64,)), z.dtype))


@pytest.mark.parametrize("dtype", PACK_DTYPES, ids=str)
def test_pack_to_bytes(dtype):
    x = _sample(dtype, 32).reshape(4, 8)
    want = np.asarray(x).view(np.uint8).reshape(-1)
    z = api.zeros(want.shape, tile.uint8).sync()
    _pack(z.partition(want.shape), x).sync()
    assert np.array_equal(z.to_numpy(), want)


@pytest.mark.parametrize("dtype", PACK_DTYPES, ids=str)
def test_unpack_from_bytes(dtype):
    raw = _sample(tile.uint8, 64, seed=1)
    want = raw.view(dtype.np_dtype)
    z = api.zeros(want.shape, dtype).sync()
    _unpack(z.partition(want.shape), raw).sync()
    assert np.array_equal(z.to_numpy().view(np.uint8), raw)


@ct.kernel
def _ct_roundtrip(x, y, TILE: ct.Constant[int]):
    packed = ct.pack_to_bytes(ct.load(x, index=(0,), shape=(TILE,)))
    ct.store(y, index=(0,), tile=ct.unpack_from_bytes(packed, y.dtype))


@pytest.mark.parametrize("src, dst", [(tile.float32, tile.int16), (tile.int64, tile.float16),
                                      (tile.bfloat16, tile.uint64), (tile.int8, tile.float32),
                                      (tile.float8_e5m2, tile.float8_e4m3fn)])
def test_cutile_cross_type_roundtrip(src, dst):
    x = _sample(src, 32, seed=2)
    want = x.view(np.uint8).view(dst.np_dtype)
    y = api.zeros(want.shape, dst).sync()
    ct.launch(_stream(), (1,), _ct_roundtrip, (x, tile.atomic(y), 32))
    assert np.array_equal(y.to_numpy().view(np.uint8), want.view(np.uint8))


def test_pack_0d_and_documented_examples():
    @ct.kernel
    def k(y, w):
        ct.store(y, index=(0,), tile=ct.pack_to_bytes(ct.full((), 0x04030201, dtype=ct.int32)))
        ct.store(w, index=(0,), tile=ct.unpack_from_bytes(ct.arange(4, dtype=ct.uint8) + 1,
                                                          ct.int32))

    y = api.zeros((4,), tile.uint8).sync()
    w = api.zeros((1,), tile.int32).sync()
    ct.launch(_stream(), (1,), k, (tile.atomic(y), tile.atomic(w)))
    assert y.to_numpy().tolist() == [1, 2, 3, 4]
    assert w.to_numpy().tolist() == [0x04030201]


@pytest.mark.parametrize("body, match", [
    ("    ct.unpack_from_bytes(ct.full((2,), 1, dtype=ct.uint8), ct.int32)\n",
     "not divisible by 32"),
    ("    ct.unpack_from_bytes(ct.full((4,), 1, dtype=ct.int32), ct.int32)\n",
     "unpack_from_bytes requires uint8 tile"),
    ("    ct.unpack_from_bytes(ct.full((4, 4), 1, dtype=ct.uint8), ct.int32)\n",
     "unpack_from_bytes requires a 1D tile"),
    ("    ct.pack_to_bytes(ct.full((4,), True, dtype=ct.bool_))\n",
     "pack_to_bytes from a bool_ tile"),
    ("    ct.unpack_from_bytes(ct.full((4,), 1, dtype=ct.uint8), ct.bool_)\n",
     "unpack_from_bytes to a bool_ tile"),
])
def test_pack_unpack_errors(body, match):
    _ct_error(body, match)


@pytest.mark.parametrize("dtype", [tile.float16, tile.int64, tile.float8_e4m3fn], ids=str)
def test_pack_unpack_compile_with_tileiras(dtype):
    _tileiras()
    x = _sample(dtype, 32).reshape(4, 8)
    z = api.zeros((32 * x.itemsize,), tile.uint8).sync()
    assert len(_pack.compile(z.partition((32 * x.itemsize,)), x, arch="sm_90")) > 0
    z = api.zeros((64 // x.itemsize,), dtype).sync()
    assert len(_unpack.compile(z.partition((64 // x.itemsize,)), np.zeros(64, np.uint8),
                               arch="sm_90")) > 0


@pytest.mark.parametrize("dtype", [tile.float4_e2m1fn, tile.float8_e8m0fnu], ids=str)
def test_narrow_floats_unpack_pack_roundtrip(dtype):
    @ct.kernel
    def k(x, y, TILE: ct.Constant[int]):
        unpacked = ct.unpack_from_bytes(ct.load(x, index=(0,), shape=(TILE,)), dtype)
        ct.store(y, index=(0,), tile=ct.pack_to_bytes(unpacked))

    raw = _sample(tile.uint8, 64, seed=3)
    raw[:2] = (255, 0)                      # e8m0's NaN and smallest codes
    y = api.zeros((64,), tile.uint8).sync()
    ct.launch(_stream(), (1,), k, (raw, tile.atomic(y), 64))
    assert np.array_equal(y.to_numpy(), raw)


def test_float4_pack_to_bytes_low_nibble_first():
    x = np.array([0.5, -1.5, 6.0, 0.0, -0.0, 2.0, 3.0, -4.0], ml_dtypes.float4_e2m1fn)
    codes = x.view(np.uint8) & 15
    want = codes[0::2] | (codes[1::2] << 4)
    z = api.zeros((4,), tile.uint8).sync()

    @tile.entry
    def k(z, x):
        z.store(tile.pack_to_bytes(x.load((0,), (8,))))

    k(z.partition((4,)), x).sync()
    assert np.array_equal(z.to_numpy(), want)


@pytest.mark.parametrize("arch", ["sm_90", "sm_100"])
@pytest.mark.parametrize("dtype", [tile.float4_e2m1fn, tile.float8_e8m0fnu], ids=str)
def test_narrow_floats_compile_with_tileiras(dtype, arch):
    _tileiras()

    @tile.entry
    def k(z, x):
        z.store(tile.pack_to_bytes(tile.unpack_from_bytes(x.load((0,), (64,)), dtype)))

    z = api.zeros((64,), tile.uint8).sync()
    assert len(k.compile(z.partition((64,)), np.zeros(64, np.uint8), arch=arch)) > 0


@pytest.mark.parametrize("arch", ["sm_90", "sm_100"])
@pytest.mark.parametrize("dtype", [tile.bool_, tile.bfloat16, tile.float8_e4m3fn,
                                   tile.float4_e2m1fn, tile.float8_e8m0fnu], ids=str)
def test_astile_dtypes_compile_with_tileiras(dtype, arch):
    _tileiras()

    @tile.entry
    def k(z, a: float, b: bool):
        t = tile.astile(((1, 0), (2.5, True)), dtype).astype(tile.float32)
        z.store(t + tile.astile(((a, 1), (b, 4)), dtype).astype(tile.float32))

    z = api.zeros((2, 2), tile.float32).sync()
    assert len(k.compile(z.partition((2, 2)), 1.0, True, arch=arch)) > 0


@pytest.mark.parametrize("dtype", [tile.float4_e2m1fn, tile.float8_e8m0fnu], ids=str)
def test_astile_narrow_floats(dtype):
    @tile.entry
    def k(z, a: float, i: int):
        z.store(tile.astile(((a, 1), (i, 4.0)), dtype).astype(tile.float32))

    z = api.zeros((2, 2), tile.float32).sync()
    k(z.partition((2, 2)), 2.0, 4).sync()
    assert z.to_numpy().tolist() == [[2, 1], [4, 4]]
