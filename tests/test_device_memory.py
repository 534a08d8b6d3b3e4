"""Asking for more device memory than there is: tile.DeviceMemoryError (a DeviceError and a
MemoryError) saying what was asked and what is available, instead of NumPy's raw
_ArrayMemoryError (issue 21 item 19)."""
import numpy as np
import pytest

import tilejit as tile
from tilejit import api
from tilejit.simulator import memory as simmem

pytestmark = pytest.mark.usefixtures("simulator_backend")


@tile.entry
def copy(z, x):
    z.store(tile.load_tile_like(x, z))


def test_the_error_is_a_device_error_and_a_memory_error():
    assert issubclass(tile.DeviceMemoryError, tile.DeviceError)
    assert issubclass(tile.DeviceMemoryError, MemoryError)


def test_a_huge_zeros_says_what_was_asked_and_what_is_available():
    before = simmem.memory.bytes_in_use
    with pytest.raises(tile.DeviceMemoryError) as ei:
        api.zeros((1 << 40,)).sync()
    msg = str(ei.value)
    assert "cannot allocate 4.0 TiB (4398046511104 bytes) on the simulated device" in msg
    assert "GiB available" in msg and "16 GiB in all" in msg
    assert ei.value.requested == 4 << 40 and 0 < ei.value.available <= 16 << 30
    assert type(ei.value).__name__ == "DeviceMemoryError"      # not NumPy's _ArrayMemoryError
    assert simmem.memory.bytes_in_use == before
    z = api.zeros((16,)).sync()                                 # and the device still works
    assert (z.to_numpy() == 0).all()


def test_a_broadcast_input_larger_than_the_device_is_uploaded_as_its_one_element(monkeypatch):
    """A stride-0 input (20 GiB of one value, more than the simulated device and, with
    ``host_available`` patched, the host has) stays a view: one element is copied, not 20 GiB
    (tests/test_broadcast_inputs.py has the rest)."""
    monkeypatch.setattr(simmem, "host_available", lambda: 4 << 30)
    x = np.broadcast_to(np.float32(3), (5 << 30,))
    z = api.zeros((16,)).sync()
    before = simmem.memory.bytes_in_use
    copy(z.partition((16,)), x).sync()
    assert (z.to_numpy() == 3).all()
    assert simmem.memory.bytes_in_use - before < 1 << 20


def test_numpy_running_out_is_reported_the_same_way(monkeypatch):
    def full(*a, **k):                  # what NumPy raises when the host has no memory left
        raise MemoryError("Unable to allocate 1.00 MiB for an array with shape (1048576,)")

    monkeypatch.setattr(simmem.np, "full", full)
    with pytest.raises(tile.DeviceMemoryError, match="the host could not provide the memory"):
        simmem.memory.alloc(1 << 20)
