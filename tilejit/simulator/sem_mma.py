"""Matrix multiply-accumulate: ``mmaf`` and ``mmai`` (2-D, or 3-D batched along dim 0).

``mmaf`` multiplies exact float32 copies of the inputs (every supported input format, tf32 and fp8
included, is exact in float32; f64 inputs use float64) and adds the accumulator in float32, then
rounds once to the accumulator's type. The GPU also accumulates in (at least) float32 but in its
own order, so results agree to float32 rounding, not bit for bit; ``fast_acc`` (fp8 on Hopper,
reduced-precision accumulation) is not modelled. ``mmai`` is exact: products of 8-bit integers
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
    cd = F64 if acc_elem == "f64" else F32

    def mmaf(a, b, acc):
        r = np.matmul(np.asarray(a).astype(cd), np.asarray(b).astype(cd))
        r += np.asarray(acc).astype(cd)
        return r if acc_elem in ("f32", "f64") else to_elem(r, acc_elem)
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
