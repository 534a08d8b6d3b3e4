"""Triton tutorial 02, fused softmax, in tilejit: each row read once, reduced in registers.

    python examples/triton_tutorials/t02_fused_softmax.py

The kernels are the gallery's (examples/softmax.py): `softmax` gives each block a (ROWS, WIDTH)
tile of whole rows, WIDTH the row length rounded up to a power of two and the padding -inf (the
tutorial's ``other=-inf`` mask), and `softmax_persistent` is the tutorial's own schedule: a wave of
blocks as large as the GPU holds at once, each looping over rows with the grid as its stride.
Triton sizes that wave from the kernel's register and shared-memory use; tilejit takes it from
the SM count and the occupancy (`rows_grid`). The tutorial's check: a 1823 x 781 matrix against
the unfused softmax.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # examples/

import tilejit as tile  # noqa: E402
from tilejit import api  # noqa: E402
from tilejit.runtime import current_backend  # noqa: E402

from softmax import rows_grid, softmax, softmax_persistent  # noqa: E402


def main() -> int:
    gpu = current_backend() == "cuda"
    rows, cols = (1823, 781) if gpu else (61, 781)
    width = 1 << (cols - 1).bit_length()
    xn = np.random.default_rng(0).standard_normal((rows, cols)).astype(np.float32)
    x = api.from_numpy(xn).sync()
    e = np.exp(xn - xn.max(axis=1, keepdims=True))
    ref = e / e.sum(axis=1, keepdims=True)

    z = api.empty((rows, cols)).sync()
    softmax(z.partition((4, width)), x).sync()
    ok = np.allclose(z.to_numpy(), ref, rtol=1e-5, atol=1e-7)

    cfg = tile.Config(ROWS=1, WIDTH=width, LATENCY=4, occupancy=4)
    grid = rows_grid(cfg, {"x": x}, sms=None if gpu else 8)
    z = api.empty((rows, cols)).sync()
    softmax_persistent(tile.atomic(z), x, 1, width, 4).grid(grid).sync()
    ok &= np.allclose(z.to_numpy(), ref, rtol=1e-5, atol=1e-7)
    print(f"t02_fused_softmax: {rows}x{cols}, row tiles and a persistent wave of {grid[0]} "
          f"blocks {'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
