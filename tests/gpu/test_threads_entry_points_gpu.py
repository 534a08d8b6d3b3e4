"""Every host entry point works from any thread, with or without a current CUDA context, and leaves
the thread's context as it found it (issue 27: `.sync()` with torch tensors on torch's default
stream failed with CUDA_ERROR_INVALID_CONTEXT in a new thread, which has no current context).

Each test runs 8+ threads (plain threads, a ``concurrent.futures`` pool, or DataLoader-style
producer threads feeding a queue) and checks every result.
"""
import asyncio
import concurrent.futures
import queue
import threading

import numpy as np
import pytest

import tilejit as tile
from tilejit import api
from tilejit.runtime import driver as _d

pytestmark = pytest.mark.gpu

THREADS = 8


@tile.entry
def axpy(z, x, a: float):
    z.store(tile.load_tile_like(x, z) * a)


def _current_ctx() -> int:
    err, cur = _d.drv.cuCtxGetCurrent()
    assert err == _d.SUCCESS
    return int(cur)


def _run_threads(fn, n=THREADS):
    """``fn(tid)`` in ``n`` new threads (no current context); each also checks that its context
    is the same (none) after every call. Re-raises the first failure."""
    errors = []

    def wrap(tid):
        try:
            assert _current_ctx() == 0          # a new thread starts without a context
            fn(tid)
        except BaseException as e:              # reported below
            errors.append(e)

    threads = [threading.Thread(target=wrap, args=(t,)) for t in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]


def _same_ctx(before):
    assert _current_ctx() == before, "a tilejit call changed the thread's current CUDA context"


# --- tilejit tensors, NumPy, constructors -----------------------------------------------------------
def test_tilejit_tensors_sync_submit_await_and_to_numpy_from_new_threads():
    x = api.full((1 << 14,), 3.0, tile.float32).sync()
    axpy(api.empty((1 << 14,)).sync().partition((1024,)), x, 1.0).sync()   # compile up front

    def work(tid):
        stream = tile.Device(0).new_stream()
        for i in range(40):
            ctx = _current_ctx()
            a = float(tid * 100 + i)
            z = api.zeros((1 << 14,), tile.float32).sync()
            _same_ctx(ctx)
            if i % 4 == 0:
                axpy(z.partition((1024,)), x, a).sync()
            elif i % 4 == 1:
                axpy(z.partition((1024,)), x, a).sync_on(stream)
            elif i % 4 == 2:
                axpy(z.partition((1024,)), x, a).submit_on(stream).result()
            else:
                asyncio.run(_await(axpy(z.partition((1024,)), x, a)))
            _same_ctx(ctx)
            got = z.to_numpy()
            _same_ctx(ctx)
            assert np.array_equal(got, np.full(1 << 14, 3.0 * a, np.float32)), (tid, i)

    _run_threads(work)


async def _await(op):
    return await op


def test_numpy_inputs_and_constructors_from_a_thread_pool():
    data = np.arange(1 << 12, dtype=np.float32)
    axpy(api.empty((1 << 12,)).sync().partition((256,)), data, 1.0).sync()

    def work(k):
        ctx = _current_ctx()
        z = api.empty((1 << 12,), tile.float32).sync()
        axpy(z.partition((256,)), data, float(k)).sync()
        ones = api.ones((1 << 10,), tile.float32).sync().to_numpy()
        ar = api.arange(1000, tile.int32).sync().to_numpy()
        _same_ctx(ctx)
        return k, z.to_numpy(), ones, ar

    with concurrent.futures.ThreadPoolExecutor(max_workers=THREADS) as pool:
        for k, z, ones, ar in pool.map(work, range(64)):
            assert np.array_equal(z, data * np.float32(k)), k
            assert (ones == 1).all()
            assert np.array_equal(ar, np.arange(1000, dtype=np.int32))


def test_graphs_captured_and_replayed_in_new_threads():
    """Threads capture their graphs at the same time (each on its own stream, sharing the input
    ``x``) and replay them: nothing one thread does (a device-wide wait, ordering on the shared
    tensor) may touch another thread's capture."""
    x = api.full((4096,), 2.0, tile.float32).sync()
    axpy(api.zeros((4096,), tile.float32).sync().partition((512,)), x, 1.0).sync()  # compiled

    def work(tid):
        stream = tile.Device(0).new_stream()
        z = api.zeros((4096,), tile.float32).sync()
        g = axpy(z.partition((512,)), x, float(tid + 1)).graph_on(stream)
        for _ in range(20):
            api.fill(z, 0.0).sync_on(stream)
            g.launch().sync_on(stream)
            assert (z.to_numpy() == 2.0 * (tid + 1)).all(), tid

    _run_threads(work)


def test_a_thread_with_a_context_keeps_it():
    """A thread whose current context is tilejit's device keeps it; one with none keeps none."""
    x = api.full((1024,), 1.0, tile.float32).sync()
    dev = tile.Device(0)

    def work(tid):
        if tid % 2:
            dev.make_current()
        before = _current_ctx()
        z = api.zeros((1024,), tile.float32).sync()
        axpy(z.partition((256,)), x, 5.0).sync()
        assert (z.to_numpy() == 5.0).all()
        _same_ctx(before)

    _run_threads(work)


# --- torch ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def test_torch_default_stream_sync_from_new_threads(torch):
    """The issue's reproduction: 8 threads x 100 calls with torch tensors and .sync() on torch's
    default stream, both spellings of the output."""
    xt = torch.full((1 << 16,), 3.0, device="cuda")
    axpy(tile.partition(torch.empty_like(xt), (1024,)), xt, 1.0).sync()

    def work(tid):
        for i in range(100):
            zt = torch.empty_like(xt)
            out = tile.partition(zt, (1024,)) if i % 2 else tile.from_dlpack(zt).partition((1024,))
            axpy(out, xt, float(tid)).sync()
            assert bool((zt == 3.0 * tid).all()), (tid, i)

    _run_threads(work)


def test_torch_non_default_streams_and_submit_on_from_new_threads(torch):
    xt = torch.full((1 << 14,), 2.0, device="cuda")

    def work(tid):
        s = torch.cuda.Stream()
        for i in range(50):
            with torch.cuda.stream(s):
                zt = torch.empty_like(xt)
                if i % 2:
                    axpy(tile.partition(zt, (512,)), xt, float(i)).sync()
                else:
                    axpy(tile.partition(zt, (512,)), xt, float(i)).submit_on(s).result()
                zt.add_(1.0)                       # torch work ordered after the kernel
            s.synchronize()
            assert bool((zt == 2.0 * i + 1.0).all()), (tid, i)

    _run_threads(work)


def test_torch_dataloader_style_worker_threads(torch):
    """Producer threads (as DataLoader workers with a thread pool, or a prefetch thread) run kernels
    on their batches and hand them to the consumer through a queue."""
    q = queue.Queue(maxsize=16)
    n_workers, per_worker = THREADS, 25

    def producer(tid):
        for i in range(per_worker):
            xt = torch.full((4096,), float(tid), device="cuda")
            zt = torch.empty_like(xt)
            axpy(tile.partition(zt, (256,)), xt, float(i)).sync()
            q.put((tid, i, zt))

    threads = [threading.Thread(target=producer, args=(t,)) for t in range(n_workers)]
    for t in threads:
        t.start()
    seen = 0
    while seen < n_workers * per_worker:
        tid, i, zt = q.get(timeout=120)
        assert bool((zt == float(tid) * i).all()), (tid, i)
        seen += 1
    for t in threads:
        t.join(timeout=60)


def test_tilejit_torch_operators_from_new_threads(torch):
    from test_torch_ops import scaled, silu

    x = torch.randn(64, 256, device="cuda")
    ref = torch.nn.functional.silu(x) * 3.0
    scaled(silu(x), 3.0)

    def work(tid):
        for _ in range(20):
            out = scaled(silu(x), 3.0)
            torch.cuda.current_stream().synchronize()
            assert torch.allclose(out, ref, atol=1e-5), tid

    _run_threads(work)


# --- CuPy -------------------------------------------------------------------------------------------
def test_cupy_default_stream_from_new_threads():
    cp = pytest.importorskip("cupy")
    xc = cp.full((1 << 14,), 4.0, dtype=cp.float32)
    axpy(tile.partition(cp.empty_like(xc), (1024,)), xc, 1.0).sync()

    def work(tid):
        for i in range(40):
            zc = cp.empty_like(xc)
            axpy(tile.partition(zc, (1024,)), xc, float(tid + i)).sync()
            assert bool((zc == 4.0 * (tid + i)).all()), (tid, i)

    _run_threads(work)


# --- device 1 ---------------------------------------------------------------------------------------
@pytest.mark.multigpu
def test_second_device_from_new_threads():
    if tile.Device.count() < 2:
        pytest.skip("needs two GPUs")
    dev = tile.Device(1)
    x = api.full((4096,), 3.0, tile.float32).sync_on(dev.new_stream())

    def work(tid):
        s = dev.new_stream()
        for i in range(25):
            z = api.zeros((4096,), tile.float32).sync_on(s)
            axpy(z.partition((512,)), x, float(i)).sync_on(s)
            assert (z.to_numpy() == 3.0 * i).all(), (tid, i)

    _run_threads(work)
