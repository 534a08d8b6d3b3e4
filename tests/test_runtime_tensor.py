"""tile.Tensor on the simulator backend: metadata, views, slices, reshape, reinterpret, copies."""
import numpy as np
import pytest

import tilejit as tile
from tilejit import dtypes
from tilejit.deviceops import transfer as T
from sample_arrays import rand


pytestmark = pytest.mark.usefixtures("simulator_backend")


def dev(a, dtype=None):
    return T.from_numpy(a, dtype).sync()


def test_metadata():
    a = rand((3, 5, 7))
    t = dev(a)
    assert t.shape == (3, 5, 7) and t.ndim == 3 and t.size == 105
    assert t.strides == (35, 7, 1)
    assert t.dtype is tile.float32 and t.itemsize == 4 and t.nbytes == 420
    assert t.is_contiguous and t.offset == 0
    assert t.device_id == 0 and t.device is tile.Device(0)
    assert t.device_pointer % 256 == 0 and t.device_pointer != 0
    assert len(t) == 3
    assert np.array_equal(t.to_numpy(), a)


@pytest.mark.parametrize("dt", [d for d in dtypes.ALL_DTYPES if d is not dtypes.tfloat32],
                         ids=lambda d: d.name)
def test_round_trip_every_dtype(dt):
    src = rand((4, 9), np.float32 if dt.is_fp8 or dt is dtypes.bfloat16 else dt.np_dtype, seed=5)
    a = src.astype(dt.np_dtype)
    t = T.from_numpy(a).sync()
    assert t.dtype is dt
    back = t.to_numpy()
    assert back.dtype == dt.np_dtype
    assert np.array_equal(back.view(np.uint8), a.view(np.uint8))


def test_tfloat32_is_stored_as_float32():
    a = rand((8,))
    t = T.from_numpy(a, tile.tfloat32).sync()
    assert t.dtype is tile.tfloat32 and t.itemsize == 4
    assert np.array_equal(t.to_numpy(), a)


def test_slices_are_zero_copy_and_offsets_accumulate():
    a = rand((6, 10), seed=1)
    t = dev(a)
    s = t[1:3, 2:6]
    assert s.shape == (2, 4) and s.strides == (10, 1)
    assert s.offset == 12 and s.device_pointer == t.device_pointer + 48
    assert not s.is_contiguous
    assert np.array_equal(s.to_numpy(), a[1:3, 2:6])
    inner = t.reshape(60)[10:40][5:9]
    assert inner.offset == 15 and np.array_equal(inner.to_numpy(), a.reshape(-1)[15:19])
    # zero-copy: writing through a view is visible in the parent
    T.copy_from_host(s, np.full((2, 4), 42.0, np.float32)).sync()
    ref = a.copy()
    ref[1:3, 2:6] = 42
    assert np.array_equal(t.to_numpy(), ref)


def test_integer_indexing_drops_dims_and_negative_indices():
    a = rand((4, 5, 6), seed=2)
    t = dev(a)
    assert np.array_equal(t[2].to_numpy(), a[2])
    assert np.array_equal(t[-1, 1:4].to_numpy(), a[-1, 1:4])
    assert np.array_equal(t[:, -2].to_numpy(), a[:, -2])
    assert np.array_equal(t[..., 3].to_numpy(), a[..., 3])
    assert np.array_equal(t[1, ..., 2:].to_numpy(), a[1, ..., 2:])
    e = t[1, 2, 3]
    assert e.shape == () and e.to_numpy() == a[1, 2, 3]
    assert t[1:1].size == 0 and t[1:1].to_numpy().shape == (0, 5, 6)
    assert np.array_equal(t[2:100].to_numpy(), a[2:100])     # NumPy-style clipping
    s = t[:, ::2]                                               # positive steps are strided views
    assert s.strides == (30, 12, 1) and np.array_equal(s.to_numpy(), a[:, ::2])


def test_bad_indices():
    t = dev(rand((4, 5)))
    with pytest.raises(IndexError, match="out of bounds for axis 1"):
        t[0, 5]
    with pytest.raises(IndexError, match="too many indices"):
        t[0, 0, 0]
    with pytest.raises(tile.TensorError, match="step must be >= 1"):
        t[::-1]
    with pytest.raises(tile.TensorError, match="newaxis"):
        t[None]
    with pytest.raises(tile.TensorError, match="fancy indexing"):
        t[[0, 1]]
    with pytest.raises(IndexError, match="single ellipsis"):
        t[..., ...]


def test_reshape_and_view():
    a = rand((4, 6), seed=3)
    t = dev(a)
    r = t.reshape(2, -1, 3)
    assert r.shape == (2, 4, 3) and r.strides == (12, 3, 1)
    assert r.device_pointer == t.device_pointer
    assert np.array_equal(r.to_numpy(), a.reshape(2, 4, 3))
    assert t.view((24,)).shape == (24,)
    assert t[1:3].reshape(12).offset == 6
    with pytest.raises(tile.TensorError, match="cannot reshape a tensor of 24 elements"):
        t.reshape(5, 5)
    with pytest.raises(tile.TensorError, match="contiguous"):
        t[:, 1:3].reshape(8)
    with pytest.raises(tile.TensorError, match="only specify one unknown"):
        t.reshape(-1, -1)


def test_permute_transpose_and_T_are_zero_copy_views():
    a = rand((2, 3, 4), seed=5)
    t = dev(a)
    p = t.permute(2, 0, 1)
    assert p.shape == (4, 2, 3) and p.strides == (1, 12, 4)
    assert p.device_pointer == t.device_pointer
    assert np.array_equal(p.to_numpy(), a.transpose(2, 0, 1))
    assert np.array_equal(t.permute((1, -1, 0)).to_numpy(), a.transpose(1, 2, 0))
    assert np.array_equal(t.transpose(0, 2).to_numpy(), a.swapaxes(0, 2))
    assert np.array_equal(t.T.to_numpy(), a.T)
    assert not p.is_contiguous
    with pytest.raises(tile.TensorError, match=r"\(0, 0, 1\) is not a permutation"):
        t.permute(0, 0, 1)


def test_reinterpret():
    a = rand((8,), np.uint32, seed=4)
    t = dev(a)
    f = t.reinterpret(tile.float32, (2, 4))
    assert f.dtype is tile.float32 and f.shape == (2, 4)
    assert np.array_equal(f.to_numpy(), a.view(np.float32).reshape(2, 4))
    h = t.reinterpret(tile.uint16)
    assert h.shape == (16,) and np.array_equal(h.to_numpy(), a.view(np.uint16))
    assert t[2:].reinterpret(tile.int64).offset == 1
    with pytest.raises(tile.TensorError, match="needs 12 bytes but the tensor has 32"):
        t.reinterpret(tile.float32, (3,))
    with pytest.raises(tile.TensorError, match="not aligned to 8 bytes"):
        t[1:7].reinterpret(tile.int64, (3,))
    with pytest.raises(tile.TensorError, match="contiguous"):
        dev(rand((4, 4)))[:, :2].reinterpret(tile.int32)


def test_dup_and_memcpy_handle_non_contiguous_views():
    a = rand((5, 8), seed=6)
    t = dev(a)
    d = T.dup(t[1:4, 2:7]).sync()
    assert d.is_contiguous and d.shape == (3, 5)
    assert np.array_equal(d.to_numpy(), a[1:4, 2:7])
    dst = dev(np.zeros((5, 8), np.float32))
    out = T.memcpy(dst[0:3, 3:8], t[2:5, 0:5]).sync()
    assert out.shape == (3, 5)
    ref = np.zeros((5, 8), np.float32)
    ref[0:3, 3:8] = a[2:5, 0:5]
    assert np.array_equal(dst.to_numpy(), ref)
    flat = dev(np.zeros(40, np.float32))
    T.memcpy(flat, t).sync()                       # different shapes, both contiguous
    assert np.array_equal(flat.to_numpy(), a.reshape(-1))
    with pytest.raises(tile.TensorError, match="equal element counts"):
        T.memcpy(flat, t[0:2]).sync()
    with pytest.raises(tile.TensorError, match="different dtypes"):
        T.memcpy(dev(np.zeros(40, np.int32)), t.reshape(40))
    with pytest.raises(tile.TensorError, match="contiguous"):
        T.memcpy(dev(np.zeros((5, 3), np.float32)), t[0:3, 0:5]).sync()


def test_empty_and_zero_sized():
    e = T.empty((0, 3), tile.int32).sync()
    assert e.shape == (0, 3) and e.size == 0 and e.nbytes == 0
    assert e.to_numpy().shape == (0, 3)
    assert "[]" in repr(e)
    u = T.empty((3, 2), tile.float16).sync()
    assert u.dtype is tile.float16 and u.to_numpy().shape == (3, 2)
    with pytest.raises(tile.TensorError, match="negative"):
        T.empty((-1,), tile.float32)


def test_from_numpy_snapshots_the_array():
    a = rand((4,))
    op = T.from_numpy(a)
    expected = a.copy()
    a[:] = 0                                      # modified before the op runs
    assert np.array_equal(op.sync().to_numpy(), expected)
    nc = rand((6, 6))[:, ::2]                     # non-contiguous host arrays are fine
    assert np.array_equal(T.from_numpy(nc).sync().to_numpy(), nc)


def test_repr_is_readable_and_cheap():
    t = dev(np.arange(100, dtype=np.int32).reshape(10, 10))
    r = repr(t)
    assert "shape=(10, 10)" in r and "int32" in r and "sim:0" in r
    assert "[[ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9],\n" in r      # as NumPy prints it
    s = repr(t[2:4, 1:3])
    assert "strides=(10, 1)" in s and "[[21, 22],\n" in s
    p = t.into_partition((2, 2))
    assert "moved into a partition" in repr(t)
    p.unpartition()
    assert "[[ 0,  1" in repr(t)
    assert "[ True, False]" in repr(dev(np.array([True, False])))


def test_implicit_numpy_conversion_is_refused():
    t = dev(rand((3,)))
    with pytest.raises(TypeError, match="to_numpy"):
        np.asarray(t)


def test_tensor_cannot_be_constructed_directly():
    with pytest.raises(TypeError, match="tile.api"):
        tile.Tensor()


def test_storage_freed_when_last_view_dies():
    from tilejit.simulator.memory import memory as sim
    t = dev(rand((1000,)))
    v = t[10:20]
    ptr = t.storage.ptr
    del t
    assert sim.is_live(ptr)                       # the view keeps the storage alive
    assert v.to_numpy().shape == (10,)
    del v
    import gc
    gc.collect()
    assert not sim.is_live(ptr)
