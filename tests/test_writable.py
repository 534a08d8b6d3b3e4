"""``tile.writable(x)`` spells a writable argument without reading as "only for atomics"; it is
``tile.atomic`` (one class, so every launch path takes both), and the read-only hints name it."""
import numpy as np
import pytest

import tilejit as tile
from tilejit import api

pytestmark = pytest.mark.usefixtures("simulator_backend")


@tile.entry
def store_and_add(w, x):
    tile.store(w, (1,), x.load((0,), (8,)))
    tile.atomic_add(w, tile.arange(8), 1.0)


@tile.entry
def store_into_read_only(w, x):
    tile.store(w, (0,), x.load((0,), (8,)))


def test_writable_is_atomic_under_a_clearer_name():
    assert tile.writable is tile.atomic and "writable" in dir(tile)
    x = np.arange(8, dtype=np.float32)
    for wrap in (tile.writable, tile.atomic):
        t = api.zeros((16,)).sync()
        store_and_add(wrap(t), x).grid((1, 1, 1)).sync()
        np.testing.assert_array_equal(t.to_numpy(), np.r_[np.ones(8), x].astype(np.float32))
        host = np.zeros(16, np.float32)
        store_and_add(wrap(host), x).grid((1, 1, 1)).sync()       # copied back
        np.testing.assert_array_equal(host, np.r_[np.ones(8), x].astype(np.float32))


def test_the_read_only_hint_names_writable_and_the_numpy_partition():
    with pytest.raises(tile.TypingError) as info:
        store_into_read_only(np.zeros(8, np.float32), np.ones(8, np.float32)).grid((1,)).sync()
    msg = str(info.value)
    assert "tile.writable(out)" in msg and "tile.atomic(out)" in msg
    assert "tile.partition(out, tile_shape)" in msg
