"""The default device is the calling thread's current device (issue 24): the current CUDA
context's device on a GPU, a per-thread simulated device on the simulator (``Device(n)
.make_current()``, ``with Device(n).current():``), 0 in a thread that never chose one. The rules
shared with two GPUs are in tests/multidevice_cases.py; here the simulator's bookkeeping, the
defaults that follow the current device, and the GPU rule against a fake driver."""
import threading

import numpy as np
import pytest

import tilejit as tile
from tilejit import api
from tilejit.deviceops import scheduling
from tilejit.deviceops.deviceop import account_for
from tilejit.runtime import backend, device as _device, driver
from tilejit.runtime.stream import Stream


@pytest.fixture
def two():
    with backend.force("simulator", sim_devices=2):
        yield tile.Device(0), tile.Device(1)


@tile.entry
def double(z, x):
    z.store(tile.load_tile_like(x, z) * 2.0)


# --- the simulator's current device -----------------------------------------------------------------
def test_blocks_nest_and_give_the_previous_device_back(two):
    d0, d1 = two
    assert _device.current_ordinal() == 0 and tile.current_device() is d0
    with d1.current():
        with d0.current():
            assert tile.current_device() is d0
        assert tile.current_device() is d1
        with pytest.raises(RuntimeError):
            with d0.current():
                raise RuntimeError("boom")
        assert tile.current_device() is d1
    assert tile.current_device() is d0


def test_force_gives_the_thread_its_current_device_back():
    with backend.force("simulator", sim_devices=2):
        tile.Device(1).make_current()
        assert tile.current_device().ordinal == 1
        with backend.force("simulator", sim_devices=2):
            tile.Device(0).make_current()
        assert tile.current_device().ordinal == 1
    with backend.force("simulator"):
        assert tile.current_device() is tile.Device(0)


def test_each_thread_has_its_own_current_device(two):
    d0, d1 = two
    d1.make_current()
    seen = {}
    go = threading.Barrier(2)

    def work(n):
        go.wait()
        seen[n, "start"] = tile.current_device()
        tile.Device(n).make_current()
        go.wait()                                   # both threads have chosen
        seen[n, "end"] = api.zeros((8,)).sync().device

    ts = [threading.Thread(target=work, args=(n,)) for n in (0, 1)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert seen == {(0, "start"): d0, (1, "start"): d0, (0, "end"): d0, (1, "end"): d1}
    assert tile.current_device() is d1


def test_defaults_that_follow_the_current_device(two):
    d0, d1 = two
    with d1.current():
        assert tile.Device() is d1 and tile.Device(None) is d1 and tile.Device(0) is d0
        assert tile.Event().device is d1
        assert tile.Device.borrow_raw(1234) is d1                 # no contexts to look up
        assert tile.Device.borrow_raw(1234, ordinal=0) is d0
        assert Stream.borrow_raw(0).device is d1                  # a default stream: the current
        assert tile.from_dlpack(np.ones(4, np.float32)).device is d1   # host data is copied in
        assert tile.value(3).graph().stream.device is d1
        assert scheduling.default_policy() is scheduling.default_policy(1)


def test_replays_and_raw_launches_run_on_their_own_device(two):
    d0, d1 = two
    s1 = d1.new_stream()
    z, x = api.zeros((256,)).sync_on(s1), api.full((256,), 1.0).sync_on(s1)
    g = double(z.partition((64,)), x).graph_on(s1)
    replay = g.launch()
    assert replay._default_stream().device is d1             # current device: 0
    replay.sync()
    assert (z.to_numpy() == 2.0).all()

    class Function:                         # what AsyncKernelLaunch reads of a loaded function
        device = d1
    raw = tile.AsyncKernelLaunch(Function())
    account_for(raw)                        # never run (no GPU)
    assert raw._default_stream().device is d1


def test_launches_with_device_arguments_never_ask_for_the_current_device(two, monkeypatch):
    """The hot path: a launch whose arguments have a device takes theirs without a driver call."""
    d0, d1 = two
    s1 = d1.new_stream()
    z, x = api.zeros((256,)).sync_on(s1), api.full((256,), 3.0).sync_on(s1)
    double(z.partition((64,)), x).sync()                  # compiled and loaded first

    def boom():
        raise AssertionError("asked for the current device")
    monkeypatch.setattr(_device, "current_ordinal", boom)
    for _ in range(2):
        double(z.partition((64,)), x).sync()
        double(z.partition((64,)), x).submit_on(s1).result()
    assert (z.to_numpy() == 6.0).all()
    assert api.dup(x).sync().device is d1 and api.fill(z, 1.0).sync().device is d1
    monkeypatch.undo()
    with pytest.raises(AssertionError, match="current device"):
        monkeypatch.setattr(_device, "current_ordinal", boom)
        api.zeros((4,)).sync()                            # no device of its own: it asks


def test_a_current_device_beyond_the_count_is_an_error_that_says_so():
    errors = []
    with backend.force("simulator", sim_devices=2):
        gate, done = threading.Event(), threading.Event()

        def stay_on_1():                     # a thread that outlives the two devices
            tile.Device(1).make_current()
            gate.set()
            done.wait(60)
            try:
                api.zeros((4,)).sync()
            except tile.ContextError as e:
                errors.append(str(e))
        t = threading.Thread(target=stay_on_1)
        t.start()
        gate.wait(60)
    with backend.force("simulator", sim_devices=1):
        done.set()
        t.join(60)
    assert len(errors) == 1 and "simulated device 1 does not exist" in errors[0]


# --- on a GPU: the current context's device (a fake driver) ------------------------------------------
class Ctx:
    def __init__(self, n):
        self.n = n

    def __int__(self):
        return self.n


class FakeDriver:
    """cuCtxGetCurrent / cuCtxGetDevice over a table of contexts (handle -> device)."""

    def __init__(self, devices):
        self.devices = devices
        self.current = 0
        self.get_device_calls = 0
        self.fail = None

    def cuCtxGetCurrent(self):
        if self.fail == "current":
            return (201, None)
        return driver.SUCCESS, Ctx(self.current)

    def cuCtxGetDevice(self):
        self.get_device_calls += 1
        if self.fail == "device":
            return (201, None)
        return driver.SUCCESS, self.devices[self.current]


@pytest.fixture
def fake_gpu(monkeypatch):
    d = FakeDriver({0x100: 0, 0x200: 1, 0x300: 1})
    monkeypatch.setattr(driver, "drv", d)
    monkeypatch.setattr(driver, "SUCCESS", 0)
    monkeypatch.setattr(_device, "_primary_ordinals", {0x100: 0, 0x200: 1})  # tilejit retains
    with backend.force("cuda"):
        yield d


def test_a_gpu_thread_without_a_context_is_on_device_0(fake_gpu):
    assert _device.current_ordinal() == 0 and fake_gpu.get_device_calls == 0


def test_a_primary_context_is_one_driver_call(fake_gpu):
    for ctx, ordinal in ((0x200, 1), (0x100, 0), (0x200, 1)):
        fake_gpu.current = ctx
        assert _device.current_ordinal() == ordinal
    assert fake_gpu.get_device_calls == 0         # torch's / CuPy's contexts: a table lookup


def test_another_context_asks_the_driver_every_time(fake_gpu):
    """A context tilejit does not retain may be destroyed and its handle reused on another
    device, so its device is never remembered."""
    fake_gpu.current = 0x300
    assert _device.current_ordinal() == 1 and _device.current_ordinal() == 1
    assert fake_gpu.get_device_calls == 2
    assert 0x300 not in _device._primary_ordinals


@pytest.mark.parametrize("fail", ["current", "device"])
def test_a_driver_error_means_device_0(fake_gpu, fail):
    fake_gpu.current, fake_gpu.fail = 0x300, fail
    assert _device.current_ordinal() == 0


def test_no_driver_means_device_0(monkeypatch):
    monkeypatch.setattr(driver, "drv", None)
    with backend.force("cuda"):
        assert _device.current_ordinal() == 0
