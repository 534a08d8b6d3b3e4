"""Conversions between element types.

``ftoi`` rounds toward zero and *saturates*: out-of-range values clamp to the target's range and
NaN becomes 0. Tile IR leaves those cases undefined; clamping is what PTX's ``cvt`` does by default,
so the simulator matches the usual GPU result instead of NumPy's platform-dependent garbage.
Conversions to fp8 saturate to the largest finite value (PTX's mandatory ``.satfinite``).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from .elements import F32, F64, bits, signed, storage, unsigned, wrap
from .numerics import from_f64, round_tf32, two_sum
from .registry import elem_of, ieee_mode, impl, map1
from .sem_float import to_elem


@impl("exti")
def _exti(op, c):
    src, dst = elem_of(op.operands[0]), elem_of(op.result)
    dt = storage(dst)
    if op.attrs["signedness"] == "signed":
        return map1(op, c, lambda x: signed(x, src).astype(dt))
    return map1(op, c, lambda x: unsigned(x, src).astype(dt))


@impl("trunci")
def _trunci(op, c):
    dst = elem_of(op.result)
    return map1(op, c, lambda x: wrap(x, dst))


@impl("ftof")
def _ftof(op, c):
    src, dst = elem_of(op.operands[0]), elem_of(op.result)
    mode = ieee_mode(op)
    if dst == "f8E8M0FNU":
        return map1(op, c, lambda x: to_e8m0(x, mode))
    if dst == "tf32" and src in ("f32", "tf32"):
        return map1(op, c, lambda x: round_tf32(x, mode))
    if mode == "nearest_even" and src != "f64":
        # every narrower format is exact in float32, and float32 -> dst rounds once
        return map1(op, c, lambda x: to_elem(np.asarray(x).astype(F32), dst))
    return map1(op, c, lambda x: from_f64(np.asarray(x).astype(F64), dst, mode))


def to_e8m0(x, mode: str) -> np.ndarray:
    """Floats to float8_e8m0fnu (powers of two 2**-127..2**127): toward zero (``zero``, the
    default) or up (``positive_inf``), saturating; the format has no zero or sign, so values
    <= 0 and NaN give its NaN (0xFF)."""
    x = np.asarray(x).astype(F64)
    with np.errstate(all="ignore"):
        m, e = np.frexp(x)                          # x = m * 2**e, m in [0.5, 1)
        e = e - 1 + ((mode == "positive_inf") & (m != 0.5))
        code = np.clip(e, -127, 127) + 127
    code = np.where((x > 0) & ~np.isnan(x), code, 255)
    code = np.where(np.isinf(x) & (x > 0), 254, code)
    return code.astype(np.uint8).view(ml_dtypes.float8_e8m0fnu)


def _ftoi_fn(dst: str, is_signed: bool):
    w = bits(dst)
    if is_signed:
        lo, hi, big = -(1 << (w - 1)), (1 << (w - 1)) - 1, float(1 << (w - 1))
        idt = np.dtype(np.int64)
    else:
        lo, hi, big = 0, (1 << w) - 1, float(1 << w)
        idt = np.dtype(np.uint64)
    below_big = np.nextafter(big, 0.0)          # the largest float64 that converts safely

    def ftoi(x):
        t = np.trunc(np.asarray(x).astype(F64))
        nan = np.isnan(t)
        r = np.clip(np.where(nan, 0.0, t), float(lo), min(float(hi), below_big)).astype(idt)
        r = np.where(t >= big, idt.type(hi), r)
        return wrap(r, dst)
    return ftoi


@impl("ftoi")
def _ftoi(op, c):
    return map1(op, c, _ftoi_fn(elem_of(op.result), op.attrs["signedness"] == "signed"))


@impl("itof")
def _itof(op, c):
    src, dst = elem_of(op.operands[0]), elem_of(op.result)
    is_signed = op.attrs["signedness"] == "signed"
    mode = ieee_mode(op)
    view = (lambda x: signed(x, src)) if is_signed else (lambda x: unsigned(x, src))
    if bits(src) <= 32:
        return map1(op, c, lambda x: from_f64(view(x).astype(F64), dst, mode))

    def itof64(x):
        # a 64-bit integer is not exact in float64: split it and keep the rounding error
        v = view(x)
        hi = (v >> v.dtype.type(32)).astype(F64) * 4294967296.0
        lo = (v & v.dtype.type(0xFFFFFFFF)).astype(F64)
        s, e = two_sum(hi, lo)
        return from_f64(s, dst, mode, e)
    return map1(op, c, itof64)


@impl("bitcast")
def _bitcast(op, c):
    dt = storage(elem_of(op.result))
    if storage(elem_of(op.operands[0])) == dt:
        c.alias(op.result, op.operands[0])
        return None
    return map1(op, c, lambda x: np.asarray(x).view(dt))


@impl("int_to_ptr", "ptr_to_int", "ptr_to_ptr")
def _ptr_cast(op, c):
    # pointers are int64 byte addresses: these casts change only the static type
    c.alias(op.result, op.operands[0])
    return None
