"""Tensors on a real GPU: every dtype, slices, odd sizes, strided copies, repr."""
import numpy as np
import pytest

import tilejit as tile
from tilejit import dtypes
from tilejit.deviceops import transfer as T
from sample_arrays import rand

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dt", [d for d in dtypes.ALL_DTYPES if d is not dtypes.tfloat32],
                         ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [(1,), (3,), (1023,), (4097,), (7, 13), (2, 3, 5)])
def test_round_trip(dt, shape):
    a = rand(shape, dt.np_dtype, seed=len(dt.name) * 31 + sum(shape))
    t = T.from_numpy(a).sync()
    assert t.dtype is dt and t.shape == shape and t.device_pointer % 256 == 0
    back = t.to_numpy()
    assert back.dtype == a.dtype and np.array_equal(back.view(np.uint8), a.view(np.uint8))


@pytest.mark.parametrize("index", [
    (slice(1, 3), slice(2, 6)),
    (slice(None), slice(1, 2)),
    (slice(5, 37), slice(3, 40)),
    (4,),
    (slice(None), 7),
    (slice(None, None, 2), slice(1, None, 3)),
])
def test_slices_read_and_write(index):
    a = rand((41, 45), seed=3)
    t = T.from_numpy(a).sync()
    v = t[index]
    assert np.array_equal(v.to_numpy(), a[index])
    new = rand(a[index].shape, seed=4)
    T.copy_from_host(v, new).sync()                 # write into a strided view
    ref = a.copy()
    ref[index] = new
    assert np.array_equal(t.to_numpy(), ref)


def test_strided_device_copies_3d():
    a = rand((6, 7, 9), seed=5)
    t = T.from_numpy(a).sync()
    for idx in [(slice(1, 5), slice(2, 6), slice(0, 9)), (slice(None), slice(None), slice(3, 4)),
                (2, slice(1, 7, 2), slice(None, None, 3)), (slice(None, None, 2),)]:
        d = T.dup(t[idx]).sync()
        assert d.is_contiguous and np.array_equal(d.to_numpy(), a[idx])
    dst = T.from_numpy(np.zeros((6, 7, 9), np.float32)).sync()
    T.memcpy(dst[1:5, 0:4, 2:8], t[0:4, 3:7, 1:7]).sync()
    ref = np.zeros((6, 7, 9), np.float32)
    ref[1:5, 0:4, 2:8] = a[0:4, 3:7, 1:7]
    assert np.array_equal(dst.to_numpy(), ref)


def test_reshape_reinterpret_on_gpu():
    a = rand((8, 16), np.int32, seed=6)
    t = T.from_numpy(a).sync()
    assert np.array_equal(t.reshape(4, 32).to_numpy(), a.reshape(4, 32))
    f = t.reinterpret(tile.float32, (128,)).to_numpy()
    assert f.dtype == np.float32 and np.array_equal(f.view(np.int32), a.reshape(128))
    assert np.array_equal(t[2:4].reshape(32).to_numpy(), a[2:4].reshape(32))


def test_repr_reads_values():
    t = T.from_numpy(np.arange(12, dtype=np.int64).reshape(3, 4)).sync()
    r = repr(t)
    assert "cuda:0" in r and "[[ 0,  1,  2,  3],\n" in r
    assert "[[ 5,  6],\n" in repr(t[1:3, 1:3])
    big = T.from_numpy(np.arange(1 << 20, dtype=np.int64).reshape(1024, 1024)).sync()
    assert "[[      0,       1,       2, ...,    1021,    1022,    1023]," in repr(big)
    assert "1048573, 1048574, 1048575]])" in repr(big)


def test_large_tensor_index_bits_and_values():
    from tilejit.runtime.argspec import classify
    n = (1 << 20) + 3
    t = T.from_numpy(np.arange(n, dtype=np.float32)).sync()
    info = classify(t)
    assert info.key[3][0] == 32 and info.params[0] == t.device_pointer
    assert t.to_numpy()[-1] == n - 1
