"""In-kernel views and memory features on the device (issue 25 item 1): variable-length
segments through ``x.slice`` (4096 segments), bfloat16 ``atomic_add`` under contention (256
blocks into 512 bins through a slice), ``check_bounds=False`` loads."""
import numpy as np
import pytest

import tilejit as tile
from tilejit import api

import memory_view_cases as C

pytestmark = pytest.mark.gpu


def test_variable_length_segments_on_the_device():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((100_000, 32)).astype(np.float32)
    starts = np.sort(np.concatenate([[0, 100_000], rng.integers(0, 100_000, 4095)]))
    got, want = C.run_segment_sums(x, starts, bm=16)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


def test_bfloat16_atomic_add_under_contention():
    w, want = C.run_histogram(1 << 16, 512)        # ~128 per bin: exact in bfloat16
    np.testing.assert_array_equal(w[1:].astype(np.float32), want.astype(np.float32))
    assert w[0] == 0


def test_check_bounds_false_on_the_device():
    @tile.entry
    def k(z, x):
        z.store(x.load((tile.bid(0), tile.bid(1)), (64, 64), check_bounds=False) * 2.0)
    a = np.random.default_rng(5).standard_normal((4096, 4096)).astype(np.float32)
    z = api.zeros(a.shape).sync()
    k(z.partition((64, 64)), api.from_numpy(a).sync()).sync()
    np.testing.assert_array_equal(z.to_numpy(), a * 2)
