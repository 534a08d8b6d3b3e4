"""Several GPUs: the bodies of tests/multidevice_cases.py on two GPUs, with torch CUDA tensors as
the foreign arrays (the same bodies run on two simulated devices in CPU CI:
tests/test_multidevice_simulator.py). Marked ``multigpu``: skipped with fewer than two GPUs."""
import sys

import pytest

import tilejit as tile
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
