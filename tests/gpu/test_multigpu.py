"""Several GPUs: the bodies of tests/multidevice_cases.py on two GPUs, with torch CUDA tensors as
the foreign arrays (the same bodies run on two simulated devices in CPU CI:
tests/test_multidevice_simulator.py). Marked ``multigpu``: skipped with fewer than two GPUs."""
import sys

import pytest

import tilejit as tile
from tilejit import api
from multidevice_cases import *  # noqa: F401,F403  (the test bodies and their fixtures)
from multidevice_cases import EXAMPLE, Devices

pytestmark = [pytest.mark.gpu, pytest.mark.multigpu]


class Gpus(Devices):
    """Two GPUs; foreign arrays are torch CUDA tensors (tests needing them skip without torch)."""

    @staticmethod
    def _torch():
        torch = pytest.importorskip("torch")
        if torch.cuda.device_count() < 2:
            pytest.skip(f"torch sees {torch.cuda.device_count()} GPU(s), needs two")
        return torch

    def array(self, host, device):
        return self._torch().from_numpy(host).to(f"cuda:{device}")

    def numpy(self, arr):
        return arr.cpu().numpy()

    def producer_stream(self, device):
        return tile.Stream.borrow_raw(self._torch().cuda.current_stream(device))

    def work_elsewhere(self, device, k):
        torch = self._torch()
        torch.cuda.set_device(device)                # torch moves this thread to `device`
        junk = torch.ones(16, device=f"cuda:{device}") * k
        return lambda: float(junk[0])

    def set_current(self, device):
        self._torch().cuda.set_device(device)

    def current(self):
        torch = self._torch()
        index = torch.cuda.current_device()
        assert torch.zeros(1, device="cuda").device.index == index
        return index

    distributed_on = "GPUs (nccl)"

    def distributed_command(self):                  # spawns one process per GPU, NCCL
        return [sys.executable, EXAMPLE]


@pytest.fixture
def multi():
    if tile.Device.count() < 2:
        pytest.skip(f"needs two GPUs (found {tile.Device.count()})")
    return Gpus()


def test_cupy_and_a_context_tilejit_did_not_make_choose_the_default_device(multi,
                                                                          keep_current_device):
    """The current device as other libraries set it: CuPy's ``with Device(1):`` (the runtime's
    primary context) and a context of the driver API's own (``cuCtxCreate`` on device 1, which
    tilejit does not retain: its device is asked from the driver)."""
    from tilejit.runtime import driver as _d
    d0, d1 = tile.Device(0), tile.Device(1)
    d0.make_current()
    cupy = _cupy()
    if cupy is not None:
        with cupy.cuda.Device(1):
            assert tile.current_device() is d1
            t = api.zeros((64,)).sync()
            assert t.device is d1 and cupy.cuda.runtime.getDevice() == 1
        assert tile.current_device() is d0
    drv = _d.drv
    try:
        ctx = _d.check(drv.cuCtxCreate(None, 0, drv.CUdevice(1)), "cuCtxCreate")  # bindings 13
    except TypeError:
        ctx = _d.check(drv.cuCtxCreate(0, drv.CUdevice(1)), "cuCtxCreate")        # bindings 12
    try:                                   # cuCtxCreate made it current (pushed)
        assert tile.current_device() is d1
        t = api.full((64,), 2.0).sync()
        assert t.device is d1 and (t.to_numpy() == 2.0).all()
        err, cur = drv.cuCtxGetCurrent()
        assert int(cur) == int(ctx)        # tilejit's work left the caller's context current
    finally:
        _d.check(drv.cuCtxDestroy(ctx), "cuCtxDestroy")
    assert tile.current_device() is d0     # the context stack's previous one: device 0's


def _cupy():
    try:
        import cupy
        return cupy if cupy.cuda.runtime.getDeviceCount() >= 2 else None
    except Exception:
        return None
