"""Kernel calls with PyTorch / CuPy arrays on a GPU: the metadata fast path (runtime.foreign).

Results must stay right when the producer reallocates, when a tensor dies and its id is reused,
for non-contiguous, offset and zero-size views, across two streams, and from several threads."""
import gc
import threading

import numpy as np
import pytest

import tilejit as tile
from tilejit import api

pytestmark = pytest.mark.gpu


@pytest.fixture
def torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    return torch


@pytest.fixture
def cp():
    cp = pytest.importorskip("cupy")
    try:
        cp.cuda.runtime.getDeviceCount()
    except Exception as e:
        pytest.skip(f"CuPy has no GPU: {e}")
    return cp


@pytest.fixture
def jax():
    jax = pytest.importorskip("jax")
    try:
        jax.devices("cuda")
    except Exception as e:
        pytest.skip(f"jax has no CUDA backend: {e}")
    return jax


@tile.entry
def vadd(z, x, y):
    z.store(tile.load_tile_like(x, z) + tile.load_tile_like(y, z))


@tile.entry
def scale2d(z, x, a):
    z.store(tile.load_tile_like(x, z) * a)


def _vadd_three_sizes(torch, s, output):
    """vadd into ``output(z)`` three times per size (even and ragged); returns the last z."""
    for n in (1024, 1000, 4096):
        x = torch.randn(n, device="cuda")
        y = torch.randn(n, device="cuda")
        z = torch.empty(n, device="cuda")
        for _ in range(3):
            vadd(output(z), x, y).submit_on(s)
        torch.cuda.synchronize()
        torch.testing.assert_close(z, x + y)
    return z


def test_torch_inputs_and_output_every_call(torch):
    s = tile.Stream.borrow_raw(torch.cuda.current_stream())
    _vadd_three_sizes(torch, s, lambda z: tile.from_dlpack(z).partition((256,)))


def test_sync_with_torch_tensors_follows_torch_current_stream(torch):
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        x = torch.zeros(1 << 22, device="cuda")
        for _ in range(20):
            x.add_(1)                                   # queued on `side`, not yet done
        z = torch.empty_like(x)
        vadd(tile.from_dlpack(z).partition((1024,)), x, x).sync()
        assert float(z.min()) == 40.0 and float(z.max()) == 40.0


def test_sync_with_torch_tensors_follows_a_policy_set_later(torch):
    """sync() remembers torch's stream wrapper per (device, handle) while no policy is set; a
    policy set afterwards wins, and the builtin one put back returns to torch's stream."""
    from tilejit.deviceops import scheduling
    x = torch.randn(4096, device="cuda")
    z = torch.empty_like(x)
    op = vadd(tile.partition(z, (1024,)), x, x)
    torch_s = op._default_stream()
    assert torch_s.handle == torch.cuda.current_stream().cuda_stream
    assert op._default_stream() is torch_s                    # remembered
    mine = tile.SingleStream(tile.Device(0))
    old = scheduling.default_policy(0)
    tile.set_default_policy(mine)
    try:
        assert op._default_stream() is mine.stream
        vadd(tile.partition(z, (1024,)), x, x).sync()
        torch.testing.assert_close(z, 2 * x)
    finally:
        tile.set_default_policy(old)
    assert op._default_stream() is torch_s
    z.zero_()
    op.sync()                                            # on torch's stream again
    torch.testing.assert_close(z, 2 * x)


def test_two_streams_are_ordered(torch):
    prod = torch.cuda.Stream()
    mine = tile.Device(0).new_stream()                  # not torch's stream: an event is needed
    with torch.cuda.stream(prod):
        x = torch.zeros(1 << 22, device="cuda")
        torch.cuda._sleep(20_000_000)                    # keep `prod` busy
        x.fill_(3.0)
        z = torch.zeros_like(x)
        vadd(tile.from_dlpack(z).partition((1024,)), x, x).sync_on(mine)
    prod.synchronize()
    assert float(z.min()) == 6.0


def test_views_offsets_and_zero_size(torch):
    s = tile.Stream.borrow_raw(torch.cuda.current_stream())
    base = torch.randn(64, 48, device="cuda")
    x = base[5:37, 8:40]                                 # offset, non-contiguous rows
    z = torch.zeros(32, 32, device="cuda")
    scale2d(tile.from_dlpack(z).partition((16, 16)), x, 2.0).sync_on(s)
    torch.testing.assert_close(z, x * 2)
    xt = base.t()[3:35, 7:39]                            # transposed strides
    scale2d(tile.from_dlpack(z).partition((16, 16)), xt, 3.0).sync_on(s)
    torch.testing.assert_close(z, xt * 3)
    e = torch.empty(0, 16, device="cuda")
    scale2d(tile.from_dlpack(e).partition((16, 16)), e, 1.0).sync_on(s)   # nothing to do


def test_reallocation_and_reused_ids(torch):
    s = tile.Stream.borrow_raw(torch.cuda.current_stream())
    x = torch.ones(256, device="cuda")
    z = torch.empty(256, device="cuda")
    vadd(tile.from_dlpack(z).partition((128,)), x, x).sync_on(s)
    x.resize_(4096)                                      # the producer reallocates
    x.fill_(5.0)
    z.resize_(4096)
    vadd(tile.from_dlpack(z).partition((128,)), x, x).sync_on(s)
    assert float(z.min()) == 10.0 and z.numel() == 4096
    y = torch.full((256,), 7.0, device="cuda")
    x.set_(y)                                            # now aliases y's storage
    w = torch.empty(256, device="cuda")
    vadd(tile.from_dlpack(w).partition((128,)), x, x).sync_on(s)
    assert float(w.max()) == 14.0
    for i in range(20):                                  # dying tensors: ids get reused
        a = torch.full((512,), float(i), device="cuda")
        out = torch.empty(512, device="cuda")
        vadd(tile.from_dlpack(out).partition((512,)), a, a).sync_on(s)
        assert float(out[0]) == 2.0 * i
        del a, out
        gc.collect()


def test_output_aliasing_an_input_is_refused(torch):
    x = torch.ones(256, device="cuda")
    with pytest.raises(tile.TensorError, match="share memory"):
        vadd(tile.from_dlpack(x).partition((128,)), x, x).sync()


# Arrays of two GPUs in one launch: tests/multidevice_cases.py (two GPUs and two simulated devices)


def test_threads_with_torch_tensors(torch):
    errors = []

    def work(seed):
        try:
            s = tile.Device(0).new_stream()
            for k in range(30):
                x = torch.full((2048,), float(seed), device="cuda")
                z = torch.empty(2048, device="cuda")
                vadd(tile.from_dlpack(z).partition((512,)), x, x).sync_on(s)
                assert float(z.max()) == 2.0 * seed and float(z.min()) == 2.0 * seed
        except Exception as e:
            errors.append(e)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == []


def test_cupy_arrays(cp):
    x = cp.random.standard_normal(3000, dtype=cp.float32)
    y = cp.random.standard_normal(3000, dtype=cp.float32)
    z = cp.empty(3000, dtype=cp.float32)
    s = tile.Stream.borrow_raw(cp.cuda.get_current_stream())
    for _ in range(2):
        vadd(tile.from_dlpack(z).partition((512,)), x, y).sync_on(s)
    np.testing.assert_allclose(cp.asnumpy(z), cp.asnumpy(x + y), rtol=1e-6)
    xs = x[::2]                                          # strided
    zs = cp.empty(1500, dtype=cp.float32)
    vadd(tile.from_dlpack(zs).partition((512,)), xs, xs).sync_on(s)
    np.testing.assert_allclose(cp.asnumpy(zs), cp.asnumpy(xs * 2), rtol=1e-6)
    with pytest.raises(tile.TensorError, match="negative strides"):
        vadd(tile.from_dlpack(zs).partition((512,)), xs[::-1], xs).sync_on(s)


def test_cupy_outputs_through_tile_partition_and_back(cp):
    x = cp.arange(4096, dtype=cp.float32)
    z = cp.empty(4096, dtype=cp.float32)
    s = tile.Stream.borrow_raw(cp.cuda.get_current_stream())
    vadd(tile.partition(z, (1024,)), x, x).sync_on(s)
    np.testing.assert_allclose(cp.asnumpy(z), 2 * np.arange(4096), rtol=1e-6)
    t = api.rand((1000,), seed=1).sync()
    back = cp.from_dlpack(t)                               # zero-copy: the same memory
    assert back.data.ptr == t.device_pointer
    np.testing.assert_array_equal(cp.asnumpy(back), t.to_numpy())


def test_cupy_arrays_launch_in_c_and_follow_cupy_streams(cp):
    """CuPy inputs and tile.partition outputs launch in C once their layout is known; a launch
    on another stream waits for CuPy's current stream; in-place reshapes and strided views are
    read anew each call."""
    from tilejit import native
    x = cp.random.standard_normal(4096, dtype=cp.float32)
    y = cp.random.standard_normal(4096, dtype=cp.float32)
    z = cp.empty(4096, dtype=cp.float32)
    s = tile.Stream.borrow_raw(cp.cuda.get_current_stream())
    for _ in range(3):
        vadd(tile.partition(z, (1024,)), x, y).sync_on(s)
    np.testing.assert_allclose(cp.asnumpy(z), cp.asnumpy(x + y), rtol=1e-6)
    if native.enabled():
        before = vadd._native.total
        vadd(tile.partition(z, (1024,)), x, y).sync_on(s)
        assert vadd._native.total == before + 1
    mine = tile.Device(0).new_stream()
    side = cp.cuda.Stream(non_blocking=True)
    with side:                                           # CuPy's current stream: side
        big = cp.ones(1 << 22, dtype=cp.float32)
        for _ in range(20):
            big *= 1.0001                                # keeps side busy
        x2 = big[:4096] * 2.0
        for _ in range(2):
            vadd(tile.partition(z, (1024,)), x2, y).submit_on(mine)   # waits for side
    mine.synchronize()
    np.testing.assert_allclose(cp.asnumpy(z), cp.asnumpy(x2 + y), rtol=1e-5)
    x.shape = (64, 64)                                   # reshaped in place: read anew
    zz = cp.empty((64, 64), dtype=cp.float32)
    for _ in range(2):
        scale2d(tile.partition(zz, (16, 16)), x.T, 2.0).sync_on(s)
    np.testing.assert_allclose(cp.asnumpy(zz), cp.asnumpy(x.T * 2), rtol=1e-6)


def test_jax_cuda_arrays_zero_copy(jax):
    jnp = jax.numpy
    x = jax.device_put(jnp.arange(4096, dtype=jnp.float32), jax.devices("cuda")[0])
    z = api.empty((4096,)).sync()
    vadd(z.partition((1024,)), x, x).sync()
    back = jnp.from_dlpack(z)
    np.testing.assert_allclose(np.asarray(back), 2 * np.arange(4096), rtol=1e-6)
    assert tile.from_dlpack(x).device_pointer == x.unsafe_buffer_pointer()


def test_tile_tensors_and_torch_mix(torch):
    a = api.rand((4096,), seed=3).sync()
    x = torch.randn(4096, device="cuda")
    z = api.zeros((4096,)).sync()
    vadd(z.partition((1024,)), a, x).sync()
    np.testing.assert_allclose(z.to_numpy(), a.to_numpy() + x.cpu().numpy(), rtol=1e-6)


def test_tile_partition_of_torch_outputs(torch):
    """tile.partition(z, tile): outputs read from torch's metadata (the C path after the first
    call), right across reallocation, views, a second stream, aliasing and CuPy-free fallbacks."""
    from tilejit import native
    s = tile.Stream.borrow_raw(torch.cuda.current_stream())
    z = _vadd_three_sizes(torch, s, lambda z: tile.partition(z, (256,)))
    z.set_(torch.empty(2048, device="cuda"))          # reallocated in place: read anew
    x, y = torch.randn(2048, device="cuda"), torch.randn(2048, device="cuda")
    vadd(tile.partition(z, (256,)), x, y).sync()
    torch.testing.assert_close(z, x + y)
    big = torch.zeros(64, 96, device="cuda")
    xs = torch.randn(64, 96, device="cuda")
    scale2d(tile.partition(big[:, 16:80], (16, 32)), xs[:, 16:80], 3.0).sync()
    torch.testing.assert_close(big[:, 16:80], xs[:, 16:80] * 3)
    assert big[:, :16].abs().sum() == 0 and big[:, 80:].abs().sum() == 0
    with pytest.raises(tile.TensorError, match="share memory"):
        vadd(tile.partition(x, (256,)), x, y).sync()
    if native.enabled():
        launches = vadd.stats.launches
        vadd(tile.partition(z, (256,)), x, y).sync()
        assert vadd.stats.launches == launches + 1


def test_tile_partition_follows_torch_streams(torch):
    side = torch.cuda.Stream()
    x = torch.randn(1 << 20, device="cuda")
    y = torch.randn(1 << 20, device="cuda")
    z = torch.zeros(1 << 20, device="cuda")
    with torch.cuda.stream(side):
        torch.cuda._sleep(10_000_000)
        x.mul_(2)
        vadd(tile.partition(z, (1024,)), x, y).sync()     # runs on torch's current stream (side)
    torch.cuda.synchronize()
    torch.testing.assert_close(z, x + y)


def test_torch_exchange_api_path(torch):
    """torch >= 2.10 tensors are read through DLPack's C exchange API: right for Parameters,
    other subclasses (the attribute reader), and lazily negated views (refused, also when the
    position last saw a plain tensor), with the launch counted by the C path."""
    from tilejit import native
    from tilejit.runtime import foreign
    s = tile.Stream.borrow_raw(torch.cuda.current_stream())
    x = torch.randn(1024, device="cuda")
    z = torch.empty(1024, device="cuda")
    vadd(tile.partition(z, (256,)), x, x).sync_on(s)
    if native.enabled() and hasattr(torch.Tensor, "__dlpack_c_exchange_api__"):
        assert foreign.torch_exchange_active()
    torch.testing.assert_close(z, 2 * x)
    p = torch.nn.Parameter(torch.randn(1024, device="cuda"))
    launches = vadd.stats.launches
    for _ in range(3):
        vadd(tile.partition(z, (256,)), p, x).sync_on(s)
    torch.testing.assert_close(z, p.detach() + x)
    assert vadd.stats.launches == launches + 3

    class Sub(torch.Tensor):
        pass
    xs = x.as_subclass(Sub)
    vadd(tile.partition(z, (256,)), xs, x).sync_on(s)
    torch.testing.assert_close(z, 2 * x)
    c = torch.randn(1024, dtype=torch.complex64, device="cuda")
    neg = c.conj().imag                                   # torch's neg bit: data is -imag
    assert neg.is_neg()
    for _ in range(2):                                    # the position saw plain x before
        with pytest.raises(tile.TensorError, match="negated"):
            vadd(tile.partition(z, (256,)), neg, x).sync_on(s)
    vadd(tile.partition(z, (256,)), neg.resolve_neg(), x).sync_on(s)
    torch.testing.assert_close(z, -c.imag + x)


def test_torch_shape_change_in_place_is_seen(torch):
    """The per-position cache keys on the values read at each call: a tensor reshaped in place
    (same object, same pointer) is read anew."""
    s = tile.Stream.borrow_raw(torch.cuda.current_stream())
    x = torch.ones(4096, device="cuda")
    z = torch.zeros(4096, device="cuda")
    for n in (4096, 2048, 4096):
        x.resize_(n)
        z.resize_(n)
        z.zero_()
        vadd(tile.partition(z, (1024,)), x, x).sync_on(s)
        assert float(z.sum()) == 2.0 * n
    zt = z.view(64, 64)
    xt = x.view(64, 64).t()                               # same pointer, transposed strides
    xt_ref = xt.clone()
    scale2d(tile.partition(zt, (16, 16)), xt, 1.0).sync_on(s)
    torch.testing.assert_close(zt, xt_ref)



@tile.entry
def cast_like(z, x):
    z.store(tile.load_tile_like(x, z).astype(z.dtype))


@tile.entry
def copy_blocks(z, x):
    i = tile.bid(0)
    tile.store(z.partition((64,)), (i,), x.load((i,), (64,)))


def test_torch_float8_tensors_as_inputs_and_outputs(torch):
    """torch's __cuda_array_interface__ raises KeyError for float8, and tile.atomic(c) of a
    float8 tensor passed it on (2026-11-27): float8 tensors are inputs, partitions and atomics."""
    x = torch.randn(256, device="cuda")
    c = torch.empty(256, device="cuda", dtype=torch.float8_e4m3fn)
    cast_like(tile.partition(c, (64,)), x).sync()
    assert torch.equal(c.float(), x.to(torch.float8_e4m3fn).float())
    back = torch.empty(256, device="cuda")
    cast_like(tile.partition(back, (64,)), c).sync()
    assert torch.equal(back, c.float())
    c2 = torch.zeros_like(c)
    copy_blocks(tile.atomic(c2), c).grid((4, 1, 1)).sync()
    assert torch.equal(c2.float(), c.float())
