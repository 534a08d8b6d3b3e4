"""Random numbers in kernels on the device (issue 25 item 1): the Philox words equal a NumPy
Philox bit for bit, ``tile.rand``/``tile.randn`` draw exactly ``api.rand``/``api.randn``'s
numbers for the same seed, and Triton's low-memory dropout works (4096 blocks each)."""
import numpy as np
import pytest

import tilejit as tile
from tilejit import api

import random_cases as C

pytestmark = pytest.mark.gpu
N = 1 << 22


@pytest.mark.parametrize("seed", [0, 2 ** 40 + 3, np.uint64(2 ** 64 - 1)])
def test_words_match_numpy_philox_on_the_device(seed):
    offs = np.random.default_rng(2).integers(0, 2 ** 62, N).astype(np.int64)
    z = [api.zeros((N,), tile.uint32).sync() for _ in range(4)]
    C.words(*(t.partition((1024,)) for t in z), seed, api.from_numpy(offs).sync()).sync()
    ref = C.philox_ref(int(seed), offs)
    for got, want in zip([t.to_numpy() for t in z[:3]], ref[:3]):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(z[3].to_numpy(), ref[3])


@pytest.mark.parametrize("seed", [1, np.uint64(2 ** 63 + 5)])
def test_rand_randn_are_the_api_stream_on_the_device(seed):
    u, g = C.draw(seed, N)
    np.testing.assert_array_equal(u, api.rand((N,), seed=int(seed)).sync().to_numpy())
    np.testing.assert_array_equal(g, api.randn((N,), seed=int(seed)).sync().to_numpy())
    w0 = C.philox_ref(int(seed), np.arange(N))[0]
    np.testing.assert_array_equal(u, (w0 >> 8).astype(np.float32) * np.float32(2.0 ** -24))
    assert abs(g.mean()) < 0.01 and abs(g.std() - 1) < 0.01


def test_low_memory_dropout_on_the_device():
    C.check_dropout(N)
