"""Device, streams, events and stream-ordered memory on a real GPU."""
import gc
import time

import numpy as np
import pytest

import tilejit as tile
from tilejit.runtime import backend, driver, memory
from tilejit.deviceops import transfer as T

pytestmark = pytest.mark.gpu


def test_backend_is_cuda():
    assert backend.current() == "cuda"
    assert driver.driver_available() and driver.device_count() >= 1
    assert driver.driver_version() >= (12, 0)


def test_device_properties():
    dev = tile.Device(0)
    assert dev is tile.Device(0) and not dev.is_simulated
    assert dev.name and "simulator" not in dev.name
    major, minor = dev.compute_capability
    assert major >= 7 and dev.arch == f"sm_{major}{minor}"
    assert dev.multiprocessor_count > 0
    assert dev.total_memory > 1 << 30
    props = dev.properties
    assert props["warp_size"] == 32 and props["multiprocessor_count"] == dev.multiprocessor_count
    assert tile.Device.count() == driver.device_count()
    with pytest.raises(tile.ContextError, match="does not exist"):
        tile.Device(tile.Device.count() + 3)
    from tilejit.runtime.device import default_arch
    assert default_arch() == dev.arch


def test_device_borrow_raw_context():
    dev = tile.Device(0)
    borrowed = tile.Device.borrow_raw(dev.context_handle)
    assert borrowed.ordinal == 0 and borrowed is not dev
    assert borrowed.context_handle == dev.context_handle
    s = borrowed.new_stream()
    a = np.arange(10, dtype=np.float32)
    assert np.array_equal(T.from_numpy(a).then(T.to_host).sync_on(s), a)


def test_streams_and_events():
    dev = tile.Device(0)
    s = dev.new_stream()
    assert not s.is_simulated and not s.is_borrowed and s.handle != 0
    start = tile.Event(dev, timing=True)
    end = tile.Event(dev, timing=True)
    start.record(s)
    t = T.from_numpy(np.ones(1 << 20, np.float32)).sync_on(s)
    end.record(s)
    end.synchronize()
    assert start.query() and end.query() and s.query()
    assert start.elapsed_ms(end) >= 0
    assert tile.Stream.borrow_raw(s.handle) is s          # our own stream, by its handle
    assert t.to_host().sync_on(s.handle).sum() == 1 << 20


def test_raw_foreign_stream_destroyed_before_the_memory():
    drv = driver.drv
    dev = tile.Device(0)
    dev.make_current()
    cu = driver.check(drv.cuStreamCreate(1))
    raw = tile.Stream.borrow_raw(int(cu))
    assert raw.is_borrowed and raw.device is dev
    a = np.arange(1 << 16, dtype=np.float32)
    t = T.from_numpy(a).sync_on(raw)
    assert t.storage.last_stream is raw
    u = T.dup(t).then(T.to_host).sync_on(raw)
    assert np.array_equal(u, a)
    v = t[10:20]
    T.copy_from_host(v, np.full(10, -1.0, np.float32)).submit_on(raw)   # last use: raw, pending
    z = T.from_numpy(a).submit_on(raw).result()          # z is last used on raw
    del raw
    w = T.from_numpy(a).sync()
    T.copy_from_host(w, np.zeros_like(a)).sync()
    driver.check(drv.cuStreamDestroy(cu))                # the owner destroys its stream ...
    ref = a.copy()
    ref[10:20] = -1.0
    assert np.array_equal(v.storage is t.storage and t.to_numpy(), ref)   # ... ordering holds
    x = T.dup(t).sync()
    T.copy_from_host(x, np.ones_like(a)).submit_on(tile.Device(0).internal_stream())
    del t, v, z                                          # ... and the frees use a live stream
    gc.collect()
    tile.Device(0).synchronize()
    assert np.array_equal(x.to_numpy(), np.ones_like(a))


def test_allocation_is_stream_ordered_and_freed_on_the_last_stream():
    dev = tile.Device(0)
    a, b = dev.new_stream(), dev.new_stream()
    t = T.empty((1 << 16,), tile.float32).sync_on(a)
    assert t.storage.last_stream is a and not t.storage.is_pending()
    T.copy_from_host(t, np.full(1 << 16, 3.0, np.float32)).sync_on(b)
    assert t.storage.last_stream is b
    np.testing.assert_array_equal(t.to_host().sync_on(b), 3.0)
    # many allocate/free cycles return memory to the pool without error
    free0 = driver.check(driver.drv.cuMemGetInfo())[0]
    for _ in range(50):
        x = T.empty((1 << 20,), tile.float32).sync_on(a)
        del x
    gc.collect()
    a.synchronize()
    free1 = driver.check(driver.drv.cuMemGetInfo())[0]
    assert free0 - free1 < 64 << 20             # nothing leaked beyond the pool's cache


def test_cross_stream_use_waits_for_pending_work(spin_fill):
    dev = tile.Device(0)
    a, b = dev.new_stream(), dev.new_stream()
    n = 4096
    t = T.from_numpy(np.zeros(n, np.float32)).sync_on(a)
    fut = spin_fill(t, n, 7.0, 0.05).submit_on(a)   # 50 ms of spinning, not waited for
    assert t.storage.is_pending()
    host = t.to_host().sync_on(b)              # other stream: must wait for stream a's kernel
    assert (host == 7.0).all()
    fut.result()


def test_free_of_a_busy_tensor_is_deferred(spin_fill):
    dev = tile.Device(0)
    a = dev.new_stream()
    n = 1 << 20
    t = T.empty((n,), tile.float32).sync_on(a)
    spin_fill(t.device_pointer, n, 1.0, 0.02).submit_on(a)   # a raw pointer: t is not kept alive
    t.storage.use(a)
    del t                                      # freed on stream a, after the kernel
    gc.collect()
    u = T.from_numpy(np.full(n, 5.0, np.float32)).sync_on(a)
    assert (u.to_host().sync_on(a) == 5.0).all()


def test_schedule_and_futures(spin_fill):
    n = 1024
    t = T.empty((n,), tile.float32).sync()
    op = spin_fill(t, n, 2.0, 0.05)
    t0 = time.perf_counter()
    fut = op.schedule()
    submit = time.perf_counter() - t0
    assert submit < 0.04 and not fut.done()    # did not wait for the 50 ms kernel
    assert fut.result() is None and fut.done()
    assert (t.to_numpy() == 2.0).all()


def test_await_does_not_block_the_event_loop(spin_fill):
    import asyncio
    n = 256
    t = T.empty((n,), tile.float32).sync()
    op = spin_fill(t, n, 4.0, 0.2)

    async def ticker(ticks):
        for _ in range(10):
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.005)

    async def main():
        ticks = []
        await asyncio.gather(op, ticker(ticks))
        return ticks

    t0 = time.perf_counter()
    ticks = asyncio.run(main())
    assert len(ticks) == 10 and ticks[-1] - t0 < 0.19   # ticked while the kernel was running
    assert (t.to_numpy() == 4.0).all()


def test_memory_trim_returns_cached_pool_memory():
    # freed memory stays cached in the pool (release threshold: a quarter of the device) ...
    x = T.empty((1 << 26,), tile.float32).sync()          # 256 MiB
    tile.Device(0).make_current()       # cuMemGetInfo reads the calling thread's current context
    free_with_x = driver.check(driver.drv.cuMemGetInfo())[0]
    del x
    gc.collect()
    tile.Device(0).synchronize()
    memory.trim(0)                                        # ... until trim returns it
    free_after = driver.check(driver.drv.cuMemGetInfo())[0]
    assert free_after - free_with_x >= 1 << 27, (free_with_x, free_after)
