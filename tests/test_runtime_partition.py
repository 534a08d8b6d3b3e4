"""Partitions and the ownership checks that replace Rust's borrow checker."""
import gc

import numpy as np
import pytest

import tilejit as tile
from tilejit.runtime import argspec
from tilejit.deviceops import transfer as T
from sample_arrays import rand_tensor


pytestmark = pytest.mark.usefixtures("simulator_backend")


def test_partition_grid_and_metadata():
    t = rand_tensor((30, 17))
    p = t.partition((8, 4))
    assert p.tile_shape == (8, 4) and p.shape == (8, 4)
    assert p.grid == (4, 5, 1)
    assert p.tensor is t and p.tensor_shape == (30, 17) and p.dtype is tile.float32
    assert not p.is_owned and not t.is_moved
    assert rand_tensor((7,)).partition(2).grid == (4, 1, 1)
    assert rand_tensor((5, 6, 7)).partition((2, 4, 8)).grid == (3, 2, 1)
    assert "grid=(4, 5, 1)" in repr(p)


@pytest.mark.parametrize("tile_shape,match", [
    ((3, 4), "extent 3 on axis 0 is not a power of two"),
    ((4, 0), "extent 0 on axis 1 is not a power of two"),
    ((4,), "rank 1 but the tensor has rank 2"),
    ((2, 2, 2, 2), "rank 1 to 3"),
    ((4, 4.0), "must contain ints"),
])
def test_bad_tile_shapes(tile_shape, match):
    with pytest.raises(tile.TensorError, match=match):
        rand_tensor((8, 8)).partition(tile_shape)


def test_checked_tile_shapes_are_remembered_without_weakening_the_checks():
    # validate_tile_shape caches (shape, rank) of plain-int tuples; every check must still apply
    rand_tensor((8, 8)).partition((4, 4))           # now cached for rank 2
    with pytest.raises(tile.TensorError, match="rank 2 but the tensor has rank 1"):
        rand_tensor((8,)).partition((4, 4))
    with pytest.raises(tile.TensorError, match="must contain ints"):
        rand_tensor((8, 8)).partition((True, 4.0))
    with pytest.raises(tile.TensorError, match="must contain ints"):
        rand_tensor((8,)).partition((True,))              # True == 1 hashes like (1,)
    rand_tensor((8,)).partition((1,))
    with pytest.raises(tile.TensorError, match="must contain ints"):
        rand_tensor((8,)).partition((True,))
    p = rand_tensor((8, 8)).partition((np.int64(4), np.int32(4)))
    assert p.tile_shape == (4, 4) and all(type(n) is int for n in p.tile_shape)
    with pytest.raises(tile.TensorError, match="not a power of two"):
        rand_tensor((8, 8)).partition((4, 3))


def test_rank4_tensor_cannot_be_partitioned():
    with pytest.raises(tile.TensorError, match="rank 1 to 3"):
        rand_tensor((2, 2, 2, 2)).partition((1, 1, 1, 1))


def test_power_of_two_suggestion():
    with pytest.raises(tile.TensorError, match=r"e\.g\. \(4, 8\)"):
        rand_tensor((8, 8)).partition((3, 5))


def test_into_partition_moves_until_unpartition():
    a = np.random.default_rng(1).standard_normal((8, 8)).astype(np.float32)
    t = T.from_numpy(a).sync()
    p = t.into_partition((4, 4))
    assert p.is_owned and t.is_moved
    for use in (lambda: t.to_numpy(), lambda: t[0], lambda: t.reshape(64),
                lambda: t.partition((4, 4)), lambda: t.device_pointer,
                lambda: argspec.classify(t), lambda: t.__dlpack__()):
        with pytest.raises(tile.TensorError, match="moved into a partition"):
            use()
    assert t.shape == (8, 8)                      # metadata stays readable
    back = p.unpartition()
    assert back is t and not t.is_moved
    assert np.array_equal(t.to_numpy(), a)
    with pytest.raises(tile.TensorError, match="unpartition\\(\\) was already called"):
        p.unpartition()
    with pytest.raises(tile.TensorError, match="unpartition\\(\\) was already called"):
        argspec.classify(p)


def test_other_views_do_not_block_a_partition():
    # holding a Python reference to another view is not a use (issue 10)
    t = rand_tensor((16,))
    v = t[0:8]
    w = t.reshape(4, 4)
    p = t.partition((8,))
    assert p.grid == (2, 1, 1) and v.shape == (8,) and w.shape == (4, 4)


def test_disjoint_slices_partition_together_overlapping_ones_do_not():
    t = rand_tensor((16,))
    a = t[0:8].partition((4,))
    b = t[8:16].partition((4,))                   # disjoint bytes: both leases coexist
    assert a.grid == b.grid == (2, 1, 1)
    with pytest.raises(tile.TensorError, match="already partitioned.*tile shape \\(4,\\)"):
        t[4:12].partition((8,))                   # overlaps both
    a._release()
    with pytest.raises(tile.TensorError, match="already partitioned"):
        t[4:12].partition((8,))                   # still overlaps b
    b.unpartition()
    assert t[4:12].partition((8,)).grid == (1, 1, 1)


def test_partitioning_the_only_view_is_allowed():
    t = rand_tensor((16,))
    v = t[8:16]
    p = v.partition((4,))
    assert p.tensor is v and p.grid == (2, 1, 1)


def test_second_live_partition_is_refused_until_released():
    t = rand_tensor((16,))
    p = t.partition((4,))
    with pytest.raises(tile.TensorError, match="already partitioned.*tile shape \\(4,\\)"):
        t.partition((8,))
    p._release()                                  # what the dispatcher does after the launch
    q = t.partition((8,))
    # passing the released partition to a launch takes the lease again -> conflict with q
    # (the launch takes it: classification alone does not)
    assert argspec.classify(p).kind == "partition" and not p._leased
    with pytest.raises(tile.TensorError, match="already partitioned"):
        argspec.acquire_partitions([p])
    del q
    gc.collect()
    argspec.acquire_partitions([p])
    assert p._leased


def test_dropped_partition_releases_its_lease():
    t = rand_tensor((16,))
    t.partition((4,))                             # discarded immediately
    gc.collect()
    assert t.partition((16,)).grid == (1, 1, 1)


def test_unpartition_releases_the_lease():
    t = rand_tensor((16,))
    p = t.partition((4,))
    assert p.unpartition() is t
    assert t.partition((2,)).grid == (8, 1, 1)


def test_shared_tensors_are_read_only_until_one_handle_remains():
    t = rand_tensor((16,))
    s1 = tile.shared(t)
    with pytest.raises(tile.TensorError, match="shared tensor.*try_partition"):
        t.partition((4,))
    with pytest.raises(tile.TensorError, match="shared tensor"):
        t.into_partition((4,))
    s2 = tile.shared(t)
    with pytest.raises(tile.TensorError, match="held by 2 shared handles"):
        t.try_partition((4,))
    del s2
    gc.collect()
    p = t.try_partition((4,))
    assert p.is_owned and t.is_moved
    assert s1 is not None


def test_broadcast_tensors_cannot_be_partitioned():
    from tilejit.runtime.tensor import Tensor
    t = rand_tensor((4,))
    b = Tensor._new(t.storage, (3, 4), (0, 1), 0, t.dtype)
    with pytest.raises(tile.TensorError, match="broadcast"):
        b.partition((1, 4))
    rand_tensor((3, 4)).partition((1, 4))          # the tile shape is now cached
    with pytest.raises(tile.TensorError, match="broadcast"):
        b.partition((1, 4))


def test_partition_cannot_be_constructed_directly():
    with pytest.raises(TypeError, match="t.partition"):
        tile.Partition()


def test_pow2_helpers():
    from tilejit import layout
    assert [layout.pow2_ceil(n) for n in (-3, 0, 1, 2, 3, 5, 64, 65)] == [1, 1, 1, 2, 4, 8, 64, 128]
    assert [layout.largest_pow2_divisor(x) for x in (0, 1, 12, 48, 1 << 20)] == [16, 1, 4, 16, 16]
