"""Matrix multiply-accumulate: ``mmaf`` and ``mmai`` (2-D, or 3-D batched along dim 0).

``mmaf`` multiplies exact float32 copies of narrow inputs (f16, bf16, tf32 and fp8 are exact in
float32, and so are their products) and accumulates in float32; f32 and f64 inputs compute in
float64 (an f32 product needs 48 bits, and the GPU's fused multiply-adds do not round it either).
The accumulator is added and the result rounded once to its type. The GPU accumulates in its own
order, so results agree to float32 rounding, not bit for bit; TF32 happens only where the IR
converts the inputs to tf32 (``ftof``); ``fast_acc`` (fp8 on Hopper, reduced-precision
accumulation) is not modelled. ``mmai`` is exact: products of 8-bit integers
summed in float64 stay below 2**53, and the i32 accumulation wraps.
"""
from __future__ import annotations

import numpy as np

from .elements import F32, F64, signed, unsigned
from .registry import elem_of, impl, map3
from .sem_float import to_elem


@impl("mmaf")
def _mmaf(op, c):
    acc_elem = elem_of(op.operand("acc"))
    cd = F64 if elem_of(op.operand("lhs")) in ("f32", "f64") else F32

    def mmaf(a, b, acc):
        r = np.matmul(np.asarray(a).astype(cd), np.asarray(b).astype(cd))
        r += np.asarray(acc).astype(cd)
        return to_elem(r, acc_elem)
    return map3(op, c, mmaf)


@impl("mmai")
def _mmai(op, c):
    ea, eb = elem_of(op.operand("lhs")), elem_of(op.operand("rhs"))
    va = signed if op.attrs["signedness_lhs"] == "signed" else unsigned
    vb = signed if op.attrs["signedness_rhs"] == "signed" else unsigned

    def mmai(a, b, acc):
        r = np.matmul(va(a, ea).astype(F64), vb(b, eb).astype(F64)).astype(np.int64)
        return (r + np.asarray(acc).astype(np.int64)).astype(np.int32)
    return map3(op, c, mmai)


@impl("mmaf_scaled")
def _mmaf_scaled(op, c):
    """``(lhs * lhs_scale) @ (rhs * rhs_scale) + acc``, each scale repeated over its block of K;
    fp8/fp4 inputs and e8m0/e4m3 scales are exact in float64, and so are their products."""
    slots = [c.slot(v) for v in op.operands]
    out = c.slot(op.results[0])

    def widen(x, s, axis):
        x, s = np.asarray(x).astype(F64), np.asarray(s).astype(F64)
        return x * np.repeat(s, x.shape[axis] // s.shape[axis], axis=axis)

    def run(env):
        a, b, acc, sa, sb = (env[s] for s in slots)
        with np.errstate(all="ignore"):
            r = np.matmul(widen(a, sa, -1), widen(b, sb, -2)) + np.asarray(acc).astype(F64)
        env[out] = r.astype(F32)
    return run
