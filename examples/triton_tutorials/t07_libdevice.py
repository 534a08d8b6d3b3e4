"""Triton tutorial 07, libdevice (extern) math functions, in tilejit: asin of a vector.

    python examples/triton_tutorials/t07_libdevice.py

Triton reaches CUDA's libdevice through ``tl.extra.libdevice.asin``. In tilejit the math
functions are part of the language (`tile.asin`, `tile.erf`, `tile.cbrt`, ...: the list is
``tilejit.language.UNARY_MATH``); where Tile IR has no instruction they lower to accurate
polynomial forms (the ulp bounds are in docs/language/reference.md), so there is no library
path to pass. The same kernel, with the function a compile-time choice, also runs a few others.
"""
import enum
import sys

import numpy as np

import tilejit as tile
from tilejit import api
from tilejit.runtime import current_backend

BLOCK = 1024


@tile.entry
def asin_kernel(z, x):
    z.store(tile.asin(tile.load_tile_like(x, z)))


class Fn(enum.IntEnum):
    ERF = 0
    CBRT = 1
    LOG1P_ABS = 2


@tile.entry
def unary(z, x, FN: tile.Constant[int]):
    """One of a few math functions, chosen when the kernel is specialized (an IntEnum member is
    a constant; the other branches are never compiled)."""
    t = tile.load_tile_like(x, z)
    if FN == Fn.ERF:
        z.store(tile.erf(t))
    elif FN == Fn.CBRT:
        z.store(tile.cbrt(t))
    else:
        z.store(tile.log1p(tile.abs(t)))


def main() -> int:
    n = 98_432 if current_backend() != "cuda" else 1 << 24
    xn = np.random.default_rng(0).uniform(-1, 1, n).astype(np.float32)   # asin's domain
    x = api.from_numpy(xn).sync()
    z = api.empty((n,)).sync()
    asin_kernel(z.partition((BLOCK,)), x).sync()
    ok = np.allclose(z.to_numpy(), np.arcsin(xn), rtol=1e-6, atol=1e-7)
    from math import erf                     # NumPy has no erf
    refs = {Fn.ERF: np.vectorize(erf)(xn.astype(np.float64)), Fn.CBRT: np.cbrt(xn),
            Fn.LOG1P_ABS: np.log1p(np.abs(xn))}
    for fn, ref in refs.items():
        unary(z.partition((BLOCK,)), x, fn).sync()
        good = np.allclose(z.to_numpy(), ref, rtol=1e-6, atol=1e-7)
        ok &= good
        if not good:
            print(f"  {fn.name} differs: max error {np.abs(z.to_numpy() - ref).max():.2e}")
    print(f"t07_libdevice: asin, erf, cbrt, log1p of {n} floats {'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
