"""Kernels and a NumPy reference for the kernel language's random numbers (issue 25 item 1),
shared by tests/test_random.py (simulator) and tests/gpu/test_random_gpu.py."""
import numpy as np

import tilejit as tile
from tilejit import api

M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
MASK = 0xFFFFFFFF


def philox_ref(seed: int, offsets) -> tuple:
    """Philox-4x32-10 in NumPy uint64 arithmetic (Salmon et al.), counter (off_lo, off_hi, 0, 0),
    key (seed_lo, seed_hi): four uint32 arrays."""
    off = np.asarray(offsets).astype(np.uint64)
    c0, c1 = off & MASK, off >> np.uint64(32)
    c2 = c3 = np.zeros_like(off)
    k0, k1 = np.uint64(seed & MASK), np.uint64(seed >> 32)
    for _ in range(10):
        p0, p1 = c0 * np.uint64(M0), c2 * np.uint64(M1)
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & MASK,
                          (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & MASK)
        k0, k1 = (k0 + np.uint64(W0)) & MASK, (k1 + np.uint64(W1)) & MASK
    return tuple(c.astype(np.uint32) for c in (c0, c1, c2, c3))


@tile.entry
def words(z0, z1, z2, z3, seed, offs):
    o = tile.load_tile_like(offs, z0)
    r0, r1, r2, r3 = tile.randint4x(seed, o)
    z0.store(r0)
    z1.store(r1)
    z2.store(r2)
    z3.store(tile.randint(seed, o) ^ r0 ^ r3)         # randint is the first word


@tile.entry
def uniform_normal(u, g, seed, BLOCK: tile.Constant[int]):
    offs = tile.bid(0) * BLOCK + tile.arange(BLOCK)
    u.store(tile.rand(seed, offs))
    g.store(tile.randn(seed, offs))


def draw(seed, n, block=1024):
    """``tile.rand`` and ``tile.randn`` at offsets 0..n-1 (``n`` a multiple of ``block``)."""
    u, g = api.zeros((n,)).sync(), api.zeros((n,)).sync()
    uniform_normal(u.partition((block,)), g.partition((block,)), seed, block).sync()
    return u.to_numpy(), g.to_numpy()


@tile.entry
def dropout(z, x, p: float, seed: int):
    """Triton's low-memory dropout (tutorial 04): the mask is regenerated from the seed."""
    n = z.shape[0]
    offs = tile.bid(0) * n + tile.arange(n)
    t = tile.load_tile_like(x, z)
    keep = tile.rand(seed, offs) > p
    z.store(tile.where(keep, t / (1 - p), 0.0))


def run_dropout(x: np.ndarray, p: float, seed: int, block=1024) -> np.ndarray:
    z = api.zeros(x.shape).sync()
    dropout(z.partition((block,)), api.from_numpy(x).sync(), p, seed).sync()
    return z.to_numpy()


def check_dropout(n: int, p: float = 0.3, seed: int = 1234):
    """Dropout twice with one seed (same mask), once with another; the mask is the one
    ``api.rand`` draws for the seed (the same stream)."""
    x = np.random.default_rng(0).uniform(1, 2, n).astype(np.float32)
    a, b, c = run_dropout(x, p, seed), run_dropout(x, p, seed), run_dropout(x, p, seed + 1)
    np.testing.assert_array_equal(a, b)
    keep = api.rand((n,), seed=seed).sync().to_numpy() > np.float32(p)
    np.testing.assert_array_equal(a != 0, keep)
    np.testing.assert_allclose(a[keep], x[keep] / np.float32(1 - p), rtol=1e-6)
    assert abs(keep.mean() - (1 - p)) < 5 / np.sqrt(n)
    assert ((c != 0) != keep).mean() > 0.3                  # another seed, another mask
