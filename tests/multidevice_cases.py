"""Several devices: every device works, arrays move between devices, mixing devices in a launch is
refused, and torch.distributed programs run tilejit kernels.

The test bodies, written once and collected by two modules that each provide the ``multi``
fixture (a :class:`Devices`): ``tests/gpu/test_multigpu.py`` runs them on two GPUs (torch CUDA
tensors as the foreign arrays) and ``tests/test_multidevice_simulator.py`` on two simulated
devices in CPU CI (``TILEJIT_SIM_DEVICES=2``; ``__cuda_array_interface__`` objects over simulated
memory as the foreign arrays). Device names in messages come from ``Device.label`` (``cuda:1``,
``sim:1``), so each assertion reads the same on both.
"""
import gc
import os
import re
import subprocess
import sys
import threading

import numpy as np
import pytest

import tilejit as tile
import tilejit.cutile as ct
from tilejit import api

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
EXAMPLE = os.path.join(ROOT, "examples", "distributed_matmul.py")


class Devices:
    """What differs between two GPUs and two simulated devices: foreign arrays, the producer's
    stream, the caller's current device, and how the distributed example is started."""

    def array(self, host: np.ndarray, device: int):
        """A foreign (not tilejit) device array on ``device`` holding ``host``'s values."""
        raise NotImplementedError

    def numpy(self, arr) -> np.ndarray:
        """The values of a foreign array made by :meth:`array`."""
        raise NotImplementedError

    def producer_stream(self, device: int):
        """The foreign producer's stream on ``device``, as a tile.Stream."""
        raise NotImplementedError

    def work_elsewhere(self, device: int, k: float):
        """Foreign work on ``device`` from this thread (which it may make current there);
        returns a callable giving its result, ``k``."""
        raise NotImplementedError

    def set_current(self, device: int) -> None:
        """Make ``device`` the calling thread's current device (no-op without one)."""

    def current(self):
        """The calling thread's current device as the foreign library sees it (None: no such
        thing, as on the simulator)."""
        return None

    #: how examples/distributed_matmul.py reports where its ranks ran
    distributed_on = ""

    def distributed_command(self):
        """The command that runs examples/distributed_matmul.py on two devices."""
        raise NotImplementedError


def run_distributed_example(multi):
    """Run the example as :meth:`Devices.distributed_command` says; return the process."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run(multi.distributed_command(), capture_output=True, text=True,
                          timeout=600, env=env, cwd=ROOT)


@tile.entry
def axpy(z, x, a):
    z.store(tile.load_tile_like(x, z) * a + tile.load_tile_like(z, z))


@tile.entry
def axpy_each(z, x, a):      # only test_every_device_runs_api_and_kernels: compiles counted
    z.store(tile.load_tile_like(x, z) * a + tile.load_tile_like(z, z))


def test_every_device_runs_api_and_kernels(multi):
    before = axpy_each.stats.compiles
    for d in range(tile.Device.count()):
        s = tile.Device(d).new_stream()
        t = api.full((1 << 20,), 2.0).sync_on(s)
        assert t.device is tile.Device(d) and (t.to_numpy() == 2.0).all()
        z = api.ones((4096,)).sync_on(s)
        axpy_each(z.partition((1024,)), t[:4096], 3.0).sync_on(s)
        assert (z.to_numpy() == 7.0).all()
    assert axpy_each.stats.compiles == before + 1   # one compile per architecture...
    exes = {dev: exe for (_, dev, _), exe in axpy_each._executables.items()}
    assert len({id(exes[tile.Device(d)]) for d in range(tile.Device.count())}) == \
        tile.Device.count()                          # ...loaded on each device


@pytest.fixture
def restore_default_policy():
    from tilejit.deviceops import scheduling
    saved = dict(scheduling._defaults)
    yield
    scheduling._defaults.clear()
    scheduling._defaults.update(saved)


def test_policies_and_default_policy_per_device(multi, restore_default_policy):
    pol = tile.StreamPoolRoundRobin(tile.Device(1), n=2)
    t = api.arange(1000).schedule(pol).result()
    assert t.device is tile.Device(1) and t.to_numpy()[-1] == 999
    tile.set_default_policy(tile.SingleStream(tile.Device(1)), device=1)
    z = api.zeros((256,)).sync_on(pol.next_stream())
    axpy(z.partition((128,)), api.ones((256,)).sync_on(pol.next_stream()), 5.0) \
        .sync_on(pol.next_stream())
    assert (z.to_numpy() == 5.0).all()
    w = api.zeros((256,)).sync_on(pol.next_stream())
    axpy(w.partition((128,)), z, 1.0).sync()          # the arguments' device picks the policy
    assert (w.to_numpy() == 5.0).all()


def test_copies_between_devices(multi):
    a = np.random.default_rng(0).standard_normal((300, 200)).astype(np.float32)
    t0 = api.from_numpy(a).sync_on(tile.Device(0).new_stream())
    t1 = t0.to(1).sync()
    assert t1.device is tile.Device(1) and np.array_equal(t1.to_numpy(), a)
    t1b = api.dup(t0[10:50, 20:120], device=1).sync()            # strided source
    assert t1b.device is tile.Device(1) and np.array_equal(t1b.to_numpy(), a[10:50, 20:120])
    dst = api.zeros((300, 200)).sync_on(tile.Device(1).new_stream())
    api.memcpy(dst[::2, 1:101], t0[::2, :100]).sync_on(tile.Device(0).new_stream())
    expect = np.zeros_like(a)
    expect[::2, 1:101] = a[::2, :100]
    assert np.array_equal(dst.to_numpy(), expect)                 # strided on both sides
    back = dst.to(0).sync()
    assert back.device is tile.Device(0) and np.array_equal(back.to_numpy(), expect)


def test_mixing_devices_in_one_launch_is_refused(multi):
    s0 = tile.Device(0).new_stream()
    z = api.zeros((256,)).sync_on(s0)
    x1 = api.ones((256,)).sync_on(tile.Device(1).new_stream())
    on0, on1 = tile.Device(0).label, tile.Device(1).label
    with pytest.raises(tile.TensorError, match=f"argument 'x' is on {on1} but the launch runs on "
                                               f"{on0}"):
        axpy(z.partition((128,)), x1, 1.0).sync_on(s0)
    assert (z.to_numpy() == 0.0).all()                 # nothing ran


def test_foreign_arrays_on_the_second_device(multi):
    xs = np.random.default_rng(1).standard_normal(4096).astype(np.float32)
    x = multi.array(xs, 1)
    z = multi.array(np.zeros(4096, np.float32), 1)
    t = tile.from_dlpack(x)                      # torch's current device is 0: no BufferError
    assert t.device is tile.Device(1)
    s1 = multi.producer_stream(1)
    axpy(tile.from_dlpack(z).partition((1024,)), x, 2.0).sync_on(s1)
    np.testing.assert_allclose(multi.numpy(z), 2 * xs, rtol=1e-6)
    axpy(tile.from_dlpack(z).partition((1024,)), x, 1.0).sync()  # default: the producer's device
    np.testing.assert_allclose(multi.numpy(z), 3 * xs, rtol=1e-6)
    with pytest.raises(tile.TensorError, match=tile.Device(1).label):
        axpy(tile.from_dlpack(multi.array(np.zeros(4096, np.float32), 0)).partition((1024,)), x,
             1.0).sync_on(tile.Device(0).new_stream())


def test_foreign_arrays_of_two_devices_are_refused(multi):
    x = multi.array(np.ones(256, np.float32), 1)
    z = multi.array(np.zeros(256, np.float32), 0)
    with pytest.raises(tile.TensorError, match=tile.Device(1).label):
        axpy(tile.from_dlpack(z).partition((128,)), x, 1.0).sync_on(tile.Device(0).new_stream())
    with pytest.raises(tile.TensorError, match=tile.Device(1).label):
        axpy(tile.partition(z, (128,)), x, 1.0).sync_on(tile.Device(0).new_stream())
    assert (multi.numpy(z) == 0.0).all()


def test_threads_on_two_devices_interleaved_with_foreign_work(multi):
    errors = []

    def work(dev, other):
        try:
            s = tile.Device(dev).new_stream()
            for k in range(20):
                junk = multi.work_elsewhere(other, float(k))  # torch moves this thread elsewhere
                z = api.zeros((2048,)).sync_on(s)
                axpy(z.partition((512,)), api.full((2048,), float(k)).sync_on(s), 2.0).sync_on(s)
                assert z.device is tile.Device(dev)
                assert (z.to_numpy() == 2.0 * k).all() and junk() == k
        except Exception as e:
            errors.append(e)

    ts = [threading.Thread(target=work, args=(0, 1)), threading.Thread(target=work, args=(1, 0))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == []


def test_graphs_on_the_second_device(multi):
    s = tile.Device(1).new_stream()
    x = api.full((1024,), 1.0).sync_on(s)
    z = api.zeros((1024,)).sync_on(s)
    g = axpy(z.partition((256,)), x, 1.0).graph_on(s)
    for _ in range(3):
        g.launch().sync_on(s)
    assert (z.to_numpy() == 4.0).all()                 # captured run + 3 replays


def test_torch_distributed_example(multi):
    pytest.importorskip("torch", reason="the example runs torch.distributed")
    r = run_distributed_example(multi)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    last = r.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"distributed_matmul: row-sharded and K-sharded \d+x512x256 matmuls, one "
                        rf"data-parallel step on \d+ {re.escape(multi.distributed_on)} ok",
                        last), r.stdout[-3000:]


def test_tilejit_leaves_the_callers_current_device_alone(multi):
    """Work on device 1 from a thread whose current device is 0 (torch's, the runtime's) must not
    move that thread to device 1 — torch would then put "cuda" tensors on the wrong GPU. (The
    simulator has no current device; there the work on device 1 is what is checked.)"""
    multi.set_current(0)
    s1 = tile.Device(1).new_stream()
    t = api.full((4096,), 1.0).sync_on(s1)
    z = api.zeros((4096,)).sync_on(s1)
    axpy(z.partition((1024,)), t, 2.0).sync_on(s1)
    assert (z.to_numpy() == 2.0).all()
    x1 = multi.array(np.ones(4096, np.float32), 1)
    out = multi.array(np.zeros(4096, np.float32), 1)
    axpy(tile.partition(out, (1024,)), x1, 1.0).sync()    # runs on device 1: the arrays' device
    assert (multi.numpy(out) == 1.0).all()
    tile.from_dlpack(x1)
    del t
    gc.collect()                                   # finalizers free device-1 memory here
    assert multi.current() in (None, 0)


# --- the default device is the calling thread's current device (issue 24) -------------------------
@pytest.fixture
def keep_current_device():
    """The test may move the thread's current device; it gets back what it had (the simulator's
    ``backend.force`` restores it too)."""
    before = tile.current_device()
    yield
    before.make_current()


@tile.entry
def double(z, x):
    z.store(tile.load_tile_like(x, z) * 2.0)


def test_ops_without_a_device_run_on_the_current_device(multi, keep_current_device):
    from tilejit.deviceops.scheduling import default_stream
    d0, d1 = tile.Device(0), tile.Device(1)
    xs = np.arange(4096, dtype=np.float32)
    d0.make_current()
    assert tile.current_device() is d0
    with d1.current():
        assert tile.current_device() is d1 and tile.Device() is d1
        assert api.zeros((64,)).sync().device is d1
        assert api.from_numpy(xs).sync().device is d1
        assert api.empty((64,)).sync().device is d1
        assert default_stream().device is d1
        out = np.zeros(4096, np.float32)
        op = double(tile.partition(out, (1024,)), xs)      # NumPy arguments only
        assert op._default_stream().device is d1
        op.sync()
        np.testing.assert_array_equal(out, 2 * xs)
        out[:] = 0
        double(tile.partition(out, (1024,)), xs).sync()     # again (the C path, if any)
        np.testing.assert_array_equal(out, 2 * xs)
        assert tile.StreamPoolRoundRobin().device is d1 and tile.SingleStream().device is d1
    assert tile.current_device() is d0                       # the block gave device 0 back
    assert api.zeros((64,)).sync().device is d0 and default_stream().device is d0
    out = np.zeros(4096, np.float32)
    op = double(tile.partition(out, (1024,)), xs)
    assert op._default_stream().device is d0
    op.sync()
    np.testing.assert_array_equal(out, 2 * xs)
    d1.make_current()                                        # persists, call after call
    for _ in range(2):
        assert api.zeros((64,)).sync().device is d1 and default_stream().device is d1


def test_set_default_policy_without_a_device_is_the_current_devices(
        multi, restore_default_policy, keep_current_device):
    from tilejit.deviceops import scheduling
    d0, d1 = tile.Device(0), tile.Device(1)
    policy0 = scheduling.default_policy(0)
    mine = tile.SingleStream(d1)
    d1.make_current()
    tile.set_default_policy(mine)
    assert scheduling.default_policy() is mine and scheduling.default_policy(1) is mine
    assert scheduling.has_user_policy() and scheduling.has_user_policy(1)
    assert scheduling.default_policy(0) is policy0 and not scheduling.has_user_policy(0)
    assert api.zeros((64,)).sync().device is d1 and scheduling.default_stream() is mine.stream
    d0.make_current()
    assert scheduling.default_policy() is policy0 and not scheduling.has_user_policy()
    assert scheduling.default_stream() is not mine.stream
    tile.set_default_policy(tile.SingleStream(d0), device=0)          # explicit: still works
    assert scheduling.default_policy(1) is mine


def test_a_new_thread_starts_on_device_0(multi, keep_current_device):
    from tilejit.deviceops.scheduling import default_stream
    d0, d1 = tile.Device(0), tile.Device(1)
    d1.make_current()
    seen, errors = [], []

    def work():
        try:
            seen.append((tile.current_device(), api.zeros((64,)).sync().device,
                         default_stream().device))
            with d1.current():
                seen.append(api.zeros((64,)).sync().device)
            seen.append(tile.current_device())
        except Exception as e:
            errors.append(e)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert errors == [] and seen == [(d0, d0, d0), d1, d0]
    assert tile.current_device() is d1                  # the thread changed nothing here


def test_explicit_and_argument_devices_win_over_the_current_device(multi, keep_current_device):
    from tilejit.deviceops.scheduling import default_policy, default_stream
    d0, d1 = tile.Device(0), tile.Device(1)
    d0.make_current()
    s0 = d0.new_stream()
    z0 = api.zeros((4096,)).sync_on(s0)
    x0 = api.full((4096,), 1.0).sync_on(s0)
    fz = multi.array(np.zeros(4096, np.float32), 0)
    fx = multi.array(np.ones(4096, np.float32), 0)
    with d1.current():
        assert api.zeros((64,)).sync_on(s0).device is d0
        assert api.dup(x0).sync().device is d0 and x0.to(0).sync().device is d0
        assert api.dup(x0, device=1).sync().device is d1
        assert default_stream(0).device is d0 and default_stream(d0).device is d0
        assert default_policy(0).device is d0 and tile.StreamPoolRoundRobin(0).device is d0
        double(z0.partition((1024,)), x0).sync()             # the tensors' device
        assert (z0.to_numpy() == 2.0).all()
        p = double(z0.partition((1024,)), z0.to(0).sync()).prepare()
        assert p.stream.device is d0
        p.launch()
        p.close()
        assert (z0.to_numpy() == 4.0).all()
        g = double(z0.partition((1024,)), x0).graph()        # captured (and run once) on d0
        assert g.stream.device is d0
        g.launch().sync()                                    # replayed on the graph's device
        assert (z0.to_numpy() == 2.0).all()
        double(tile.partition(fz, (1024,)), fx).sync()       # foreign arrays: their device
        assert (multi.numpy(fz) == 2.0).all()
        assert tile.current_device() is d1                   # none of it moved this thread
    assert multi.current() in (None, 0)


def test_the_callers_current_device_is_followed(multi, keep_current_device):
    """The foreign library's spelling (torch.cuda.set_device on GPUs) moves tilejit's default
    device, and tilejit's work leaves it where the caller put it."""
    d0, d1 = tile.Device(0), tile.Device(1)
    xs = np.arange(4096, dtype=np.float32)
    multi.set_current(1)
    try:
        assert tile.current_device() is d1
        assert api.zeros((64,)).sync().device is d1
        out = np.zeros(4096, np.float32)
        double(tile.partition(out, (1024,)), xs).sync()
        np.testing.assert_array_equal(out, 2 * xs)
        s0 = d0.new_stream()
        assert api.ones((64,)).sync_on(s0).device is d0      # work on device 0...
        assert multi.current() in (None, 1)                   # ...left the caller on device 1
        assert tile.current_device() is d1
    finally:
        multi.set_current(0)
    assert tile.current_device() is d0 and api.zeros((64,)).sync().device is d0


@ct.kernel
def ct_scale(x, y, SCALE: ct.Constant[float], TILE: ct.Constant[int]):
    ct.store(y, index=(ct.bid(0),), tile=ct.load(x, index=(ct.bid(0),), shape=(TILE,)) * SCALE)


def test_ct_launch_on_a_default_stream_follows_the_current_device(multi, keep_current_device):
    """``ct.launch(0, ...)``: stream 0 is the current device's default stream, so the stream
    memo must not keep the first device it saw (C leaves these handles to Python)."""
    from tilejit.cutile import _kernel as ctk
    xs = np.arange(2048, dtype=np.float32)
    for dev in (1, 0, 1):
        s = tile.Device(dev).new_stream()
        x = api.from_numpy(xs).sync_on(s)
        y = api.zeros((2048,)).sync_on(s)
        with tile.Device(dev).current():
            ct.launch(0, (2,), ct_scale, (x, y, 3.0, 1024))    # a mixing error on another device
            assert ctk._streams[(0, dev)].device is tile.Device(dev)
        np.testing.assert_array_equal(y.to_numpy(), 3 * xs)


__all__ = ["restore_default_policy", "keep_current_device"] + \
    [n for n in dir() if n.startswith("test_")]
