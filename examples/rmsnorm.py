"""RMSNorm forward: y = x / sqrt(mean(x^2) + eps) * w, several whole rows per block.

    python examples/rmsnorm.py
"""
import sys

import numpy as np

import tilejit as tile
from tilejit import api
from tilejit.runtime import current_backend


@tile.entry
def rmsnorm(y, x, w, eps):
    BM, BN = y.shape
    t = x.load(y.block, y.shape, padding=tile.PaddingMode.ZERO).astype(tile.float32)
    ms = tile.sum(t * t, axis=1, keepdims=True) / x.shape[1]      # zero padding adds nothing
    wv = w.load((0,), (BN,), padding=tile.PaddingMode.ZERO).astype(tile.float32)[None, :]
    y.store((t * tile.rsqrt(ms + eps) * wv).astype(y.dtype))


def main() -> int:
    m, n = (8192, 4096) if current_backend() == "cuda" else (40, 200)
    width = 1 << (n - 1).bit_length()
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((m, n)).astype(np.float16)
    wn = rng.standard_normal(n).astype(np.float16)
    y = api.zeros((m, n), tile.float16).sync()
    rmsnorm(y.partition((2, width)), api.from_numpy(xn).sync(), api.from_numpy(wn).sync(),
            1e-6).sync()
    x32 = xn.astype(np.float32)
    ref = x32 / np.sqrt((x32 * x32).mean(1, keepdims=True) + 1e-6) * wn.astype(np.float32)
    ok = np.allclose(y.to_numpy().astype(np.float32), ref, rtol=1e-2, atol=1e-2)
    print(f"rmsnorm: {m}x{n} fp16 {'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
