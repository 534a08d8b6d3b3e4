"""Broadcast inputs stay views (issue 45): a NumPy or CPU torch input with stride-0 axes
(``np.broadcast_to``, ``torch.expand``) is copied one element per repeated run, its stride 0 kept
on the device, instead of being expanded (2**31 float32 ones were 8 GiB and a MemoryError after
88 s on the simulator)."""
import time

import numpy as np
import pytest

import tilejit as tile
from tilejit import api
from tilejit.runtime.argspec import classify

pytestmark = pytest.mark.usefixtures("simulator_backend")

HUGE = 2 ** 31          # 8 GiB of float32 if expanded


@tile.entry
def second_tile(z, x):
    z.store(x.load((1,), (16,)) * 2)


@tile.entry
def row_block(z, x):
    z.store(x.load((5, 0), (4, 16)) + 1)            # tile (5, 0): rows 20-23


def test_a_huge_broadcast_scalar_is_read_without_expanding_it():
    x = np.broadcast_to(np.float32(1.5), (HUGE,))
    z = api.zeros((16,)).sync()
    start = time.perf_counter()
    second_tile(z.partition((16,)), x).sync()
    assert time.perf_counter() - start < 20            # expanding alone took over a minute
    np.testing.assert_array_equal(z.to_numpy(), 3.0)
    info = classify(x)
    assert info.key.facts.stride_div == (4,) and info.key.facts.stride_one == (False,)


@pytest.mark.parametrize("axis", [0, 1])
def test_broadcast_rows_and_columns_read_the_right_elements(axis):
    rng = np.random.default_rng(axis)
    if axis == 0:
        base = rng.standard_normal((1, 16)).astype(np.float32)
        x = np.broadcast_to(base, (2 ** 26, 16))
    else:
        base = rng.standard_normal((2 ** 20, 1)).astype(np.float32)
        x = np.broadcast_to(base, (2 ** 20, 16))
    z = np.zeros((4, 16), np.float32)
    start = time.perf_counter()
    row_block(tile.partition(z, (4, 16)), x).sync()
    assert time.perf_counter() - start < 20
    np.testing.assert_array_equal(z, x[20:24] + 1)


def test_an_expanded_cpu_torch_tensor_is_read_without_expanding_it():
    torch = pytest.importorskip("torch")
    x = torch.full((1,), 2.5).expand(HUGE)
    z = api.zeros((16,)).sync()
    start = time.perf_counter()
    second_tile(z.partition((16,)), x).sync()
    assert time.perf_counter() - start < 20
    np.testing.assert_array_equal(z.to_numpy(), 5.0)


def test_a_broadcast_output_is_still_refused():
    x = np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), (32,), (0,), writeable=True)
    with pytest.raises(tile.TensorError, match="overlap in memory"):
        second_tile(tile.partition(x, (16,)), np.ones(32, np.float32))
