"""Counter-based random numbers: Philox-4x32-10 (Salmon et al., SC'11), one counter per element.

Element ``i`` of a tensor uses the counter ``(i mod 2^32, i >> 32, 0, 0)`` and the key
``(seed mod 2^32, seed >> 32)``; the four output words give uniform floats in [0, 1) and, through
Box-Muller, normal ones. The same seed and shape always give the same tensor, on the GPU and on the
simulator. The 32x32->64-bit products are computed in uint64 tiles.
"""
import tilejit as tile

M0 = 0xD2511F53
M1 = 0xCD9E8D57
W0 = 0x9E3779B9
W1 = 0xBB67AE85
MASK = 0xFFFFFFFF
TWO_POW_M24 = 1.0 / 16777216.0
TWO_PI = 6.283185307179586


@tile.function
def philox(c0, c1, c2, c3, k0, k1):
    """Ten Philox-4x32 rounds on uint64 tiles holding 32-bit words."""
    for _ in range(10):
        p0 = c0 * M0
        p1 = c2 * M1
        n0 = ((p1 >> 32) ^ c1 ^ k0) & MASK
        n2 = ((p0 >> 32) ^ c3 ^ k1) & MASK
        c1 = p1 & MASK
        c3 = p0 & MASK
        c0 = n0
        c2 = n2
        k0 = (k0 + W0) & MASK
        k1 = (k1 + W1) & MASK
    return c0, c1, c2, c3


@tile.function
def words(n, seed_lo, seed_hi):
    """The four Philox words of this block's ``n`` elements (element index = counter)."""
    i = tile.arange(n, tile.uint64) + tile.astype(tile.bid(0), tile.uint64) * n
    zero = tile.zeros((n,), tile.uint64)
    k0 = tile.full((n,), seed_lo, tile.uint64)
    k1 = tile.full((n,), seed_hi, tile.uint64)
    return philox(i & MASK, i >> 32, zero, zero, k0, k1)


@tile.entry
def uniform(z, seed_lo, seed_hi):
    r0, r1, r2, r3 = words(z.shape[0], seed_lo, seed_hi)
    u = (r0 >> 8).astype(tile.float32) * TWO_POW_M24
    z.store(u.astype(z.dtype))


@tile.entry
def normal(z, seed_lo, seed_hi, mean, std):
    r0, r1, r2, r3 = words(z.shape[0], seed_lo, seed_hi)
    u1 = ((r0 >> 8).astype(tile.float32) + 1.0) * TWO_POW_M24     # (0, 1]: log is finite
    u2 = (r1 >> 8).astype(tile.float32) * TWO_POW_M24
    g = tile.sqrt(-2.0 * tile.log(u1)) * tile.cos(TWO_PI * u2)
    z.store((g * std + mean).astype(z.dtype))
