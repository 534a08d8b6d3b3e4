"""Element accesses check each index against ``0 <= i < shape`` (one unsigned compare in the
generated code): negative and too-large indices read ``other`` in ``gather`` and write nothing
in ``scatter`` and the atomics."""
import numpy as np
import pytest

import tilejit as tile

pytestmark = pytest.mark.usefixtures("simulator_backend")


@tile.entry
def element_accesses(x, g, s, acc, idx_src):
    i = idx_src.load((0,), (8,))
    tile.store(g, (0,), tile.gather(x, i, other=-1.0))
    tile.scatter(s, i, tile.full((8,), 5.0, tile.float32))
    tile.atomic_add(acc, i, 1)


def test_out_of_bounds_indices_are_skipped_both_ways():
    flat = np.arange(8, dtype=np.float32) * 10
    idx = np.array([0, -1, 3, 8, 7, -8, 2, 1 << 30], np.int32)
    g = np.zeros(8, np.float32)
    s = np.zeros(8, np.float32)
    acc = np.zeros(8, np.int32)
    element_accesses(flat, tile.atomic(g), tile.atomic(s), tile.atomic(acc), idx).grid(1).sync()
    inside = (idx >= 0) & (idx < 8)
    expect = np.where(inside, flat[np.clip(idx, 0, 7)], -1.0)
    np.testing.assert_array_equal(g, expect)
    np.testing.assert_array_equal(s, np.where(np.isin(np.arange(8), idx[inside]), 5.0, 0.0))
    np.testing.assert_array_equal(acc, np.bincount(idx[inside], minlength=8))


@tile.entry
def gather_2d(x, g, idx_src):
    i = idx_src.load((0,), (8,))
    tile.store(g, (0, 0), tile.gather(x, (i[:, None], i[None, :]), other=-2.0))


def test_two_dimensional_gather_checks_every_axis():
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    idx = np.array([0, -1, 3, 8, 7, -8, 2, 1 << 30], np.int32)
    g = np.zeros((8, 8), np.float32)
    gather_2d(x, tile.atomic(g), idx).grid(1).sync()
    inside = (idx >= 0) & (idx < 8)
    ok = inside[:, None] & inside[None, :]
    c = np.clip(idx, 0, 7)
    np.testing.assert_array_equal(g, np.where(ok, x[c[:, None], c[None, :]], -2.0))


def test_the_bounds_check_is_one_unsigned_compare():
    ir = gather_2d.inspect_tileir(np.zeros((8, 8), np.float32),
                                  tile.atomic(np.zeros((8, 8), np.float32)),
                                  np.zeros(8, np.int32))
    assert ir.count("cmpi less_than") == 2 and ir.count("unsigned") >= 2, ir
    assert "greater_than_or_equal" not in ir, ir
