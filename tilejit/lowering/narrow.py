"""The block-scaling formats float4_e2m1fn and float8_e8m0fnu, in memory and on targets without
them.

* float4_e2m1fn takes one byte per element in memory (its 4-bit code in the low bits, as
  ml_dtypes stores it): loads read bytes and decode them, stores encode. Tile IR's own float4
  pointers would pack two values per byte, which NumPy/ml_dtypes arrays do not. Codes: bit 3 is
  the sign, bits 0-2 the magnitude 0, 0.5, 1, 1.5, 2, 3, 4, 6.
* float8_e8m0fnu is a biased exponent: code c is 2**(c - 127) (0..254), 255 is NaN.
* Before Blackwell (sm_100) Tile IR has neither type, so tiles of them are *carried* as float32
  holding their exact values (:func:`carried`); conversions into them round in software with the
  rules of the hardware conversion (float4: to nearest even, saturating at +-6; e8m0: toward zero
  or up, saturating, NaN for values <= 0).
"""
from __future__ import annotations

import contextvars
import math

from .. import dtypes as D

#: True while lowering for a target whose Tile IR has no float4_e2m1fn / float8_e8m0fnu
_CARRY = contextvars.ContextVar("tilejit_carry_narrow_floats", default=False)
FORMATS = (D.float4_e2m1fn, D.float8_e8m0fnu)


def carry_for(arch: str):
    """Set the carrying rule for lowering to ``arch``; returns the token to reset it with."""
    digits = "".join(ch for ch in arch.split("_")[-1] if ch.isdigit())
    return _CARRY.set(not digits or int(digits) < 100)


def reset(token) -> None:
    _CARRY.reset(token)


def carried(dt) -> bool:
    """Tiles of ``dt`` are float32 values in this compile (the target has no such type)."""
    return dt in FORMATS and _CARRY.get()


def _k(em, v, like):
    return em.const(v, D.int32, like.shape)


def fp4_from_codes(em, codes):
    """Bytes holding e2m1 codes -> their values as float32 (exact)."""
    i32 = D.int32
    c = em.cast(em.bitcast(codes, D.uint8) if codes.dtype is not D.uint8 else codes, i32)
    k = (lambda v: _k(em, v, c))
    mag = em.binary("&", c, k(7), i32)
    sign = em.binary("<<", em.binary("&", c, k(8), i32), k(28), i32)
    # magnitude m >= 2 is 2**(m//2 - 1) * (1 + (m & 1) / 2): float32 exponent m//2 + 126
    small = em.compare("<", mag, k(2))
    expo = em.where(small, em.where(em.compare("==", mag, k(1)), k(126), k(0)),
                    em.binary("+", em.binary(">>", mag, k(1), i32), k(126), i32), i32)
    mant = em.where(small, k(0), em.binary("<<", em.binary("&", mag, k(1), i32), k(22), i32), i32)
    bits = em.binary("|", sign, em.binary("|", em.binary("<<", expo, k(23), i32), mant, i32), i32)
    return em.bitcast(bits, D.float32)


def fp4_to_codes(em, x32):
    """float32 values on the e2m1 grid -> their codes as uint8."""
    i32 = D.int32
    bits = em.bitcast(x32, i32)
    k = (lambda v: _k(em, v, bits))
    sign = em.binary("&", em.binary(">>", bits, k(28), i32), k(8), i32)
    expo = em.binary("-", em.binary("&", em.binary(">>", bits, k(23), i32), k(255), i32), k(127),
                     i32)
    half = em.binary("&", em.binary(">>", bits, k(22), i32), k(1), i32)
    # |x| >= 1: code 2 + 2 * exponent + the half bit; 0.5: code 1; 0: code 0
    big = em.binary("+", k(2), em.binary("+", em.binary("*", expo, k(2), i32), half, i32), i32)
    mag = em.where(em.compare(">=", expo, k(0)), big,
                   em.where(em.compare("==", expo, k(-1)), k(1), k(0)), i32)
    return em.cast(em.binary("|", sign, mag, i32), D.uint8)


def e8m0_from_codes(em, codes):
    """Bytes holding e8m0 codes -> their values 2**(c - 127) as float32 (255: NaN)."""
    i32 = D.int32
    c = em.cast(em.bitcast(codes, D.uint8) if codes.dtype is not D.uint8 else codes, i32)
    v = em.bitcast(em.binary("<<", c, _k(em, 23, c), i32), D.float32)
    f = (lambda x: em.const(x, D.float32, c.shape))
    v = em.where(em.compare("==", c, _k(em, 0, c)), f(2.0 ** -127), v)      # a subnormal
    return em.where(em.compare("==", c, _k(em, 255, c)), f(math.nan), v)


def e8m0_to_codes(em, x32):
    """float32 powers of two (or NaN) -> e8m0 codes as uint8."""
    i32 = D.int32
    e = em.binary("&", em.binary(">>", em.bitcast(x32, i32), _k(em, 23, x32), i32),
                  _k(em, 255, x32), i32)
    e = em.where(em.compare("!=", x32, x32), _k(em, 255, x32), e)
    return em.cast(em.where(em.compare("==", e, _k(em, 0, x32)), _k(em, 0, x32), e), D.uint8)


def round_fp4(em, x32):
    """float32 -> the nearest e2m1 value (ties to even, saturating at +-6), as float32."""
    from .mathlib import copysign_bits, emit_formula
    f = (lambda v: em.const(v, D.float32, x32.shape))
    a = em.binary("min", em.absolute(x32), f(6.0), D.float32)
    step = em.where(em.compare("<", a, f(2.0)), f(0.5),
                    em.where(em.compare("<", a, f(4.0)), f(1.0), f(2.0)))
    q = emit_formula(em, "rint", em.binary("/", a, step, D.float32))   # exact quotient
    return copysign_bits(em, em.binary("*", q, step, D.float32), x32)


def round_e8m0(em, x32, rounding: str):
    """float32 -> a power of two 2**-127..2**127, toward zero (``zero``) or up
    (``positive_inf``); values <= 0 and NaN give NaN."""
    i32 = D.int32
    bits = em.bitcast(x32, i32)
    k = (lambda v: _k(em, v, bits))
    f = (lambda x: em.const(x, D.float32, x32.shape))
    e = em.binary("&", em.binary(">>", bits, k(23), i32), k(255), i32)
    if rounding == "positive_inf":
        inexact = em.compare("!=", em.binary("&", bits, k(0x7FFFFF), i32), k(0))
        up = em.where(inexact, em.binary("+", e, k(1), i32), e)
        # below 2**-126 (subnormal): 2**-127 or 2**-126
        e = em.where(em.compare("==", e, k(0)),
                     em.where(em.compare(">", x32, f(2.0 ** -127)), k(1), k(0)), up)
    e = em.binary("min", e, k(254), i32)
    v = em.bitcast(em.binary("<<", e, k(23), i32), D.float32)
    v = em.where(em.compare("==", e, k(0)), f(2.0 ** -127), v)
    bad = em.binary("|", em.compare("<=", x32, f(0.0)), em.compare("!=", x32, x32), D.bool_)
    return em.where(bad, f(math.nan), v)
