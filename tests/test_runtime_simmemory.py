"""The simulated device memory used by the simulator backend."""
import numpy as np
import pytest

import tilejit as tile
from tilejit.simulator.memory import SimulatedMemory, ALIGNMENT
from tilejit.simulator.sem_pointer import atomic_cas, atomic_rmw


@pytest.fixture
def mem():
    return SimulatedMemory()


def test_alloc_addresses_are_aligned_unique_and_never_reused(mem):
    rng = np.random.default_rng(0)
    seen = set()
    for n in rng.integers(0, 5000, size=50):
        a = mem.alloc(int(n))
        assert a and a % ALIGNMENT == 0 and a not in seen
        seen.add(a)
        if rng.random() < 0.5:
            mem.free(a)
    b = mem.alloc(16)
    assert b not in seen and b > max(seen)


def test_read_write_view(mem):
    rng = np.random.default_rng(1)
    a = mem.alloc(64)
    data = rng.integers(0, 256, size=40, dtype=np.uint8)
    mem.write(a + 8, data)
    assert np.array_equal(mem.read(a + 8, 40), data)
    v = mem.view(a, np.float32, 16)
    vals = rng.standard_normal(16).astype(np.float32)
    v[:] = vals
    assert np.array_equal(mem.read(a, 64).view(np.float32), vals)
    mem.write(a, b"\x01\x02")
    assert mem.read(a, 2).tolist() == [1, 2]
    with pytest.raises(tile.DeviceError, match="misaligned"):
        mem.view(a + 2, np.float32, 1)


def test_vectorized_load_store_across_allocations(mem):
    rng = np.random.default_rng(2)
    bases = [mem.alloc(4 * n) for n in (10, 37, 5)]
    ref = {b: rng.standard_normal(n).astype(np.float32) for b, n in zip(bases, (10, 37, 5))}
    for b, v in ref.items():
        mem.view(b, np.float32, v.size)[:] = v
    # random gather over all three allocations, in a 2-D shape
    picks = [(b, int(i)) for b in bases for i in rng.integers(0, ref[b].size, size=7)]
    rng.shuffle(picks)
    addrs = np.array([b + 4 * i for b, i in picks], dtype=np.int64).reshape(3, 7)
    expect = np.array([ref[b][i] for b, i in picks], dtype=np.float32).reshape(3, 7)
    got = mem.load(addrs, np.float32)
    assert got.shape == (3, 7) and np.array_equal(got, expect)
    # scatter new values and read them back
    new = rng.standard_normal((3, 7)).astype(np.float32)
    uniq = np.unique(addrs.reshape(-1), return_index=True)[1]
    flat_a, flat_v = addrs.reshape(-1)[uniq], new.reshape(-1)[uniq]
    mem.store(flat_a, flat_v, np.float32)
    assert np.array_equal(mem.load(flat_a, np.float32), flat_v)


def test_masked_load_store_never_touch_masked_lanes(mem):
    rng = np.random.default_rng(3)
    a = mem.alloc(4 * 8)
    vals = rng.integers(-100, 100, size=8).astype(np.int32)
    mem.view(a, np.int32, 8)[:] = vals
    addrs = a + 4 * np.arange(16, dtype=np.int64)          # half of them out of bounds
    mask = np.arange(16) < 8
    got = mem.load(addrs, np.int32, mask=mask, other=-1)
    assert np.array_equal(got[:8], vals) and (got[8:] == -1).all()
    # masked lanes may even be null
    got0 = mem.load(np.where(mask, addrs, 0), np.int32, mask=mask)
    assert np.array_equal(got0[:8], vals) and (got0[8:] == 0).all()
    mem.store(addrs, 7, np.int32, mask=mask)
    assert (mem.view(a, np.int32, 8) == 7).all()
    # 0-d addresses
    assert mem.load(np.int64(a), np.int32) == 7
    assert mem.load(np.int64(0), np.int32, mask=False, other=3) == 3


def test_out_of_bounds_messages(mem):
    a = mem.alloc(100)
    with pytest.raises(tile.DeviceError, match=r"out-of-bounds access at 0x[0-9a-f]+ \(4 bytes "
                                               r"past allocation 0x[0-9a-f]+ of 100 bytes\)"):
        mem.load(np.array([a + 104]), np.float32)
    with pytest.raises(tile.DeviceError, match="2 bytes past allocation"):
        mem.load(np.array([a + 98]), np.float32)       # straddles the end
    with pytest.raises(tile.DeviceError, match="before allocation"):
        mem.load(np.array([a - 256]), np.uint8)
    with pytest.raises(tile.DeviceError, match="null pointer"):
        mem.store(np.array([0]), 1, np.uint8)
    with pytest.raises(tile.DeviceError, match="misaligned"):
        mem.load(np.array([a + 2]), np.float32)
    ok = mem.load(np.array([a + 96]), np.float32)      # last full element is fine
    assert ok.shape == (1,)


def test_failed_store_writes_nothing(mem):
    a = mem.alloc(16)
    mem.view(a, np.int32, 4)[:] = 5
    with pytest.raises(tile.DeviceError):
        mem.store(np.array([a, a + 4, a + 64]), 9, np.int32)
    assert (mem.view(a, np.int32, 4) == 5).all()


def test_use_after_free_and_double_free(mem):
    a = mem.alloc(32)
    mem.free(a)
    with pytest.raises(tile.DeviceError, match="use after free"):
        mem.load(np.array([a + 4]), np.int32)
    with pytest.raises(tile.DeviceError, match="double free"):
        mem.free(a)
    with pytest.raises(tile.DeviceError, match="not the base"):
        mem.free(a + 12345)
    assert not mem.is_live(a)


# the simulator's atomics (sem_pointer) run on SimulatedMemory's load/store
def test_atomic_rmw_matches_sequential_semantics(mem):
    rng = np.random.default_rng(4)
    a = mem.alloc(4 * 4)
    init = rng.integers(0, 50, size=4).astype(np.int32)
    mem.view(a, np.int32, 4)[:] = init
    idx = rng.integers(0, 4, size=20)
    vals = rng.integers(1, 10, size=20).astype(np.int32)
    old = atomic_rmw(mem, "add", a + 4 * idx, vals, None, np.dtype(np.int32))
    ref = init.copy()
    ref_old = []
    for i, v in zip(idx, vals):
        ref_old.append(ref[i])
        ref[i] += v
    assert np.array_equal(old, ref_old)
    assert np.array_equal(mem.view(a, np.int32, 4), ref)
    # unique addresses
    old = atomic_rmw(mem, "max", a + 4 * np.arange(4), np.full(4, 1000, np.int32), None,
                     np.dtype(np.int32))
    assert np.array_equal(old, ref) and (mem.view(a, np.int32, 4) == 1000).all()
    with pytest.raises(ValueError, match="unknown atomic op"):
        atomic_rmw(mem, "mul", np.array([a]), 1, None, np.dtype(np.int32))


def test_atomic_cas(mem):
    a = mem.alloc(8)
    mem.view(a, np.float32, 2)[:] = [1.5, 2.5]
    old = atomic_cas(mem, np.array([a, a + 4, a]), np.float32([1.5, 9.0, 7.0]),
                     np.float32([7.0, 8.0, 6.0]), None, np.dtype(np.float32))
    # lane 0 swaps 1.5 -> 7.0; lane 1 fails; lane 2 sees 7.0 and swaps to 6.0
    assert old.tolist() == [1.5, 2.5, 7.0]
    assert mem.view(a, np.float32, 2).tolist() == [6.0, 2.5]


def test_bookkeeping(mem):
    a = mem.alloc(1000)
    b = mem.alloc(24)
    assert mem.num_allocations == 2 and mem.bytes_in_use == 1024
    assert mem.allocation_of(a + 999) == (a, 1000)
    mem.free(a)
    assert mem.bytes_in_use == 24
    z = mem.alloc(0)
    assert mem.view(z, np.float32, 0).size == 0
    with pytest.raises(tile.DeviceError):
        mem.load(np.array([z]), np.uint8)
    mem.free(b)


def test_release_from_a_finalizer_inside_a_locked_section_neither_deadlocks_nor_races(mem):
    # A garbage collection can run a Storage finalizer in the middle of any allocation, including
    # while this thread holds the memory lock or iterates its tables (CI once saw "dictionary
    # changed size during iteration" in a fault message). release() must only queue the free.
    a, b = mem.alloc(64), mem.alloc(64)
    with mem._lock:
        mem.release(a)                 # would deadlock if it took the lock
        assert a in mem._buffers       # deferred: nothing mutated under the holder's feet
    assert not mem.is_live(a) and mem.is_live(b)
    with pytest.raises(tile.DeviceError, match="use after free"):
        mem.load(np.array([a]), np.int32)
    assert mem.bytes_in_use == 64 and mem.num_allocations == 1
    mem.release(a)                     # a late duplicate from a finalizer is ignored, not raised
    mem.free(b)
    assert mem.bytes_in_use == 0


def test_fault_messages_survive_finalizers_freeing_during_the_scan():
    # The real finalizer path (runtime.memory._free_simulated) on the process-wide memory, with a
    # collection on nearly every allocation. Runs in a thread so that a deadlock fails, not hangs.
    import gc
    import threading
    from tilejit.runtime.memory import _free_simulated
    from tilejit.simulator.memory import memory as sim
    gone = [sim.alloc(8) for _ in range(50)]
    for addr in gone:
        sim.free(addr)
    doomed = [sim.alloc(8) for _ in range(200)]
    errors, messages = [], []

    def collect(phase, info):
        if phase == "start" and doomed:
            _free_simulated(doomed.pop())

    def scan():
        try:
            for _ in range(50):
                try:
                    sim.load(np.array([gone[-1] + 4]), np.float32)
                except tile.DeviceError as e:
                    messages.append(str(e))
        except BaseException as e:      # e.g. "dictionary changed size during iteration"
            errors.append(e)

    old = gc.get_threshold()
    gc.callbacks.append(collect)
    gc.set_threshold(1)
    try:
        t = threading.Thread(target=scan, daemon=True)
        t.start()
        t.join(30)
    finally:
        gc.set_threshold(*old)
        gc.callbacks.remove(collect)
    assert not t.is_alive(), "deadlock: a finalizer blocked on the simulated-memory lock"
    assert errors == []
    assert len(messages) == 50 and all("use after free" in m for m in messages)
    for addr in doomed:
        sim.free(addr)
