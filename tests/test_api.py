"""tile.api constructors (tilejit kernels) and copies (on the simulator; on CUDA via tests/gpu)."""
import math

import numpy as np
import pytest

import tilejit as tile
from tilejit import api

# CPU suite: always the simulator. tests/gpu/test_api_gpu.py reruns these tests on CUDA (it
# star-imports this module and sets its own pytestmark, so it does not inherit this one).
pytestmark = pytest.mark.usefixtures("simulator_backend")


@pytest.mark.parametrize("dtype", [tile.float32, tile.float16, tile.bfloat16, tile.int32,
                                   tile.uint8, tile.int64, tile.bool_])
@pytest.mark.parametrize("shape", [(1,), (1000,), (33, 70), (3, 5, 7)])
def test_zeros_ones_full(dtype, shape):
    z = api.zeros(shape, dtype).sync().to_numpy()
    o = api.ones(shape, dtype).sync().to_numpy()
    assert z.shape == shape and z.dtype == dtype.np_dtype and not z.any()
    assert (o == 1).all()
    v = True if dtype.is_bool else 7
    f = api.full(shape, v, dtype).sync().to_numpy()
    assert (f == v).all()


def test_full_infers_dtype_and_empty_shapes():
    assert api.full((4,), 2.5).sync().dtype is tile.float32
    assert api.full((4,), 3).sync().dtype is tile.int64
    assert api.full((4,), True).sync().dtype is tile.bool_
    e = api.zeros((0, 3)).sync()
    assert e.shape == (0, 3) and e.to_numpy().size == 0
    with pytest.raises(tile.TensorError, match="negative"):
        api.zeros((-1, 3))


def test_fill_in_place_keeps_the_tensor():
    rng = np.random.default_rng(0)
    t = api.from_numpy(rng.random((17, 33), dtype=np.float32)).sync()
    out = api.fill(t, -1.5).sync()
    assert out is t and (t.to_numpy() == -1.5).all()
    s = api.from_numpy(np.arange(40, dtype=np.int16).reshape(5, 8)).sync()
    api.fill(s[1:3, 2:6], 9).sync()                       # a non-contiguous slice
    expect = np.arange(40, dtype=np.int16).reshape(5, 8)
    expect[1:3, 2:6] = 9
    assert (s.to_numpy() == expect).all()


@pytest.mark.parametrize("n,dtype", [(1, tile.int64), (2000, tile.int64), (1500, tile.int32),
                                     (300, tile.float32), (129, tile.float16)])
def test_arange(n, dtype):
    a = api.arange(n, dtype).sync().to_numpy()
    assert a.dtype == dtype.np_dtype
    np.testing.assert_array_equal(a, np.arange(n).astype(dtype.np_dtype))


@pytest.mark.parametrize("start,stop,n", [(0.0, 1.0, 11), (-3.0, 5.0, 1000), (2.0, 2.0, 1), (0.0, 1.0, 1),
                                          (1.0, -1.0, 7)])
def test_linspace(start, stop, n):
    got = api.linspace(start, stop, n).sync().to_numpy()
    np.testing.assert_allclose(got, np.linspace(start, stop, n, dtype=np.float32), rtol=1e-6,
                               atol=1e-6)
    assert got[-1] == np.float32(stop if n > 1 else start)     # [start] for one value


@pytest.mark.parametrize("r,c", [(5, 5), (33, 70), (100, 3)])
def test_eye(r, c):
    got = (api.eye(r) if r == c else api.eye_rect(r, c)).sync().to_numpy()
    np.testing.assert_array_equal(got, np.eye(r, c, dtype=np.float32))


@pytest.mark.parametrize("src,dst", [(np.float32, tile.float16), (np.float32, tile.int32),
                                     (np.int32, tile.float32), (np.float32, tile.bfloat16),
                                     (np.int64, tile.int8), (np.float32, tile.bool_)])
def test_convert(src, dst):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((37, 53)) * 50).astype(src)
    got = api.convert(api.from_numpy(x).sync(), dst).sync().to_numpy()
    expect = x.astype(dst.np_dtype) if not (np.issubdtype(src, np.floating) and dst.is_integer) \
        else np.trunc(x).astype(dst.np_dtype)
    np.testing.assert_array_equal(got, expect)


def test_convert_higher_rank_and_slices():
    x = np.random.default_rng(1).standard_normal((2, 3, 4, 5)).astype(np.float32)
    got = api.convert(api.from_numpy(x).sync(), tile.float16).sync().to_numpy()
    np.testing.assert_array_equal(got, x.astype(np.float16))
    t = api.from_numpy(x[0]).sync()
    got = api.convert(t[:, 1:3], tile.float64).sync().to_numpy()
    np.testing.assert_array_equal(got, x[0][:, 1:3].astype(np.float64))


# --- random numbers -----------------------------------------------------------------------------
def philox_reference(n: int, seed: int):
    """Philox-4x32-10 in NumPy: counters (i_lo, i_hi, 0, 0), key (seed_lo, seed_hi)."""
    m = np.uint64(0xFFFFFFFF)
    i = np.arange(n, dtype=np.uint64)
    c = [i & m, i >> np.uint64(32), np.zeros(n, np.uint64), np.zeros(n, np.uint64)]
    k0, k1 = np.uint64(seed & 0xFFFFFFFF), np.uint64(seed >> 32)
    for _ in range(10):
        p0 = c[0] * np.uint64(0xD2511F53)
        p1 = c[2] * np.uint64(0xCD9E8D57)
        c = [((p1 >> np.uint64(32)) ^ c[1] ^ k0) & m, p1 & m,
             ((p0 >> np.uint64(32)) ^ c[3] ^ k1) & m, p0 & m]
        k0 = (k0 + np.uint64(0x9E3779B9)) & m
        k1 = (k1 + np.uint64(0xBB67AE85)) & m
    return c


def test_rand_is_philox_and_reproducible():
    seed = 0x1234_5678_9ABC
    got = api.rand((3000,), seed=seed).sync().to_numpy()
    r0 = philox_reference(3000, seed)[0]
    np.testing.assert_array_equal(got, (r0 >> np.uint64(8)).astype(np.float32) * np.float32(2 ** -24))
    again = api.rand((3000,), seed=seed).sync().to_numpy()
    assert (got == again).all()
    other = api.rand((3000,), seed=seed + 1).sync().to_numpy()
    assert (got != other).mean() > 0.99
    assert not (api.rand((100,)).sync().to_numpy() == api.rand((100,)).sync().to_numpy()).all()


def test_rand_statistics():
    u = api.rand((200_000,), seed=7).sync().to_numpy().astype(np.float64)
    assert u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.005 and abs(u.var() - 1 / 12) < 0.002
    # Kolmogorov-Smirnov distance to U(0, 1): critical value at 99.9% is 1.95 / sqrt(n)
    s = np.sort(u)
    ks = np.max(np.abs(s - np.arange(1, s.size + 1) / s.size))
    assert ks < 1.95 / math.sqrt(s.size)
    counts = np.bincount((u * 16).astype(int), minlength=16)
    chi2 = ((counts - u.size / 16) ** 2 / (u.size / 16)).sum()
    assert chi2 < 40                                    # 15 degrees of freedom, p ~ 1e-3


def test_randn_statistics_and_shape():
    g = api.randn((100_000,), mean=2.0, std=3.0, seed=11).sync().to_numpy().astype(np.float64)
    assert abs(g.mean() - 2.0) < 0.05 and abs(g.std() - 3.0) < 0.05
    z = (g - 2.0) / 3.0
    assert abs((np.abs(z) < 1).mean() - 0.6827) < 0.01
    assert abs(np.mean(z ** 3)) < 0.05 and abs(np.mean(z ** 4) - 3) < 0.1
    h = api.randn((64, 48), dtype=tile.float16, seed=5).sync()
    assert h.shape == (64, 48) and h.dtype is tile.float16
    assert (api.randn((64, 48), dtype=tile.float16, seed=5).sync().to_numpy() == h.to_numpy()).all()


def test_random_argument_errors():
    with pytest.raises(TypeError, match="float dtype"):
        api.rand((4,), tile.int32)
    with pytest.raises(ValueError, match="seed"):
        api.rand((4,), seed=-1)
    with pytest.raises(ValueError, match="std"):
        api.randn((4,), std=-1.0)


def test_copies_round_trip():
    x = np.random.default_rng(2).standard_normal((9, 13)).astype(np.float32)
    t = api.from_numpy(x).sync()
    np.testing.assert_array_equal(api.to_numpy(t).sync(), x)
    d = api.dup(t).sync()
    assert d.device_pointer != t.device_pointer
    np.testing.assert_array_equal(d.to_numpy(), x)
    e = api.zeros((9, 13)).sync()
    api.memcpy(e, t).sync()
    np.testing.assert_array_equal(e.to_numpy(), x)
