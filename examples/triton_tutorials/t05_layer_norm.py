"""Triton tutorial 05, layer normalization forward and backward, in tilejit.

    python examples/triton_tutorials/t05_layer_norm.py

The kernels are the gallery's (examples/layernorm.py), which follow the tutorial's algorithm:

* forward: a block normalizes whole rows (mean and variance in float32, the padding past the row
  kept out of the variance) and saves each row's mean and 1/std for the backward;
* backward: each block computes dx for its rows and its partial column sums of dw and db, and
  adds them to row ``block % GROUP`` of a (GROUP, N) buffer while it holds that row's spin lock
  (`atomic_cas` with ``memory_order=ACQUIRE`` to take it, `atomic_xchg` with ``RELEASE`` to
  give it back); a second kernel sums the GROUP rows into dw and db.

Differences from Triton's: the tutorial's lock kernel also keeps a per-group "first store"
counter to skip reading a zero buffer; here the buffers start at zero and every holder adds, and
they hold float32 sums (the tutorial's are in x's dtype). The tutorial's check: M = 1151 rows of
N = 8192 in fp16 (x, w, b, dy; mean and 1/std in float32) against torch's layer_norm and its
autograd; here the same in fp16, then again in float32, against NumPy's float64 formulas on the
same rounded inputs.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # examples/

import tilejit as tile  # noqa: E402
from tilejit import api  # noqa: E402
from tilejit.runtime import current_backend  # noqa: E402

from layernorm import backward, layernorm_fwd, reference_backward  # noqa: E402


def forward(x, w, b, eps, rows_per_block=4):
    """y (``x``'s dtype), mean, rstd (float32) of LayerNorm over the last axis of ``x``."""
    m, n = x.shape
    width = 1 << (n - 1).bit_length()
    y = api.empty((m, n), x.dtype).sync()
    mean, rstd = api.empty((m,)).sync(), api.empty((m,)).sync()
    layernorm_fwd(y.partition((rows_per_block, width)), x, w, b, tile.atomic(mean),
                  tile.atomic(rstd), eps).sync()
    return y, mean, rstd


#: relative error allowed per dtype: fp16 outputs round at 2^-11 relative (the tutorial's
#: torch check allows 1e-2); float32 keeps its sums' rounding only
TOLERANCE = {np.float16: 5e-3, np.float32: 1e-3}


def check(dtype, m, n, group, eps=1e-5) -> bool:
    """Forward and backward in ``dtype`` (x, w, b, dy, y, dx, dw, db; statistics and the partial
    dw/db sums in float32) against NumPy's float64 formulas on the same rounded inputs."""
    rng = np.random.default_rng(0)
    xn = (-2.3 + 0.5 * rng.standard_normal((m, n))).astype(dtype)       # the tutorial's x
    dyn = (0.1 * rng.standard_normal((m, n))).astype(dtype)
    wn, bn = (rng.random(n).astype(dtype) for _ in range(2))
    x, dy, w, b = (api.from_numpy(a).sync() for a in (xn, dyn, wn, bn))
    y, mean, rstd = forward(x, w, b, eps)
    dx, dw, db = backward(x, w, dy, mean, rstd, 4, group)

    x64 = xn.astype(np.float64)
    mu = x64.mean(1, keepdims=True)
    rs = 1 / np.sqrt(x64.var(1, keepdims=True) + eps)
    dx_ref, dw_ref, db_ref = reference_backward(xn, wn, dyn, eps)
    ok = True
    for name, got, ref in (("y", y, (x64 - mu) * rs * wn + bn), ("dx", dx, dx_ref),
                           ("dw", dw, dw_ref), ("db", db, db_ref)):
        err = np.abs(got.to_numpy().astype(np.float64) - ref).max() / \
            max(np.abs(ref).max(), 1e-30)
        good = err < TOLERANCE[dtype] and got.dtype.np_dtype == dtype
        ok &= good
        if not good:
            print(f"  {np.dtype(dtype).name} {name} ({got.dtype}): max relative error {err:.1e}")
    return ok


def main() -> int:
    gpu = current_backend() == "cuda"
    m, n, group = (1151, 8192, 64) if gpu else (37, 300, 4)
    ok = True
    for dtype in (np.float16, np.float32):              # the tutorial's fp16 first
        ok &= check(dtype, m, n, group)
    print(f"t05_layer_norm: forward and backward (locked dw/db over {group} groups), {m}x{n} "
          f"fp16 and float32 {'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
