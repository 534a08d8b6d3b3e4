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
counter to skip reading a zero buffer; here the buffers start at zero and every holder adds. The
tutorial's check: M = 1151 rows of N = 8192 (fp16 there, float32 here) against torch's
layer_norm and its autograd; here NumPy's float64 formulas.
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
    """y, mean, rstd of LayerNorm over the last axis of ``x`` (float32 tilejit tensors)."""
    m, n = x.shape
    width = 1 << (n - 1).bit_length()
    y = api.empty((m, n)).sync()
    mean, rstd = api.empty((m,)).sync(), api.empty((m,)).sync()
    layernorm_fwd(y.partition((rows_per_block, width)), x, w, b, tile.atomic(mean),
                  tile.atomic(rstd), eps).sync()
    return y, mean, rstd


def main() -> int:
    gpu = current_backend() == "cuda"
    m, n, group = (1151, 8192, 64) if gpu else (37, 300, 4)
    eps = 1e-5
    rng = np.random.default_rng(0)
    xn = (-2.3 + 0.5 * rng.standard_normal((m, n))).astype(np.float32)   # the tutorial's x
    dyn = (0.1 * rng.standard_normal((m, n))).astype(np.float32)
    wn, bn = (rng.random(n).astype(np.float32) for _ in range(2))
    x, dy, w, b = (api.from_numpy(a).sync() for a in (xn, dyn, wn, bn))
    y, mean, rstd = forward(x, w, b, eps)
    dx, dw, db = backward(x, w, dy, mean, rstd, 4, group)

    mu = xn.astype(np.float64).mean(1, keepdims=True)
    rs = 1 / np.sqrt(xn.astype(np.float64).var(1, keepdims=True) + eps)
    dx_ref, dw_ref, db_ref = reference_backward(xn, wn, dyn, eps)
    ok = True
    for name, got, ref in (("y", y, (xn - mu) * rs * wn + bn), ("dx", dx, dx_ref),
                           ("dw", dw, dw_ref), ("db", db, db_ref)):
        err = np.abs(got.to_numpy() - ref).max() / max(np.abs(ref).max(), 1e-30)
        good = err < 1e-3
        ok &= good
        if not good:
            print(f"  {name}: max relative error {err:.1e}")
    print(f"t05_layer_norm: forward and backward (locked dw/db over {group} groups), {m}x{n} "
          f"{'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
