"""Several devices in CPU CI: the bodies of tests/multidevice_cases.py (run on two GPUs by
tests/gpu/test_multigpu.py) on two simulated devices, as ``TILEJIT_SIM_DEVICES=2`` gives them.
Foreign arrays are ``__cuda_array_interface__`` objects over simulated memory (what the simulator
can wrap in place); the distributed example runs under torchrun with gloo on CPU tensors."""
import os
import subprocess
import sys

import numpy as np
import pytest

import tilejit as tile
from tilejit import api
from tilejit.runtime import backend
from multidevice_cases import *  # noqa: F401,F403  (the test bodies and their fixtures)
from multidevice_cases import EXAMPLE, ROOT, Devices


class ForeignArray:
    """A device array of another library, as the simulator sees one: only the interface."""

    def __init__(self, tensor):
        self._tensor = tensor                 # keeps the simulated memory alive

    @property
    def __cuda_array_interface__(self):
        return self._tensor.__cuda_array_interface__


class SimulatedDevices(Devices):
    """Two simulated devices (``backend.force("simulator", sim_devices=2)``)."""

    def array(self, host, device):
        return ForeignArray(api.from_numpy(host).sync_on(tile.Device(device).new_stream()))

    def numpy(self, arr):
        return arr._tensor.to_numpy()

    def producer_stream(self, device):
        return tile.Device(device).new_stream()

    def work_elsewhere(self, device, k):
        junk = api.full((16,), k).sync_on(tile.Device(device).new_stream())
        assert junk.device is tile.Device(device)
        return lambda: float(junk.to_numpy()[0])

    def set_current(self, device):
        tile.Device(device).make_current()           # the simulator's per-thread current device

    def current(self):
        return tile.current_device().ordinal

    distributed_on = "CPU processes (gloo)"

    def distributed_command(self):      # two ranks, gloo on CPU tensors, tilejit simulating
        return [sys.executable, "-m", "torch.distributed.run", "--standalone",
                "--nproc_per_node=2", EXAMPLE, "--cpu"]


@pytest.fixture
def multi(monkeypatch):
    monkeypatch.setenv("TILEJIT_SIMULATE", "1")       # for the example's processes
    with backend.force("simulator", sim_devices=2):
        yield SimulatedDevices()


def test_the_fixture_gives_two_simulated_devices(multi):
    assert tile.Device.count() == 2
    assert [tile.Device(d).label for d in range(2)] == ["sim:0", "sim:1"]
    assert np.array_equal(multi.numpy(multi.array(np.arange(3.0), 1)), np.arange(3.0))


def test_the_distributed_example_without_torch_says_it_skipped(tmp_path):
    fake = tmp_path / "torch"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('no torch here')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), ROOT]))
    r = subprocess.run([sys.executable, EXAMPLE], capture_output=True, text=True, timeout=120,
                       env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1].startswith(
        "distributed_matmul: skipped: PyTorch is not installed")
