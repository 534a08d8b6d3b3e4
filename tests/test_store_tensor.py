"""``tile.store(w, index, t)`` into a writable tensor (``tile.atomic(w)`` on the host): the tile
space of ``t``'s shape, one element for a scalar or 0-d tile (cuTile's ``store``); and
``order="C"``/``"F"`` on loads and stores (NumPy's and cuTile's spellings)."""
import numpy as np
import pytest

import tilejit as tile
from tilejit.typing import type_kernel

pytestmark = pytest.mark.usefixtures("simulator_backend")
T2 = ("tensor", "float32", 2, None, False)
W2 = ("tensor", "float32", 2, None, True)
W3 = ("tensor", "float32", 3, None, True)


@tile.entry
def transpose_into(x, y, s, TM: tile.Constant[int]):
    bx = tile.bid(0)
    t = x.load((bx, 0), (TM, 8), order="F")        # tile (bx, 0) of x.T
    tile.store(y, (bx, 0), t, order="F")            # the same tile written back transposed
    tile.store(y, (bx, 1), t * 0.0 - 1.0, order="C")
    tile.store(s, (bx, 0), tile.sum(t))             # a 0-d tile: one element
    tile.store(s, (bx, 1), 7)                       # a weak scalar: one element, s's dtype


def test_store_into_a_writable_tensor_and_orders():
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    y = np.zeros((8, 16), np.float32)
    s = np.zeros((2, 2), np.float32)
    transpose_into(x, tile.atomic(y), tile.atomic(s), 4).grid((2, 1, 1)).sync()
    np.testing.assert_array_equal(y[:, :8], x)       # x.T's tiles stored with order F: x again
    expect = np.zeros((8, 8), np.float32)
    expect[:, :] = -1.0
    np.testing.assert_array_equal(y[:, 8:], expect)
    np.testing.assert_array_equal(s, [[x.T[:4].sum(), 7], [x.T[4:].sum(), 7]])


def test_store_into_a_writable_tensor_compiles_for_sm_90():
    x = np.zeros((8, 8), np.float32)
    cubin = transpose_into.compile(x, tile.atomic(np.zeros((8, 16), np.float32)),
                                   tile.atomic(np.zeros((2, 2), np.float32)), 4, arch="sm_90")
    assert cubin[:4] == b"\x7fELF"


def store_read_only(x, y):
    tile.store(y, (0, 0), x.load((0, 0), (4, 4)))


def store_wrong_rank(x, w):
    tile.store(w, (0, 0, 0), x.load((0, 0), (4, 4)))


def store_wrong_dtype(x, w):
    tile.store(w, (0, 0), x.load((0, 0), (4, 4)).astype(tile.float16))


def load_bad_order(x, w):
    tile.store(w, (0, 0), x.load((0, 0), (4, 4), order="K"))


@pytest.mark.parametrize("fn, keys, message", [
    (store_read_only, [T2, T2], "cannot store to a read-only"),
    (store_wrong_rank, [T2, W3], "stored tile has rank 2 but the tensor has rank 3"),
    (store_wrong_dtype, [T2, W2], "has dtype float16 but the destination holds float32"),
    (load_bad_order, [T2, W2], "order must be 'C', 'F' or a tuple of axes, got 'K'"),
])
def test_store_and_order_errors(fn, keys, message):
    with pytest.raises(tile.TypingError, match=message):
        type_kernel(fn, keys)


def store_method_on_writable(x, y):
    y.store((0, 0), x.load((0, 0), (4, 4)))


def test_store_method_on_a_writable_tensor_names_the_spellings_that_work():
    with pytest.raises(tile.TypingError) as e:
        type_kernel(store_method_on_writable, [T2, W2])
    msg = str(e.value)
    assert "read-only" not in msg
    assert "tile.store(t, index, tile)" in msg and "t.partition(tile_shape).store(index, tile)" in msg
