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


@tile.entry
def unchecked_copy(out, x, mask_src, N: tile.Constant[int], CHECK: tile.Constant[bool]):
    i = tile.arange(N) + tile.bid(0) * N
    m = mask_src.load((tile.bid(0),), (N,)) != 0
    v = tile.gather(x, i, mask=m, other=-1.0, check_bounds=CHECK, latency=3)
    tile.scatter(out, i, v * 2.0, mask=m, check_bounds=CHECK)


def test_check_bounds_false_drops_the_bounds_mask():
    """cuTile's ``check_bounds=False``: the kernel promises every index is in bounds, so the
    accesses carry no bounds compare (only the user's mask) and the load its latency hint."""
    x = np.arange(64, dtype=np.float32)
    m = np.ones(64, np.int8)
    m[5] = 0
    out = np.zeros(64, np.float32)
    unchecked_copy(tile.atomic(out), x, m, 16, False).grid(4).sync()
    np.testing.assert_array_equal(out, np.where(m != 0, 2 * x, 0.0))
    unchecked = unchecked_copy.inspect_tileir(tile.atomic(out), x, m, 16, False)
    checked = unchecked_copy.inspect_tileir(tile.atomic(out), x, m, 16, True)
    assert unchecked.count("cmpi") == checked.count("cmpi") - 2     # one bounds compare each
    assert "latency = 3" in unchecked and "assert" not in unchecked


def test_a_broken_check_bounds_promise_is_an_error_on_the_simulator():
    x = np.arange(64, dtype=np.float32)
    m = np.ones(80, np.int8)
    out = np.zeros(64, np.float32)
    from tilejit.simulator import DeviceAssertionError
    with pytest.raises(DeviceAssertionError, match="check_bounds=False promised"):
        unchecked_copy(tile.atomic(out), x, m, 16, False).grid(5).sync()
    # masked-off indices past the end are no broken promise
    m[64:] = 0
    unchecked_copy(tile.atomic(out), x, m, 16, False).grid(5).sync()
    np.testing.assert_array_equal(out, 2 * x)


@tile.entry
def unchecked_scatter(out, x, N: tile.Constant[int]):
    i = tile.arange(N) + tile.bid(0) * N
    tile.scatter(out, i, tile.gather(x, i, check_bounds=False) + 1.0, check_bounds=False)


def test_check_bounds_false_without_a_mask_has_no_mask():
    x = np.arange(32, dtype=np.float32)
    out = np.zeros(32, np.float32)
    unchecked_scatter(tile.atomic(out), x, 16).grid(2).sync()
    np.testing.assert_array_equal(out, x + 1)
    ir = unchecked_scatter.inspect_tileir(tile.atomic(out), x, 16)
    assert "cmpi" not in ir and "xi1>" not in ir


def test_check_bounds_must_be_a_constant():
    @tile.entry
    def k(out, x, flag):
        tile.scatter(out, tile.arange(4), tile.gather(x, tile.arange(4), check_bounds=flag))

    with pytest.raises(tile.TypingError, match="check_bounds must be a compile-time constant"):
        k(tile.atomic(np.zeros(4, np.float32)), np.ones(4, np.float32), True).grid(1).sync()


@tile.entry
def bool_gather(out, x, OTHER: tile.Constant[int]):
    tile.store(out, (0,), tile.gather(x, tile.arange(8), other=OTHER))


@pytest.mark.parametrize("other", [0, 1])
def test_a_bool_gather_pads_with_the_default_zero_or_one(other):
    """cuTile's ``ct.gather(bool_array, ...)`` pads with 0 by default: False (it was refused as
    an int padding for a bool array)."""
    x = np.array([True, False, False, True], np.bool_)
    out = np.zeros(8, np.bool_)
    bool_gather(tile.atomic(out), x, other).grid(1).sync()
    np.testing.assert_array_equal(out, list(x) + [bool(other)] * 4)
