"""Zero-copy interop with PyTorch and CuPy on a real GPU (skipped when not installed)."""
import gc
import weakref

import numpy as np
import pytest

import tilejit as tile
from tilejit.deviceops import transfer as T
from sample_arrays import rand

pytestmark = pytest.mark.gpu


# --- PyTorch ------------------------------------------------------------------------------------
@pytest.fixture
def torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    return torch


def test_torch_to_tile_zero_copy(torch):
    x = torch.randn(33, 17, device="cuda")
    t = tile.from_dlpack(x)
    assert t.device_pointer == x.data_ptr() and t.shape == (33, 17) and t.strides == (17, 1)
    assert np.array_equal(t.to_numpy(), x.cpu().numpy())
    v = tile.from_dlpack(x[:, 3:9])
    assert v.device_pointer == x[:, 3:9].data_ptr() and v.strides == (17, 1)
    T.copy_from_host(t, np.zeros((33, 17), np.float32)).sync()     # tile writes, torch sees it
    torch.cuda.synchronize()
    assert float(x.abs().sum()) == 0.0


def test_tile_to_torch_zero_copy(torch):
    a = rand((8, 12), seed=1)
    t = T.from_numpy(a).sync()
    y = torch.from_dlpack(t)
    assert y.data_ptr() == t.device_pointer and y.is_cuda
    assert np.array_equal(y.cpu().numpy(), a)
    s = torch.from_dlpack(t[2:6, 1:5])
    assert s.data_ptr() == t[2:6, 1:5].device_pointer and s.stride() == (12, 1)
    y.mul_(2)
    torch.cuda.synchronize()
    assert np.allclose(t.to_numpy(), 2 * a)
    storage = weakref.ref(t.storage)
    del t, s
    gc.collect()
    assert y.data_ptr() != 0 and np.allclose(y.cpu().numpy(), 2 * a)   # torch keeps it alive
    assert storage() is not None
    del y
    gc.collect()
    assert storage() is None                     # ... until torch lets go: then it is freed


@pytest.mark.parametrize("name", ["float16", "bfloat16", "int8", "int64", "bool", "uint8"])
def test_torch_dtypes(torch, name):
    x = (torch.randn(50, device="cuda") * 10).to(getattr(torch, name))
    t = tile.from_dlpack(x)
    assert t.dtype.name == {"bool": "bool_"}.get(name, name)
    back = torch.from_dlpack(t)
    assert back.data_ptr() == x.data_ptr() and torch.equal(back, x)


def test_torch_classified_as_kernel_argument(torch):
    from tilejit.runtime.argspec import classify
    x = torch.randn(64, 64, device="cuda", dtype=torch.float16)
    info = classify(x)
    assert info.key[:3] == ("tensor", "float16", 2) and info.params[0] == x.data_ptr()
    assert info.value is x


def test_borrowed_torch_stream(torch):
    ts = torch.cuda.Stream()
    s = tile.Stream.borrow_raw(ts)
    assert s.handle == ts.cuda_stream and s.is_borrowed
    a = rand((1000,), seed=2)
    t = T.from_numpy(a).sync_on(s)
    assert np.array_equal(t.to_host().sync_on(s), a)
    del s, t
    gc.collect()
    with torch.cuda.stream(ts):                      # the torch stream is still valid
        z = torch.ones(10, device="cuda") * 3
    ts.synchronize()
    assert float(z.sum()) == 30.0


def test_torch_producer_stream_is_respected(torch):
    ts = torch.cuda.Stream()
    with torch.cuda.stream(ts):
        x = torch.zeros(1 << 22, device="cuda")
        for _ in range(20):
            x.add_(1)                                  # queued on ts
        t = tile.from_dlpack(x)                        # no host sync in between
    host = t.to_host().sync()                          # another stream: must see all 20 adds
    assert (host == 20).all()


# --- CuPy ---------------------------------------------------------------------------------------
@pytest.fixture
def cp():
    cp = pytest.importorskip("cupy")
    try:
        cp.cuda.runtime.getDeviceCount()
    except Exception as e:
        pytest.skip(f"CuPy has no GPU: {e}")
    return cp


def test_cupy_round_trips(cp):
    x = cp.random.standard_normal((20, 30), dtype=cp.float32)
    t = tile.from_dlpack(x)
    assert t.device_pointer == x.data.ptr and np.array_equal(t.to_numpy(), cp.asnumpy(x))
    y = cp.from_dlpack(t)
    assert y.data.ptr == t.device_pointer and bool((y == x).all())
    c = cp.asarray(t[3:9, 4:10])                       # through __cuda_array_interface__
    assert c.data.ptr == t[3:9, 4:10].device_pointer and c.strides == (120, 4)
    assert bool((c == x[3:9, 4:10]).all())


def test_cupy_cuda_array_interface_import(cp):
    from tilejit.runtime.dlpack import from_cuda_array_interface
    x = cp.arange(100, dtype=cp.int32)[10:60:2]
    t = from_cuda_array_interface(x)
    assert t.device_pointer == x.data.ptr and t.strides == (2,)
    assert np.array_equal(t.to_numpy(), cp.asnumpy(x))


def test_borrowed_cupy_stream(cp):
    cs = cp.cuda.Stream(non_blocking=True)
    s = tile.Stream.borrow_raw(cs)
    assert s.handle == cs.ptr
    a = rand((77,), seed=3)
    assert np.array_equal(T.from_numpy(a).then(T.to_host).sync_on(s), a)
    del s
    gc.collect()
    cs.synchronize()


def test_cuda_core_stream():
    try:
        from cuda.core import Device as CoreDevice
    except ImportError:
        try:
            from cuda.core.experimental import Device as CoreDevice
        except ImportError:
            pytest.skip("cuda.core is not installed")
    d = CoreDevice(0)
    d.set_current()
    cs = d.create_stream()
    s = tile.Stream.borrow_raw(cs)
    assert s.handle == int(cs.handle) and s.is_borrowed
    a = rand((10,), seed=4)
    assert np.array_equal(T.from_numpy(a).then(T.to_host).sync_on(s), a)
