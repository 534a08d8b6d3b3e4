"""The C launch path on a GPU with real foreign arrays: torch CUDA tensors (DLPack's C exchange
API), tile.partition of them, CuPy arrays when installed, and the fallbacks' reasons."""
import numpy as np
import pytest

import tilejit as tile
from tilejit import api, native

pytestmark = pytest.mark.gpu

needs_native = pytest.mark.skipif(not native.enabled(), reason="the C extension is not built")


@tile.entry
def axpb(z, x, a, b):
    z.store(tile.load_tile_like(x, z) * a + b)


def _twice(make, s):
    """Launch twice; the second launch's C statistics."""
    make().sync_on(s)
    native.reset_stats()
    make().sync_on(s)
    return native.stats()


@needs_native
def test_torch_cuda_tensors_launch_in_c_with_no_fallback():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    s = tile.Device(0).new_stream()
    n = 1 << 20
    x = torch.randn(n, device="cuda")
    z = torch.zeros(n, device="cuda")
    st = _twice(lambda: axpb(tile.partition(z, (1024,)), x, 2.0, 1), s)
    assert st == {"launches": 1, "fallbacks": {}}
    torch.cuda.synchronize()
    torch.testing.assert_close(z, x * 2 + 1)
    zt = api.zeros((n,)).sync_on(s)
    st = _twice(lambda: axpb(zt.partition((1024,)), x, 0.5, -3), s)
    assert st == {"launches": 1, "fallbacks": {}}
    np.testing.assert_allclose(zt.to_numpy(), x.cpu().numpy() * 0.5 - 3, rtol=1e-6)
    xi = torch.zeros(1024, dtype=torch.int8, device="cuda")
    zi = torch.zeros(1024, dtype=torch.int8, device="cuda")
    add_n(tile.partition(zi, (1024,)), xi, 1).sync_on(s)
    with pytest.raises(OverflowError, match="Python integer 1000 out of bounds for int8"):
        add_n(tile.partition(zi, (1024,)), xi, 1000).sync_on(s)
    assert (zi == 1).all()                        # the refused launch wrote nothing


@tile.entry
def add_n(z, x, n):
    z.store(tile.load_tile_like(x, z) + n)


@needs_native
def test_fallbacks_on_the_gpu_name_their_reason():
    s = tile.Device(0).new_stream()
    a = np.random.default_rng(0).standard_normal(4096).astype(np.float32)
    z = api.zeros((4096,)).sync_on(s)
    st = _twice(lambda: axpb(z.partition((1024,)), a, 1.0, 0), s)        # NumPy: copied in
    assert st["launches"] == 0
    assert list(st["fallbacks"]) == ["a NumPy array (copied in per launch)"]
    np.testing.assert_allclose(z.to_numpy(), a, rtol=1e-6)
    x = api.from_numpy(a).sync_on(s)
    st = _twice(lambda: axpb(z.partition((1024,)), x, 3.0, 1), s)
    assert st == {"launches": 1, "fallbacks": {}}
    np.testing.assert_allclose(z.to_numpy(), a * 3 + 1, rtol=1e-6, atol=1e-6)   # fma
    p = axpb(z.partition((1024,)), x, 2.0, 0).prepare(s)
    for _ in range(3):
        p.launch()
    s.synchronize()
    p.close()
    np.testing.assert_allclose(z.to_numpy(), a * 2, rtol=1e-6)


@needs_native
def test_cupy_arrays_launch_in_c():
    cupy = pytest.importorskip("cupy")
    s = tile.Device(0).new_stream()
    x = cupy.arange(4096, dtype=cupy.float32)
    z = cupy.zeros(4096, dtype=cupy.float32)
    st = _twice(lambda: axpb(tile.partition(z, (1024,)), x, 2.0, 1), s)
    assert st == {"launches": 1, "fallbacks": {}}
    cupy.cuda.get_current_stream().synchronize()
    np.testing.assert_allclose(cupy.asnumpy(z), np.arange(4096, dtype=np.float32) * 2 + 1)
