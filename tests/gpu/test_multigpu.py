"""Several GPUs: every device works, arrays move between devices, and torch.distributed programs
run tilejit kernels. Marked ``multigpu``: skipped on machines with fewer than two GPUs."""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import tilejit as tile
from tilejit import api

pytestmark = [pytest.mark.gpu, pytest.mark.multigpu]

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


@pytest.fixture(autouse=True)
def _two_gpus():
    if tile.Device.count() < 2:
        pytest.skip(f"needs two GPUs (found {tile.Device.count()})")


@tile.entry
def axpy(z, x, a):
    z.store(tile.load_tile_like(x, z) * a + tile.load_tile_like(z, z))


def test_every_device_runs_api_and_kernels():
    for d in range(tile.Device.count()):
        s = tile.Device(d).new_stream()
        t = api.full((1 << 20,), 2.0).sync_on(s)
        assert t.device is tile.Device(d) and (t.to_numpy() == 2.0).all()
        z = api.ones((4096,)).sync_on(s)
        axpy(z.partition((1024,)), t[:4096], 3.0).sync_on(s)
        assert (z.to_numpy() == 7.0).all()
    assert axpy.stats.compiles == 1          # one compile per architecture, loaded on each device


@pytest.fixture
def restore_default_policy():
    from tilejit.ops import scheduling
    saved = dict(scheduling._defaults)
    yield
    scheduling._defaults.clear()
    scheduling._defaults.update(saved)


def test_policies_and_default_policy_per_device(restore_default_policy):
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


def test_copies_between_devices():
    a = np.random.default_rng(0).standard_normal((300, 200)).astype(np.float32)
    t0 = api.from_numpy(a).sync_on(tile.Device(0).new_stream())
    t1 = t0.to(1).sync()
    assert t1.device is tile.Device(1) and np.array_equal(t1.to_numpy(), a)
    t1b = api.dup(t0[10:50, 20:120], device=1).sync()            # strided source
    assert np.array_equal(t1b.to_numpy(), a[10:50, 20:120])
    dst = api.zeros((300, 200)).sync_on(tile.Device(1).new_stream())
    api.memcpy(dst[::2, 1:101], t0[::2, :100]).sync_on(tile.Device(0).new_stream())
    expect = np.zeros_like(a)
    expect[::2, 1:101] = a[::2, :100]
    assert np.array_equal(dst.to_numpy(), expect)                 # strided on both sides
    back = dst.to(0).sync()
    assert back.device is tile.Device(0) and np.array_equal(back.to_numpy(), expect)


def test_mixing_devices_in_one_launch_is_refused():
    s0 = tile.Device(0).new_stream()
    z = api.zeros((256,)).sync_on(s0)
    x1 = api.ones((256,)).sync_on(tile.Device(1).new_stream())
    with pytest.raises(tile.TensorError, match="argument 'x' is on cuda:1 but the launch runs on "
                                               "cuda:0"):
        axpy(z.partition((128,)), x1, 1.0).sync_on(s0)


def test_torch_tensors_on_the_second_gpu():
    torch = pytest.importorskip("torch")
    x = torch.randn(4096, device="cuda:1")
    z = torch.zeros(4096, device="cuda:1")
    t = tile.from_dlpack(x)                      # torch's current device is 0: no BufferError
    assert t.device is tile.Device(1)
    s1 = tile.Stream.borrow_raw(torch.cuda.current_stream(1))
    axpy(tile.from_dlpack(z).partition((1024,)), x, 2.0).sync_on(s1)
    torch.testing.assert_close(z, 2 * x)
    axpy(tile.from_dlpack(z).partition((1024,)), x, 1.0).sync()  # default: torch's stream on cuda:1
    torch.testing.assert_close(z, 3 * x)
    with pytest.raises(tile.TensorError, match="cuda:1"):
        axpy(tile.from_dlpack(torch.zeros(4096, device="cuda:0")).partition((1024,)), x, 1.0) \
            .sync_on(tile.Device(0).new_stream())


def test_threads_on_two_devices_interleaved_with_torch():
    torch = pytest.importorskip("torch")
    errors = []

    def work(dev, other):
        try:
            s = tile.Device(dev).new_stream()
            for k in range(20):
                torch.cuda.set_device(other)                # torch moves this thread elsewhere
                junk = torch.ones(16, device=f"cuda:{other}") * k
                z = api.zeros((2048,)).sync_on(s)
                axpy(z.partition((512,)), api.full((2048,), float(k)).sync_on(s), 2.0).sync_on(s)
                assert (z.to_numpy() == 2.0 * k).all() and float(junk[0]) == k
        except Exception as e:
            errors.append(e)

    ts = [threading.Thread(target=work, args=(0, 1)), threading.Thread(target=work, args=(1, 0))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == []


def test_graphs_on_the_second_gpu():
    s = tile.Device(1).new_stream()
    x = api.full((1024,), 1.0).sync_on(s)
    z = api.zeros((1024,)).sync_on(s)
    g = axpy(z.partition((256,)), x, 1.0).graph_on(s)
    for _ in range(3):
        g.launch().sync_on(s)
    assert (z.to_numpy() == 4.0).all()                 # captured run + 3 replays


def test_torch_distributed_example():
    pytest.importorskip("torch")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "distributed_matmul.py")],
                       capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "GPUs ok" in r.stdout


def test_tilejit_leaves_the_callers_current_device_alone():
    """Work on cuda:1 from a thread whose current device is 0 (torch's, the runtime's) must not
    move that thread to device 1 — torch would then put "cuda" tensors on the wrong GPU."""
    torch = pytest.importorskip("torch")
    torch.cuda.set_device(0)
    s1 = tile.Device(1).new_stream()
    t = api.full((4096,), 1.0).sync_on(s1)
    z = api.zeros((4096,)).sync_on(s1)
    axpy(z.partition((1024,)), t, 2.0).sync_on(s1)
    assert (z.to_numpy() == 2.0).all()
    x1 = torch.ones(4096, device="cuda:1")
    axpy(tile.partition(torch.zeros(4096, device="cuda:1"), (1024,)), x1, 1.0).sync()
    tile.from_dlpack(x1)
    del t
    import gc
    gc.collect()                                   # finalizers free cuda:1 memory here
    assert torch.cuda.current_device() == 0
    assert torch.zeros(1, device="cuda").device.index == 0
