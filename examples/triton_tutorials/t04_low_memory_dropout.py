"""Triton tutorial 04, low-memory dropout, in tilejit: the mask regenerated from a seed.

    python examples/triton_tutorials/t04_low_memory_dropout.py

`dropout` is the tutorial's baseline: the keep mask is a tensor made on the host and read by the
kernel (memory for the mask, and the mask must be kept for the backward). `seeded_dropout` is
its point: the mask comes from `tile.rand(seed, offsets)` (Philox 4x32-10, counter = the
element's offset), so one int seed regenerates the same mask in the backward and no mask is
stored. `tile.rand` is the stream of `api.rand` (element i of `api.rand(shape, seed=s)` is
`tile.rand(s, i)`), so the host can rebuild the kernel's mask and the check is exact. Triton's
`tl.rand` maps the Philox words to floats differently (31 bits, not 24): the same seed gives a
different mask in Triton than here.
"""
import sys

import numpy as np

import tilejit as tile
from tilejit import api
from tilejit.runtime import current_backend

BLOCK = 1024


@tile.entry
def dropout(z, x, keep, p: float):
    """The baseline: ``keep`` (int8, 1 = keep) is an input tensor."""
    t = tile.load_tile_like(x, z)
    z.store(tile.where(tile.load_tile_like(keep, z) != 0, t / (1 - p), 0.0))


@tile.entry
def seeded_dropout(z, x, p: float, seed: int):
    """The mask from the seed: element i is kept when rand(seed, i) > p."""
    (n,) = z.shape
    offsets = z.block[0] * n + tile.arange(n)
    keep = tile.rand(seed, offsets) > p
    z.store(tile.where(keep, tile.load_tile_like(x, z) / (1 - p), 0.0))


def run_seeded(x, p, seed):
    z = api.empty(x.shape).sync()
    seeded_dropout(z.partition((BLOCK,)), x, p, seed).sync()
    return z.to_numpy()


def main() -> int:
    n = 98_432 if current_backend() != "cuda" else 1 << 24
    p = 0.5
    xn = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    x = api.from_numpy(xn).sync()
    keep = np.random.default_rng(1).random(n) > p
    z = api.empty((n,)).sync()
    dropout(z.partition((BLOCK,)), x, api.from_numpy(keep.astype(np.int8)).sync(), p).sync()
    ok = np.allclose(z.to_numpy(), np.where(keep, xn / (1 - p), 0), rtol=1e-6)

    a, a_again, b = run_seeded(x, p, 123), run_seeded(x, p, 123), run_seeded(x, p, 512)
    mask = api.rand((n,), seed=123).sync().to_numpy() > p     # the kernel's own numbers
    ok &= np.allclose(a, np.where(mask, xn / (1 - p), 0), rtol=1e-6)
    ok &= np.array_equal(a, a_again)                           # the seed is the whole mask
    ok &= not np.array_equal(a != 0, b != 0)                   # another seed, another mask
    kept = np.count_nonzero(a) / n                             # x has no zeros
    ok &= abs(kept - (1 - p)) < 0.01
    print(f"t04_low_memory_dropout: n={n}, p={p}, kept {kept:.3f} {'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
