"""Triton tutorial 06, fused attention (FlashAttention-2 forward and backward), in tilejit.

    python examples/triton_tutorials/t06_fused_attention.py

The kernels are the gallery's (examples/flash_attention.py, examples/attention_backward.py),
the tutorial's algorithm: the forward walks K/V tiles with an online softmax in exp2 (running
maximum and sum, the output rescaled as the maximum grows), the causal mask applied only to the
diagonal tiles, and saves each row's log-sum-exp; the backward recomputes P from it tile by tile:
delta = rowsum(dO * O), then dK/dV per K/V tile over the query tiles that see it, and dQ per query
tile. In the tutorial one backward kernel does both: program i computes dK/dV of K/V tile i and
then dQ of query tile i; here dQ is a launch of its own (blocks sized for it).

The tutorial's fp8 forward is the same kernel given float8_e5m2 q, k and v (V stored transposed,
as the tutorial does, so P @ V reads a K-major operand) and an e5m2 output: P is rounded to V's
dtype for P @ V and both products accumulate in float32. The warp-specialized variant cannot be
written: Tile IR has no warps, warp groups or producer/consumer roles to assign (a block is one
thread of tile operations), and `tileiras` decides on its own whether to specialize warps.

Differences: the softmax scale is 1/sqrt(D) (the tutorial passes ``sm_scale = 0.5``). The
tutorial's check: Z = 1, H = 2, N_CTX = 1024, HEAD_DIM = 64, fp16, causal, forward and gradients
against PyTorch's reference (the fp8 forward is only timed there); here NumPy's float64
formulas, the fp8 forward included.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # examples/

import tilejit as tile  # noqa: E402
from tilejit import api  # noqa: E402
from tilejit.runtime import current_backend  # noqa: E402

from attention_backward import backward, forward, reference  # noqa: E402
from flash_attention import attention, reference as flash_reference  # noqa: E402

#: (max, RMS) error relative to the reference allowed in the fp8 forward, per output dtype: P is
#: rounded to e5m2 (2 mantissa bits: up to 1/8 of each weight, ~4% RMS) for P @ V, and an e5m2
#: output rounds by up to 1/8 again; a wrong mask or scale is off by far more
FP8_TOLERANCE = {"float16": (0.1, 0.08), "float8_e5m2": (0.25, 0.12)}


def fp8_forward(bh, s, d, bm, bn) -> bool:
    """The tutorial's fp8 forward: q, k, v in float8_e5m2 with V stored transposed (S
    contiguous: the K-major B operand of P @ V that fp8 tensor cores read), P rounded to e5m2
    for that product, float32 accumulation (Tile IR's only fp8 MMA accumulator). The output is
    e5m2 as in the tutorial, then fp16; checked against float64 attention of the same e5m2
    inputs. The kernel is the fp16 one (flash_attention.attention): the dtypes come from the
    arguments."""
    rng = np.random.default_rng(1)
    e5m2 = tile.float8_e5m2.np_dtype
    qn, kn, vn = (rng.standard_normal((bh, s, d)).astype(e5m2) for _ in range(3))
    q, k = (api.from_numpy(a).sync() for a in (qn, kn))
    v = api.from_numpy(np.ascontiguousarray(vn.transpose(0, 2, 1))).sync().permute(0, 2, 1)
    ok = True
    for causal in (True, False):
        ref = flash_reference(*(a.astype(np.float64) for a in (qn, kn, vn)), causal)
        errs = []
        for out in ("float8_e5m2", "float16"):
            o = api.empty((bh, s, d), getattr(tile, out)).sync()
            attention(o.permute(1, 0, 2).partition((bm, 1, d)), q, k, v, bn, causal).sync()
            diff = o.to_numpy().astype(np.float64) - ref
            err = (np.abs(diff).max() / np.abs(ref).max(),
                   np.sqrt((diff ** 2).mean() / (ref ** 2).mean()))
            ok &= bool(err[0] < FP8_TOLERANCE[out][0] and err[1] < FP8_TOLERANCE[out][1])
            errs.append(f"{out} out {err[0]:.1e} (RMS {err[1]:.1e})")
        print(f"  fp8 forward, causal={causal}: max relative error " + ", ".join(errs))
    return ok


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
    ok &= fp8_forward(bh, s, d, bm, bn)
    print(f"t06_fused_attention: Z={z} H={h} N_CTX={s} HEAD_DIM={d} fp16 forward and backward, "
          f"fp8 (e5m2) forward {'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
