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
