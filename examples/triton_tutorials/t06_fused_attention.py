"""Triton tutorial 06, fused attention (FlashAttention-2 forward and backward), in tilejit.

    python examples/triton_tutorials/t06_fused_attention.py

The kernels are the gallery's (examples/flash_attention.py, examples/attention_backward.py),
the tutorial's algorithm: the forward walks K/V tiles with an online softmax in exp2 (running
maximum and sum, the output rescaled as the maximum grows), the causal mask applied only to the
diagonal tiles, and saves each row's log-sum-exp; the backward recomputes P from it tile by tile:
delta = rowsum(dO * O), then dK/dV per K/V tile over the query tiles that see it, and dQ per query
tile. The tutorial's fused dK/dV/dQ kernel writes dQ from the dK/dV blocks' loop over query
tiles; here dQ has its own blocks (no float atomics, a deterministic result).

Differences: the softmax scale is 1/sqrt(D) (the tutorial passes ``sm_scale = 0.5``), and the
tutorial's fp8 forward and warp-specialized variants are not ported. The tutorial's check:
Z = 1, H = 2, N_CTX = 1024, HEAD_DIM = 64, fp16, causal, forward and gradients against PyTorch's
reference; here NumPy's float64 formulas.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # examples/

import tilejit as tile  # noqa: E402
from tilejit import api  # noqa: E402
from tilejit.runtime import current_backend  # noqa: E402

from attention_backward import backward, forward, reference  # noqa: E402


def main() -> int:
    gpu = current_backend() == "cuda"
    z, h, s, d = (1, 2, 1024, 64) if gpu else (1, 2, 128, 32)
    bm, bn = (128, 64) if gpu else (64, 32)
    bh = z * h
    rng = np.random.default_rng(0)
    qn, kn, vn, don = (rng.standard_normal((bh, s, d)).astype(np.float16) for _ in range(4))
    q, k, v, do = (api.from_numpy(a).sync() for a in (qn, kn, vn, don))
    ok = True
    for causal in (True, False):
        o = api.empty((bh, s, d), tile.float16).sync()
        lse, delta = (api.empty((bh, s), tile.float32).sync() for _ in range(2))
        grads = [api.empty((bh, s, d), tile.float16).sync() for _ in range(3)]
        forward(o, lse, q, k, v, bm, bn, causal).sync()
        backward(*grads, q, k, v, o, do, lse, delta, ((bm, bn), (bn, bm)), causal).sync()
        refs = reference(qn, kn, vn, don, causal)
        errs = [np.abs(t.to_numpy().astype(np.float64) - r).max() / np.abs(r).max()
                for t, r in zip([o] + grads, refs)]
        ok &= max(errs) < 1e-2
        print(f"  causal={causal}: max relative error o {errs[0]:.1e}, dq {errs[1]:.1e}, "
              f"dk {errs[2]:.1e}, dv {errs[3]:.1e}")
    print(f"t06_fused_attention: Z={z} H={h} N_CTX={s} HEAD_DIM={d} fp16, forward and backward "
          f"{'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
