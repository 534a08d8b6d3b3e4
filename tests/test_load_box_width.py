"""x.load(..., box_width=n): the tile read through a view whose last axis is split in pieces of n
elements (each TMA box row n wide), where the key proves it holds the same elements; ignored
elsewhere. Same tile, same padding, either way (simulator, Tile IR, sm_90 compiles)."""
import numpy as np
import pytest

import tilejit as tile
from tilejit import api
from tilejit.toolchain import tileiras

pytestmark = pytest.mark.usefixtures("simulator_backend")
ZERO, NEG_INF = tile.PaddingMode.ZERO, tile.PaddingMode.NEG_INF


@tile.entry
def rows_plus_one(y, x, BOX: tile.Constant[int]):
    BM, BN = y.shape
    t = x.load((y.block[0], y.block[1]), (BM, BN), padding=ZERO, box_width=BOX)
    y.store(t + 1.0)


@tile.entry
def row_max(z, x, w, BOX: tile.Constant[int]):
    BM, BN = z.shape
    t = tile.load(x, (z.block[0], 0), (BM, BN), padding=NEG_INF, box_width=BOX)
    v = w.load((0,), (BN,), padding=ZERO, box_width=BOX)
    z.store(t + tile.max(t, axis=1, keepdims=True) + v[None, :])


def _split_views(kernel, *args):
    """How many tensor views the kernel's Tile IR makes (one more where a load is split)."""
    return kernel.inspect_tileir(*args).count("make_tensor_view")


@pytest.mark.parametrize("n,box,split", [(1024, 64, True), (1000, 8, True), (3000, 8, True),
                                         (1016, 64, False), (1024, 256, False)])
def test_the_tile_is_the_same_with_or_without_the_split(n, box, split):
    """Whole tiles and tiles past the edge (1000 / 3000: the padding lands on the same columns);
    1016 is not known to be a multiple of 64 and 256 is the tile's whole width: not split."""
    rng = np.random.default_rng(n)
    xn = rng.standard_normal((12, n)).astype(np.float16)
    x, y = api.from_numpy(xn).sync(), api.zeros((12, n), tile.float16).sync()
    rows_plus_one(y.partition((4, 256)), x, box).sync()
    np.testing.assert_array_equal(y.to_numpy(), xn + np.float16(1))
    plain = _split_views(rows_plus_one, y.partition((4, 256)), x, 4096)   # wider: not split
    assert _split_views(rows_plus_one, y.partition((4, 256)), x, box) == plain + split


def test_reductions_padding_and_1d_loads_through_split_views():
    rng = np.random.default_rng(7)
    xn = rng.standard_normal((9, 960)).astype(np.float32)
    wn = rng.standard_normal(960).astype(np.float32)
    x, w = api.from_numpy(xn).sync(), api.from_numpy(wn).sync()
    z = api.zeros((9, 960)).sync()
    row_max(z.partition((2, 1024)), x, w, 64).sync()
    np.testing.assert_allclose(z.to_numpy(), xn + xn.max(1, keepdims=True) + wn, rtol=1e-6)
    assert _split_views(row_max, z.partition((2, 1024)), x, w, 64) == \
        _split_views(row_max, z.partition((2, 1024)), x, w, 4096) + 2


def test_a_strided_last_axis_is_not_split():
    xn = np.arange(64 * 128, dtype=np.float32).reshape(64, 128)
    x = api.from_numpy(np.ascontiguousarray(xn.T)).sync().permute(1, 0)    # column-major
    assert x.shape == (64, 128) and x.strides[-1] == 64
    y = api.zeros((64, 128)).sync()
    rows_plus_one(y.partition((8, 128)), x, 32).sync()
    np.testing.assert_array_equal(y.to_numpy(), xn + 1)
    assert _split_views(rows_plus_one, y.partition((8, 128)), x, 32) == \
        _split_views(rows_plus_one, y.partition((8, 128)), x, 4096)


def test_box_width_must_be_a_constant_power_of_two():
    x = api.zeros((8, 64)).sync()
    with pytest.raises(tile.TypingError, match="box_width must be None or a constant power of two"):
        rows_plus_one(api.zeros((8, 64)).sync().partition((8, 64)), x, 48).sync()


@pytest.mark.skipif(not tileiras.available(), reason="tileiras is not installed")
def test_split_loads_compile_for_sm_90(monkeypatch):
    monkeypatch.setenv("TILEJIT_CACHE_DIR", "0")
    x = api.zeros((4096, 1024), tile.float16).sync()
    w = api.zeros((1024,), tile.float16).sync()
    z = api.zeros((4096, 1024), tile.float16).sync()
    assert row_max.compile(z.partition((8, 1024)), x, w, 64, arch="sm_90")


@tile.entry
def sliced_rows(y, x, start, BOX: tile.Constant[int]):
    BM, BN = y.shape
    v = x.slice(0, start, x.shape[0])                 # a view made in the kernel
    y.store(v.load((y.block[0], y.block[1]), (BM, BN), padding=ZERO, box_width=BOX) * 2.0)


def test_a_view_sliced_in_the_kernel_splits_where_it_is_made():
    xn = np.arange(20 * 512, dtype=np.float32).reshape(20, 512)
    x = api.from_numpy(xn).sync()
    y = api.zeros((16, 512)).sync()
    sliced_rows(y.partition((4, 256)), x, 4, 64).sync()
    np.testing.assert_array_equal(y.to_numpy(), xn[4:] * 2)
    assert _split_views(sliced_rows, y.partition((4, 256)), x, 4, 64) == \
        _split_views(sliced_rows, y.partition((4, 256)), x, 4, 4096) + 1
