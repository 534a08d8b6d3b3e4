"""Elementwise integer and bitwise ops.

Integers are stored signed (``i1`` as bool) and wrap on overflow like the GPU's; ``signedness``
attributes reinterpret the bits (:func:`.elements.unsigned`). ``overflow`` attributes
(``no_signed_wrap`` ...) are promises to the compiler, so the simulator wraps regardless. Division
or remainder by zero is undefined behaviour in Tile IR; the simulator returns 0 for it.
"""
from __future__ import annotations

import numpy as np

from .elements import bits, signed, unsigned, wrap
from .registry import CMP, attr, elem_of, impl, map1, map2


def _per_elem(op):
    return elem_of(op.result if op.results else op.operands[0])


# --- wrapping arithmetic ------------------------------------------------------------------------
_ARITH = {"addi": np.add, "subi": np.subtract, "muli": np.multiply}


@impl("addi", "subi", "muli")
def _arith(op, c):
    elem = _per_elem(op)
    fn = _ARITH[op.name]
    if elem == "i1":
        return map2(op, c, lambda a, b: wrap(fn(unsigned(a, elem), unsigned(b, elem)), elem))
    return map2(op, c, fn)


@impl("andi", "ori", "xori")
def _bitwise(op, c):
    fn = {"andi": np.bitwise_and, "ori": np.bitwise_or, "xori": np.bitwise_xor}[op.name]
    return map2(op, c, fn)


@impl("absi")
def _absi(op, c):
    elem = _per_elem(op)
    if elem == "i1":                       # |-1| = 1: the same bit
        return map1(op, c, np.asarray)
    return map1(op, c, np.abs)


@impl("negi")
def _negi(op, c):
    elem = _per_elem(op)
    if elem == "i1":
        return map1(op, c, np.asarray)
    return map1(op, c, np.negative)


@impl("shli")
def _shli(op, c):
    elem = _per_elem(op)
    w = bits(elem)

    def shl(a, b):
        n = unsigned(b, elem)
        r = np.left_shift(unsigned(a, elem), np.minimum(n, w - 1).astype(n.dtype))
        return wrap(np.where(n >= w, 0, r).astype(r.dtype), elem)
    return map2(op, c, shl)


@impl("shri")
def _shri(op, c):
    elem = _per_elem(op)
    w = bits(elem)
    is_signed = op.attrs["signedness"] == "signed"

    def shr(a, b):
        n = unsigned(b, elem)
        k = np.minimum(n, w - 1).astype(n.dtype)
        if is_signed:
            # shifting a signed value by >= its width leaves copies of the sign bit
            return wrap(np.right_shift(signed(a, elem), k.astype(np.int64)), elem)
        r = np.right_shift(unsigned(a, elem), k)
        return wrap(np.where(n >= w, 0, r).astype(r.dtype), elem)
    return map2(op, c, shr)


# --- signedness-dependent -----------------------------------------------------------------------
def _view(elem, is_signed):
    return (lambda x: signed(x, elem)) if is_signed else (lambda x: unsigned(x, elem))


@impl("maxi", "mini")
def _maxmin(op, c):
    elem = _per_elem(op)
    v = _view(elem, op.attrs["signedness"] == "signed")
    fn = np.maximum if op.name == "maxi" else np.minimum
    return map2(op, c, lambda a, b: wrap(fn(v(a), v(b)), elem))


@impl("remi")
def _remi(op, c):
    elem = _per_elem(op)
    is_signed = op.attrs["signedness"] == "signed"
    v = _view(elem, is_signed)
    # fmod truncates toward zero (C semantics); on unsigned values it equals the remainder
    return map2(op, c, lambda a, b: wrap(np.fmod(v(a), v(b)), elem))


@impl("divi")
def _divi(op, c):
    elem = _per_elem(op)
    is_signed = op.attrs["signedness"] == "signed"
    rounding = attr(op, "rounding", "zero")
    v = _view(elem, is_signed)

    def div(a, b):
        a, b = v(a), v(b)
        q = np.floor_divide(a, b)                     # rounds toward -inf
        inexact = (a - q * b) != 0
        if rounding == "positive_inf":
            q = q + inexact
        elif rounding == "zero" and is_signed:
            q = q + (inexact & ((a < 0) != (b < 0)))
        return wrap(np.where(b == 0, 0, q).astype(q.dtype), elem)
    return map2(op, c, div)


def _mulhi64(a, b):
    """High 64 bits of the 128-bit product of two uint64 arrays."""
    m = np.uint64(0xFFFFFFFF)
    s = np.uint64(32)
    a0, a1 = a & m, a >> s
    b0, b1 = b & m, b >> s
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> s) + (p01 & m) + (p10 & m)
    return p11 + (p01 >> s) + (p10 >> s) + (mid >> s)


@impl("mulhii")
def _mulhii(op, c):
    elem = _per_elem(op)
    w = bits(elem)
    if w == 64:
        return map2(op, c, lambda a, b: wrap(_mulhi64(unsigned(a, elem), unsigned(b, elem)), elem))
    return map2(op, c, lambda a, b: wrap(
        (unsigned(a, elem).astype(np.uint64) * unsigned(b, elem).astype(np.uint64))
        >> np.uint64(w), elem))


@impl("cmpi")
def _cmpi(op, c):
    elem = elem_of(op.operands[0])
    pred = CMP[op.attrs["comparison_predicate"]]
    v = _view(elem, op.attrs["signedness"] == "signed")
    return map2(op, c, lambda a, b: pred(v(a), v(b)))
