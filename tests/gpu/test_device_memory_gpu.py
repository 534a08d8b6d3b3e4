"""Out of GPU memory is tile.DeviceMemoryError (also a MemoryError) saying what was asked and
what is free, as on the simulator; the pool's release threshold is a checked size (issue 21
items 18-19)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import tilejit as tile
from tilejit import api


def test_out_of_memory_is_a_device_memory_error():
    total = tile.Device(0).total_memory
    with pytest.raises(tile.DeviceMemoryError) as ei:
        api.zeros((1 << 40,)).sync()                      # 4 TiB of float32
    err = ei.value
    assert isinstance(err, MemoryError) and isinstance(err, tile.DeviceError)
    msg = str(err)
    assert "cannot allocate 4.0 TiB (4398046511104 bytes)" in msg
    assert "available" in msg and "CUDA_ERROR_OUT_OF_MEMORY" in msg
    assert err.requested == 4 << 40 and 0 <= err.available <= total
    z = api.full((1 << 20,), 3.0, tile.float32).sync()    # the device still works afterwards
    assert (z.to_numpy() == 3.0).all()


def test_a_huge_broadcast_input_is_a_device_memory_error():
    @tile.entry
    def copy(z, x):
        z.store(tile.load_tile_like(x, z))

    total = tile.Device(0).total_memory
    x = np.broadcast_to(np.float32(1), (total // 4 + (1 << 28),))   # more than the whole GPU
    z = api.zeros((16,)).sync()
    with pytest.raises(tile.DeviceMemoryError, match="cannot allocate"):
        copy(z.partition((16,)), x).sync()


@pytest.mark.parametrize("value,ok", [("lots", False), ("-1", False), ("2GiB", True)])
def test_the_pool_release_threshold_is_checked(value, ok):
    code = ("import tilejit as tile\nfrom tilejit import api\n"
            "z = api.full((1024,), 2.0, tile.float32).sync()\n"
            "assert (z.to_numpy() == 2.0).all()\nprint('ok')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, TILEJIT_POOL_RELEASE_THRESHOLD=value))
    if ok:
        assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
    else:
        assert r.returncode != 0
        assert f"TILEJIT_POOL_RELEASE_THRESHOLD={value!r}" in r.stderr
