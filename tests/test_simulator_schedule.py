"""The simulator's block schedules (TILEJIT_SIM_SCHEDULE, TILEJIT_SIM_SEED) and the weak memory of
the interleave schedule: buffered weak stores, weak loads of older memory, tokens."""
import threading

import numpy as np
import pytest

import tilejit as tile
from tilejit import api, envvars
from tilejit.simulator import DeviceAssertionError, SimulatorError
from tilejit.simulator import schedule as sched
from tilejit.simulator import SimulatorHangError
from tilejit.simulator.memory import memory
from tilejit.simulator.weak_memory import BUFFER, EARLY, NOW, Agent, Tok, WeakMemory
from tilejit.tileir import I32, Module, ptr
from simulator_helpers import fn, run, xchg_order_module

import sync_kernels as sk


def _use(monkeypatch, schedule, seed=None):
    monkeypatch.setenv("TILEJIT_SIM_SCHEDULE", schedule)
    if seed is None:
        monkeypatch.delenv("TILEJIT_SIM_SEED", raising=False)
    else:
        monkeypatch.setenv("TILEJIT_SIM_SEED", str(seed))


# --------------------------------------------------------------------------------------------------
# The environment variables
@pytest.mark.parametrize("var,raw,value", [
    ("TILEJIT_SIM_SCHEDULE", None, "serial"), ("TILEJIT_SIM_SCHEDULE", "", "serial"),
    ("TILEJIT_SIM_SCHEDULE", "serial", "serial"), ("TILEJIT_SIM_SCHEDULE", "Shuffle", "shuffle"),
    ("TILEJIT_SIM_SCHEDULE", " interleave ", "interleave"), ("TILEJIT_SIM_SEED", None, 0),
    ("TILEJIT_SIM_SEED", "", 0), ("TILEJIT_SIM_SEED", "7", 7),
    ("TILEJIT_SIM_SEED", " 123456789 ", 123456789)])
def test_variable_values(monkeypatch, var, raw, value):
    if raw is None:
        monkeypatch.delenv(var, raising=False)
    else:
        monkeypatch.setenv(var, raw)
    read = envvars.sim_schedule if var == "TILEJIT_SIM_SCHEDULE" else envvars.sim_seed
    assert read() == value


def _block_order(dev, grid=(4, 3, 2)):
    n = int(np.prod(grid))
    cnt, out = dev.put(np.array([-1], np.int32)), dev.empty((n,), np.int32)
    run(xchg_order_module(), grid, [cnt, out])
    old = dev.get(out, (n,), np.int32)
    order = [-1]                       # follow the chain of old values from the first block
    nxt = {int(v): i for i, v in enumerate(old)}
    while len(order) <= n and order[-1] in nxt:
        order.append(nxt[order[-1]])
    return order[1:]


@pytest.mark.parametrize("var,raw,words", [
    ("TILEJIT_SIM_SCHEDULE", "parallel", ["TILEJIT_SIM_SCHEDULE='parallel'", "serial", "shuffle",
                                          "interleave"]),
    ("TILEJIT_SIM_SEED", "-3", ["TILEJIT_SIM_SEED='-3'", "non-negative decimal integer"]),
    ("TILEJIT_SIM_SEED", "abc", ["TILEJIT_SIM_SEED='abc'", "non-negative decimal integer"]),
    ("TILEJIT_SIM_SEED", "1.5", ["TILEJIT_SIM_SEED='1.5'"]),
])
def test_bad_values_are_one_clear_error_at_launch(monkeypatch, dev, var, raw, words):
    monkeypatch.setenv("TILEJIT_SIM_SCHEDULE", "shuffle")
    monkeypatch.setenv(var, raw)
    with pytest.raises(envvars.EnvironmentVariableError) as info:
        _block_order(dev)
    for w in words:
        assert w in str(info.value)


# --------------------------------------------------------------------------------------------------
# serial and shuffle
def test_serial_runs_blocks_x_fastest(monkeypatch, dev):
    _use(monkeypatch, "serial")
    assert _block_order(dev) == list(range(24))


def test_shuffle_runs_every_block_once_in_a_seeded_order(monkeypatch, dev):
    orders = []
    for seed in (1, 2, 1):
        _use(monkeypatch, "shuffle", seed)
        orders.append(_block_order(dev))
    assert sorted(orders[0]) == list(range(24)) and sorted(orders[1]) == list(range(24))
    assert orders[0] == orders[2] != orders[1]
    assert orders[0] != list(range(24))


def test_interleave_is_deterministic_for_a_seed(monkeypatch):
    runs = []
    for seed in (5, 6, 5):
        _use(monkeypatch, "interleave", seed)
        runs.append(list(sk.run_ticket_lock(10)[1]))
    assert runs[0] == runs[2] != runs[1]
    assert sorted(runs[1]) == list(range(10))


def test_interleave_runs_more_blocks_than_it_keeps_resident(monkeypatch):
    _use(monkeypatch, "interleave", 3)
    per_lock = sched.WIDTH // 5 + 2                     # 5 * per_lock blocks > WIDTH
    acc, locks = sk.run_lock(sk.locked_accumulate, blocks=5 * per_lock, nlocks=5)
    np.testing.assert_array_equal(acc, np.full((5, 16), per_lock, np.float32))
    np.testing.assert_array_equal(locks, 0)


# --------------------------------------------------------------------------------------------------
# Failures and hangs under interleave
@tile.entry
def spin_forever(locks):
    while tile.atomic_cas(locks, tile.bid(0) % 2, 0, 1, memory_order=tile.MemoryOrder.ACQUIRE) == 1:
        pass


def test_a_lock_nobody_gives_back_stops_with_a_clear_error(monkeypatch):
    _use(monkeypatch, "interleave")
    monkeypatch.setattr(sched, "STEP_LIMIT", 100)
    before = threading.active_count()
    locks = api.ones((2,), tile.int32).sync()            # both locks already held
    with pytest.raises(SimulatorHangError) as info:
        spin_forever(tile.atomic(locks)).grid((3, 1, 1)).sync()
    msg = str(info.value)
    assert "TILEJIT_SIM_SCHEDULE=interleave" in msg and "repeated 100 memory operations" in msg
    assert "spinning on a lock" in msg and "atomic_cas_tko" in msg and "spin_forever" in msg
    assert threading.active_count() == before           # every block's thread has ended


@tile.entry
def long_sum(z, x):
    acc = tile.zeros((16,), tile.float32)
    for j in range(x.shape[0] // 16):
        acc += x.load((j,), (16,))
    z.store(acc)


def test_a_long_block_on_new_data_is_not_a_hang(monkeypatch):
    _use(monkeypatch, "interleave")
    monkeypatch.setattr(sched, "STEP_LIMIT", 5)
    z = api.zeros((32,)).sync()
    long_sum(z.partition((16,)), api.ones((16 * 64,)).sync()).sync()   # 64 loads per block
    np.testing.assert_array_equal(z.to_numpy(), 64.0)


@tile.entry
def spin_storing_the_same_value(locks, scratch):
    while tile.atomic_cas(locks, 0, 0, 1, memory_order=tile.MemoryOrder.ACQUIRE) == 1:
        tile.scatter(scratch, tile.bid(0), 7)


def test_storing_the_same_value_while_spinning_is_no_progress(monkeypatch):
    _use(monkeypatch, "interleave")
    monkeypatch.setattr(sched, "STEP_LIMIT", 100)
    with pytest.raises(SimulatorHangError):
        spin_storing_the_same_value(tile.atomic(api.ones((1,), tile.int32).sync()),
                                    tile.atomic(api.zeros((2,), tile.int32).sync())
                                    ).grid((2, 1, 1)).sync()


@tile.entry
def check_positive(x):
    tile.assert_(x.load((tile.bid(0),), (4,)) > 0, "x must be positive")


def test_a_failing_block_ends_the_launch_with_its_error(monkeypatch):
    _use(monkeypatch, "interleave", 1)
    before = threading.active_count()
    xn = np.ones(40, np.float32)
    xn[22] = -1                                          # block 5
    with pytest.raises(DeviceAssertionError) as info:
        check_positive(api.from_numpy(xn).sync()).grid((10, 1, 1)).sync()
    assert info.value.block == (5, 0, 0) and "x must be positive" in str(info.value)
    assert threading.active_count() == before


def test_a_memory_fault_names_its_block(monkeypatch, dev):
    _use(monkeypatch, "interleave", 2)
    f, b = fn("bad", [ptr("i32")])
    bx = b.get_tile_block_id()[0]
    p = b.offset(f.args[0], b.binary("muli", bx, b.constant(1 << 20, I32)))
    b.store_ptr_tko(p, bx)
    b.return_()
    with pytest.raises(SimulatorError) as info:
        run(Module("bad", [f]), (3, 1, 1), [dev.put(np.zeros(4, np.int32))])
    assert "out-of-bounds" in str(info.value) and info.value.block in ((1, 0, 0), (2, 0, 0))


# --------------------------------------------------------------------------------------------------
# The weak memory model, operation by operation
@pytest.fixture
def wm(dev):
    w = WeakMemory(memory)
    w.current = Agent((0, 0, 0), 0)
    return w


def test_a_weak_store_waits_in_its_block_until_a_token_needs_it(wm, dev):
    p = dev.put(np.zeros(4, np.int32))
    addrs = p + 4 * np.arange(4)
    wm.mode, wm.dep = BUFFER, None
    wm.store(addrs, np.array([1, 2, 3, 4], np.int32), np.int32)
    wm.mode = NOW
    assert (dev.get(p, (4,), np.int32) == 0).all()      # not visible yet
    t = wm.resolve(Tok(0, (wm.last,)))
    assert t == 1 and wm.clock == 1
    np.testing.assert_array_equal(dev.get(p, (4,), np.int32), [1, 2, 3, 4])


def test_buffered_stores_are_performed_after_what_they_depend_on(wm, dev):
    p = dev.put(np.zeros(2, np.int32))
    addrs = p + 4 * np.arange(2)
    wm.mode, wm.dep = BUFFER, None
    wm.store(addrs, np.array([1, 1], np.int32), np.int32)
    first = Tok(0, (wm.last,))
    wm.dep = first                                     # the second store depends on the first
    wm.store(addrs, np.array([2, 2], np.int32), np.int32, mask=np.array([True, False]))
    second = Tok(0, (wm.last,))
    wm.mode = NOW
    assert wm.resolve(second) == 2                     # both performed, first then second
    np.testing.assert_array_equal(dev.get(p, (2,), np.int32), [2, 1])
    assert wm.resolve(first) == 1


def test_finish_makes_the_rest_visible_in_program_order(wm, dev):
    p = dev.put(np.zeros(1, np.int64))
    wm.mode = BUFFER
    for v in (5, 6, 7):
        wm.store(np.array([p]), np.array([v]), np.int64)
    wm.mode = NOW
    wm.finish(wm.current)
    assert dev.get(p, (1,), np.int64)[0] == 7 and wm.clock == 3 and not wm.current.buffer


def test_a_weak_load_reads_memory_as_it_was(wm, dev):
    p = dev.put(np.zeros(4, np.int32))
    addrs = p + 4 * np.arange(4)
    wm._write(addrs, np.array([1, 1, 1, 1], np.int32), np.dtype(np.int32), None)     # time 1
    wm._write(addrs[:2], np.array([2, 2], np.int32), np.dtype(np.int32), None)       # time 2
    wm.mode = EARLY
    for t, expect in ((0, [0, 0, 0, 0]), (1, [1, 1, 1, 1]), (2, [2, 2, 1, 1])):
        wm.as_of = t
        np.testing.assert_array_equal(wm.load(addrs, np.int32), expect)
    wm.as_of = 0                                       # bytes of a wider element; a mask
    np.testing.assert_array_equal(wm.load(np.array([p]), np.int64), [0])
    np.testing.assert_array_equal(
        wm.load(addrs, np.int32, mask=np.array([True, False, True, False]), other=-9),
        [0, -9, 0, -9])
    wm.mode = NOW
    np.testing.assert_array_equal(wm.load(addrs, np.int32), [2, 2, 1, 1])
    wm.trim(1)                                         # no block reads before time 1 any more
    assert wm.log_times == [2]


def test_writes_that_change_nothing_leave_no_history(wm, dev):
    p = dev.put(np.array([3], np.int32))
    wm._write(np.array([p]), np.array([3], np.int32), np.dtype(np.int32), None)
    assert wm.clock == 1 and wm.log == [] and wm.progress == 0


def test_tokens_join_and_resolve_to_the_latest_dependency(wm, dev):
    p = dev.put(np.zeros(2, np.int32))
    wm.current = Agent((0, 0, 0), 4)
    assert wm.resolve(None) == 4 and wm.resolve(Tok(1)) == 4      # never before the block began
    wm.mode = BUFFER
    wm.store(np.array([p]), np.array([1], np.int32), np.int32)
    a = Tok(0, (wm.last,))
    wm.store(np.array([p + 4]), np.array([1], np.int32), np.int32)
    b = Tok(0, (wm.last,))
    wm.mode = NOW
    joined = Tok(0, (a, Tok(9), b))
    assert wm.resolve(joined) == 9 and wm.clock == 2 and joined.deps is None


@pytest.mark.parametrize("schedule", ["serial", "shuffle"])
def test_a_lock_nobody_gives_back_stops_one_block_schedules_too(monkeypatch, schedule):
    """One block at a time: the spinning block is the only one that could change anything."""
    _use(monkeypatch, schedule, 3)
    monkeypatch.setattr(sched, "STEP_LIMIT", 100)
    locks = api.ones((2,), tile.int32).sync()
    with pytest.raises(SimulatorHangError) as info:
        spin_forever(tile.atomic(locks)).grid((3, 1, 1)).sync()
    msg = str(info.value)
    assert f"TILEJIT_SIM_SCHEDULE={schedule}" in msg and "repeated 100 memory operations" in msg
    assert "spinning on a lock" in msg and "TILEJIT_SIM_SCHEDULE=interleave" in msg
    assert "kernel 'spin_forever'" in msg and "atomic_cas_tko" in msg
    assert "while tile.atomic_cas(locks" in msg                      # the spinning line
    assert info.value.block is not None and len(info.value.block) == 3


@tile.entry
def spin_on_a_flag(flag, z):
    n = 0
    while tile.load(flag, (0,), (1,)).item() == 0:         # read with a plain load
        n += 1
    z.store(tile.full((1,), 1, tile.int32))


def test_a_flag_nobody_sets_stops_the_default_schedule(monkeypatch):
    monkeypatch.delenv("TILEJIT_SIM_SCHEDULE", raising=False)
    monkeypatch.setattr(sched, "STEP_LIMIT", 50)
    flag, z = api.zeros((1,), tile.int32).sync(), api.zeros((1,), tile.int32).sync()
    with pytest.raises(SimulatorHangError, match="TILEJIT_SIM_SCHEDULE=serial") as info:
        spin_on_a_flag(flag, z.partition((1,))).sync()
    assert "spin_on_a_flag" in str(info.value) and info.value.block == (0, 0, 0)


@tile.entry
def lock_then_add(acc, locks, x, BN: tile.Constant[int]):
    g = tile.bid(0) % locks.shape[0]
    t = x.load((tile.bid(0), 0), (1, BN))
    while tile.atomic_cas(locks, g, 0, 1, memory_order=tile.MemoryOrder.ACQUIRE) == 1:
        pass
    cur = acc.partition((1, BN)).load((g, 0))
    acc.partition((1, BN)).store((g, 0), cur + t)
    tile.atomic_xchg(locks, g, 0, memory_order=tile.MemoryOrder.RELEASE)


@tile.entry
def while_over_new_data(z, x):
    acc = tile.zeros((16,), tile.float32)
    j = 0
    while j < x.shape[0] // 16:
        acc += x.load((j,), (16,))
        j += 1
    z.store(acc)


@pytest.mark.parametrize("schedule", ["serial", "shuffle"])
def test_locks_given_back_and_long_loops_are_not_hangs(monkeypatch, schedule):
    _use(monkeypatch, schedule, 1)
    monkeypatch.setattr(sched, "STEP_LIMIT", 5)
    acc, locks = api.zeros((4, 16)).sync(), api.zeros((4,), tile.int32).sync()
    lock_then_add(tile.atomic(acc), tile.atomic(locks), api.ones((32, 16)).sync(),
                  16).grid((32, 1, 1)).sync()
    assert (acc.to_numpy() == 8).all()
    z = api.zeros((32,)).sync()
    while_over_new_data(z.partition((16,)), api.ones((16 * 64,)).sync()).sync()
    np.testing.assert_array_equal(z.to_numpy(), 64.0)
