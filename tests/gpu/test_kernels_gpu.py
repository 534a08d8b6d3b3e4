"""Kernels on the GPU with tilejit, PyTorch and CuPy tensors: every dtype, odd sizes,
non-contiguous slices, zero-copy interop, launch errors."""
import numpy as np
import pytest

import tilejit as tile
from tilejit import api

pytestmark = pytest.mark.gpu


@tile.entry
def add(z, x, y):
    z.store(tile.load_tile_like(x, z) + tile.load_tile_like(y, z))


@tile.entry
def axpy2d(z, x, alpha):
    z.store(tile.load_tile_like(x, z) * alpha + tile.load_tile_like(z, z))


DTYPES = [np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8]


@pytest.mark.parametrize("dtype", DTYPES + ["bfloat16"])
@pytest.mark.parametrize("n", [1, 1000, 1023, 4097])
def test_add_every_dtype_and_odd_sizes(dtype, n):
    rng = np.random.default_rng(n)
    npdt = tile.bfloat16.np_dtype if dtype == "bfloat16" else np.dtype(dtype)
    xn = (rng.standard_normal(n) * 20).astype(npdt)
    yn = (rng.standard_normal(n) * 20).astype(npdt)
    x, y = api.from_numpy(xn).sync(), api.from_numpy(yn).sync()
    z = api.zeros((n,), tile.dtypes.from_numpy(npdt)).sync()
    add(z.partition((256,)), x, y).sync()
    np.testing.assert_array_equal(z.to_numpy(), xn + yn)


def test_non_contiguous_slices():
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((300, 500)).astype(np.float32)
    zn = rng.standard_normal((300, 500)).astype(np.float32)
    x = api.from_numpy(xn).sync()
    zfull = api.from_numpy(zn).sync()
    zs = zfull[7:250, 3:401]
    axpy2d(zs.partition((32, 64)), x[1:244, 50:448], 0.5).sync()
    expect = zn.copy()
    expect[7:250, 3:401] += 0.5 * xn[1:244, 50:448]
    np.testing.assert_allclose(zfull.to_numpy(), expect, rtol=1e-6)


def test_torch_tensors_zero_copy():
    torch = pytest.importorskip("torch")
    x = torch.randn(5000, device="cuda")
    y = torch.randn(5000, device="cuda")
    z = torch.empty(5000, device="cuda")
    zt = tile.from_dlpack(z)
    assert zt.device_pointer == z.data_ptr()
    add(zt.partition((512,)), x, y).sync()
    assert torch.equal(z, x + y)
    # strided torch views as inputs
    big = torch.randn(64, 256, device="cuda")
    out = torch.empty(64, 128, device="cuda")
    add(tile.from_dlpack(out).partition((16, 64)), big[:, ::2], big[:, 1::2]).sync()
    assert torch.equal(out, big[:, ::2] + big[:, 1::2])


def test_cupy_tensors_zero_copy():
    cp = pytest.importorskip("cupy")
    x = cp.random.standard_normal(3000, dtype=cp.float32)
    y = cp.random.standard_normal(3000, dtype=cp.float32)
    z = cp.empty(3000, dtype=cp.float32)
    zt = tile.from_dlpack(z)
    assert zt.device_pointer == z.data.ptr
    add(zt.partition((1024,)), x, y).sync()
    assert cp.array_equal(z, x + y)


def test_borrowed_torch_stream_orders_work():
    torch = pytest.importorskip("torch")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        x = torch.randn(1 << 20, device="cuda")
        z = torch.empty_like(x)
    add(tile.from_dlpack(z).partition((1024,)), x, x).sync_on(tile.Stream.borrow_raw(s))
    s.synchronize()
    assert torch.equal(z, 2 * x)


def test_ownership_errors_on_launch():
    x = api.rand((1000,), seed=1).sync()
    z = api.zeros((1000,)).sync()
    with pytest.raises(tile.TensorError, match="share memory"):
        add(z.partition((128,)), z, x).sync()
    p = z.into_partition((128,))
    with pytest.raises(tile.TensorError, match="moved"):
        add(p, z, x).sync()
    t = add(p, x, x).first().unpartition().sync()
    np.testing.assert_allclose(t.to_numpy(), 2 * x.to_numpy())
