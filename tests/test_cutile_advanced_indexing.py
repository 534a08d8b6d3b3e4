"""``ct.load_advanced_indexing``/``ct.store_advanced_indexing`` with ``ct.Slice``
(tilejit/cutile/_indexing.py): one sparse axis (a 1-D index tile), dense ``ct.Slice`` ranges on
the others, out-of-bounds elements padded on loads and skipped on stores, and cuTile's errors."""
import numpy as np
import pytest

import tilejit as tile
import tilejit.cutile as ct

pytestmark = pytest.mark.usefixtures("simulator_backend")


def _launch(kernel, *args):
    ct.launch(tile.Device(0).new_stream(), (1,), kernel, args)
    tile.Device(0).synchronize()


@ct.kernel
def rows_then_columns(x, y, start, ROWS: ct.Constant[int], COLS: ct.Constant[int]):
    rows = ct.arange(ROWS, dtype=ct.int32) * 3          # 0, 3, 6, 9: 9 is past an 8-row x
    t = ct.load_advanced_indexing(x, (rows, ct.Slice(start, COLS)),
                                  padding_mode=ct.PaddingMode.NAN)
    ct.store(y, (0, 0), t)


def test_sparse_rows_and_a_dense_column_range_with_padding():
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    y = np.zeros((4, 4), np.float32)
    _launch(rows_then_columns, x, tile.atomic(y), 6, 4, 4)
    want = np.full((4, 4), np.nan, np.float32)
    want[:3, :2] = x[[0, 3, 6], 6:8]
    np.testing.assert_array_equal(y, want)


@ct.kernel
def columns_of_a_3d_array(x, y, j):
    cols = ct.arange(2, dtype=ct.int32) * 2 + 1         # 1, 3
    t = ct.load_advanced_indexing(x, (ct.Slice(j, 2), ct.Slice(0, 4), cols))
    ct.store(y, (0, 0, 0), t)


def test_the_sparse_axis_can_be_any_axis():
    x = np.arange(4 * 4 * 4, dtype=np.int32).reshape(4, 4, 4)
    y = np.zeros((2, 4, 2), np.int32)
    _launch(columns_of_a_3d_array, x, tile.atomic(y), 1)
    np.testing.assert_array_equal(y, x[1:3, :, [1, 3]])


@ct.kernel
def scatter_rows(y, start):
    rows = ct.arange(4, dtype=ct.int32) * 2                  # 0, 2, 4, 6
    t = ct.full((4, 4), 7, dtype=ct.int16)                   # converted to y's int32
    ct.store_advanced_indexing(y, (rows, ct.Slice(start, 4)), t)


def test_store_skips_out_of_bounds_columns():
    y = np.zeros((8, 4), np.int32)
    _launch(scatter_rows, tile.atomic(y), 2)
    want = np.zeros((8, 4), np.int32)
    want[::2, 2:] = 7
    np.testing.assert_array_equal(y, want)


def _refused(body, match, array_shape=(8, 8)):
    kernel = ct.kernel(body)
    with pytest.raises(ct.TileTypeError, match=match):
        _launch(kernel, tile.atomic(np.zeros(array_shape, np.int32)))


def _no_sparse(x):
    ct.load_advanced_indexing(x, (ct.Slice(0, 4), ct.Slice(0, 4)))


def _two_sparse(x):
    i = ct.arange(4, dtype=ct.int32)
    ct.store_advanced_indexing(x, (i, i), ct.full((4, 4), 1, dtype=ct.int32))


def _wrong_rank(x):
    ct.load_advanced_indexing(x, (ct.arange(4, dtype=ct.int32), ct.Slice(0, 4), ct.Slice(0, 4)))


def _odd_length(x):
    ct.load_advanced_indexing(x, (ct.arange(4, dtype=ct.int32), ct.Slice(0, 3)))


def _two_d_sparse(x):
    ct.load_advanced_indexing(x, (ct.zeros((4, 4), dtype=ct.int32), ct.Slice(0, 4)))


def _float_sparse(x):
    ct.load_advanced_indexing(x, (ct.zeros((4,), dtype=ct.float32), ct.Slice(0, 4)))


def _wrong_tile_shape(x):
    ct.store_advanced_indexing(x, (ct.arange(4, dtype=ct.int32), ct.Slice(0, 4)),
                               ct.full((4, 2), 1, dtype=ct.int32))


def _one_d_array(x):
    ct.load_advanced_indexing(x, (ct.arange(4, dtype=ct.int32),))


@pytest.mark.parametrize("body, match, array_shape", [
    (_no_sparse, r"exactly one index must be a 1D integer Tile \(the sparse dim\); none found",
     (8, 8)),
    (_two_sparse, r"exactly one index must be a 1D integer Tile .*found 2 at dims \[0, 1\]",
     (8, 8)),
    (_wrong_rank, r"index length 3 does not match array rank 2", (8, 8)),
    (_odd_length, r"length 3 must be a power of two", (8, 8)),
    (_two_d_sparse, r"Sparse index at dim 0 must be a 1D integer tile, got 2D", (8, 8)),
    (_float_sparse, r"Sparse index at dim 0 must be an integer tile, got dtype float32", (8, 8)),
    (_wrong_tile_shape, r"Tile shape \(4, 2\) does not match the shape implied by indices "
                        r"\(4, 4\)", (8, 8)),
    (_one_d_array, r"requires a 2D or higher-rank array; use ct.gather\(\)", (8,)),
])
def test_cutiles_errors(body, match, array_shape):
    _refused(body, match, array_shape)


def test_an_error_names_the_users_line():
    kernel = ct.kernel(_no_sparse)
    with pytest.raises(ct.TileTypeError) as ei:
        _launch(kernel, tile.atomic(np.zeros((8, 8), np.int32)))
    assert f"{__file__}:{_no_sparse.__code__.co_firstlineno + 1}" in str(ei.value)
