"""Math functions that Tile IR has no op for, built from the ops it has.

Each function computes float16 / bfloat16 in float32 and rounds once (far below an ulp of the
narrow format); float32 and float64 compute in their own precision. The algorithms:

* ``log1p``, ``expm1``: first-order corrections by the rounding error of ``u = 1 + x``
  (``log(u) + (x - (u - 1)) / u``) and by ``x - log(u)`` for ``u = exp(x)``
  (``(u - 1) + u (x - log u)``), exact near 0;
* ``asinh``, ``acosh``, ``atanh``: ``log1p`` forms without cancellation, ``log(2x)`` past
  ``sqrt`` of the largest exact square; ``asin``, ``acos``, ``atan``: ``atan2`` of exact
  ``(1 - x)(1 + x)`` products;
* ``erf``, ``erfc``, ``erfinv``: piecewise polynomials fitted by ``tools/fit_math.py``
  (``math_tables.py``) with ``exp(-x*x)`` from an exact split of ``x``;
* ``cbrt``: ``exp2(log2|x| / 3)`` and one Newton step; ``rint``/``round``: adding and subtracting
  ``2**mantissa_bits`` (round half to even); ``trunc``: ``floor`` or ``ceil`` by sign;
* ``copysign``, ``signbit``: the sign bit through ``bitcast``.

``docs/language/reference.md`` states the accuracy of each in ulp (measured by
``tests/test_math_functions.py`` over wide ranges and special values).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable, Dict

from .. import dtypes as D
from ..dtypes import DType
from . import math_tables as T

if TYPE_CHECKING:                 # emit imports this module
    from .emit import TV

#: erfinv uses the table of w = -log(1 - y*y) up to here, of sqrt(w) beyond (tools/fit_math.py)
ERFINV_SPLIT = 2.25
_INT_OF = {16: D.int16, 32: D.int32, 64: D.int64}
#: bits of the significand below the binary point (rint's magic number is 2**this)
_MANTISSA = {"float32": 23, "float64": 52}


class _Ops:
    """Shorthands for one compute dtype and shape, so the formulas read like math."""

    def __init__(self, em, like: TV):
        self.em = em
        self.dt = like.dtype
        self.shape = like.shape

    def c(self, v) -> TV:
        return self.em.const(v, self.dt, self.shape)

    def add(self, x, y):
        return self.em.binary("+", x, y, self.dt)

    def sub(self, x, y):
        return self.em.binary("-", x, y, self.dt)

    def mul(self, x, y):
        return self.em.binary("*", x, y, self.dt)

    def div(self, x, y):
        return self.em.binary("/", x, y, self.dt)

    def fma(self, a, b, c):
        return self.em.fma(a, b, c, self.dt)

    def op(self, name, x):
        """A Tile IR math op (exp, log, sqrt, ...)."""
        return self.em.math(name, x)

    def lt(self, x, y):
        return self.em.compare("<", x, y)

    def le(self, x, y):
        return self.em.compare("<=", x, y)

    def eq(self, x, y):
        return self.em.compare("==", x, y)

    def or_(self, p, q):
        return self.em.binary("|", p, q, D.bool_)

    def where(self, cond, a, b):
        return self.em.where(cond, a, b, self.dt)

    def abs(self, x):
        return self.em.absolute(x)

    def copysign(self, mag, sign):
        return copysign_bits(self.em, mag, sign)

    def piecewise(self, v: TV, table) -> TV:
        """The polynomial of ``table`` (pieces ``(start, a, b, coefficients)``, all of one
        degree) at ``v``: each element's piece is chosen by ``where`` on the coefficients, so one
        Horner evaluation serves every piece."""
        def pick(values):
            r = self.c(values[0])
            for (start, *_), val in zip(table[1:], values[1:]):
                r = self.where(self.le(self.c(start), v), self.c(val), r)
            return r
        a = pick([p[1] for p in table])
        b = pick([p[2] for p in table])
        u = self.fma(v, a, b)
        ncoef = len(table[0][3])
        r = pick([p[3][-1] for p in table])
        for k in range(ncoef - 2, -1, -1):
            r = self.fma(r, u, pick([p[3][k] for p in table]))
        return r


def compute_dtype(dt: DType) -> DType:
    return D.float64 if dt is D.float64 else D.float32


def copysign_bits(em, mag: TV, sign: TV) -> TV:
    """``|mag|`` with the sign bit of ``sign`` (one float dtype)."""
    dt = mag.dtype
    it = _INT_OF[dt.bits]
    smask = -(1 << (dt.bits - 1))
    m = em.bitcast(mag, it)
    s = em.bitcast(sign, it)
    m = em.binary("&", m, em.const(~smask, it, m.shape), it)
    s = em.binary("&", s, em.const(smask, it, s.shape), it)
    return em.bitcast(em.binary("|", m, s, it), dt)


def signbit(em, x: TV) -> TV:
    """True where the sign bit of float ``x`` is set (-0.0 and negative NaNs included)."""
    it = _INT_OF[x.dtype.bits]
    return em.compare("<", em.bitcast(x, it), em.const(0, it, x.shape))


# --------------------------------------------------------------------------------------------
# The formulas (x is in the compute dtype: float32 or float64)
def _log1p(o: _Ops, x):
    u = o.add(o.c(1.0), x)
    # log(1 + x) = log(u) + log(1 + c/u) with c = x - (u - 1) the exact rounding error of u
    c = o.sub(x, o.sub(u, o.c(1.0)))
    r = o.add(o.op("log", u), o.div(c, u))
    r = o.where(o.eq(x, o.c(0.0)), x, r)                 # keeps -0.0
    return o.where(o.or_(o.eq(u, o.c(math.inf)), o.eq(u, o.c(0.0))), o.op("log", u), r)


def _expm1(o: _Ops, x):
    u = o.op("exp", x)
    um1 = o.sub(u, o.c(1.0))
    # exp(x) - 1 = (u - 1) + u (exp(x - log u) - 1), and x - log(u) is tiny and nearly exact
    r = o.fma(u, o.sub(x, o.op("log", u)), um1)
    r = o.where(o.eq(x, o.c(0.0)), x, r)
    r = o.where(o.eq(um1, o.c(-1.0)), o.c(-1.0), r)
    return o.where(o.eq(u, o.c(math.inf)), u, r)


def _log10(o: _Ops, x):
    return o.mul(o.op("log", x), o.c(1 / math.log(10)))


def _sigmoid(o: _Ops, x):
    e = o.op("exp", o.em.negate(o.abs(x)))               # never overflows
    one_e = o.add(o.c(1.0), e)
    return o.where(o.le(o.c(0.0), x), o.div(o.c(1.0), one_e), o.div(e, one_e))


def _cbrt(o: _Ops, x):
    a = o.abs(x)
    y = o.op("exp2", o.mul(o.op("log2", a), o.c(1 / 3)))
    y = o.fma(o.sub(o.div(a, o.mul(y, y)), y), o.c(1 / 3), y)    # Newton: y + (a/y^2 - y)/3
    special = o.or_(o.eq(a, o.c(0.0)), o.em.compare("!=", o.sub(a, a), o.c(0.0)))  # 0 inf nan
    return o.where(special, x, o.copysign(y, x))


def _one_minus_sq(o: _Ops, x):
    """``1 - x*x`` as ``(1 - x)(1 + x)``: exact factors where it matters (|x| near 1)."""
    return o.mul(o.sub(o.c(1.0), x), o.add(o.c(1.0), x))


def _asin(o: _Ops, x):
    return o.em.binary("atan2", x, o.op("sqrt", _one_minus_sq(o, x)), o.dt)


def _acos(o: _Ops, x):
    return o.em.binary("atan2", o.op("sqrt", _one_minus_sq(o, x)), x, o.dt)


def _atan(o: _Ops, x):
    return o.em.binary("atan2", x, o.c(1.0), o.dt)


def _big(o: _Ops):
    """Past this, ``sqrt(x*x + 1) == x`` in the precision and log(2x) is the answer."""
    return o.c(2.0 ** (_MANTISSA[o.dt.name] // 2 + 2))


def _asinh(o: _Ops, x):
    a = o.abs(x)
    aa = o.mul(a, a)
    small = _log1p(o, o.add(a, o.div(aa, o.add(o.c(1.0), o.op("sqrt", o.add(o.c(1.0), aa))))))
    big = o.add(o.op("log", a), o.c(math.log(2)))
    return o.copysign(o.where(o.lt(_big(o), a), big, small), x)


def _acosh(o: _Ops, x):
    t = o.sub(x, o.c(1.0))
    small = _log1p(o, o.add(t, o.op("sqrt", o.fma(t, t, o.add(t, t)))))
    big = o.add(o.op("log", x), o.c(math.log(2)))
    r = o.where(o.lt(_big(o), x), big, small)
    return o.where(o.lt(x, o.c(1.0)), o.c(math.nan), r)


def _atanh(o: _Ops, x):
    return o.mul(o.c(0.5), o.sub(_log1p(o, x), _log1p(o, o.em.negate(x))))


def _exp_neg_square(o: _Ops, a):
    """``exp(-a*a)`` without the rounding of ``a*a`` (which exp would turn into up to ~100 ulp):
    ``a = hi + lo`` with ``hi`` short enough that ``hi*hi`` is exact."""
    it = _INT_OF[o.dt.bits]
    drop = 12 if o.dt is D.float32 else 27
    hi = o.em.bitcast(o.em.binary("&", o.em.bitcast(a, it), o.em.const(-(1 << drop), it, a.shape),
                                  it), o.dt)
    lo = o.sub(a, hi)
    e1 = o.op("exp", o.em.negate(o.mul(hi, hi)))
    e2 = o.op("exp", o.em.negate(o.mul(lo, o.add(a, hi))))
    return o.mul(e1, e2)


def _tables(o: _Ops, name: str):
    return getattr(T, f"{name}_{'F64' if o.dt is D.float64 else 'F32'}")


def _erfc_pos(o: _Ops, a):
    """erfc(a) for a >= 0.5 (and +inf)."""
    t = o.div(o.c(1.0), a)
    q = o.mul(t, o.piecewise(t, _tables(o, "ERFC_Q")))
    r = o.mul(_exp_neg_square(o, a), q)
    return o.where(o.eq(a, o.c(math.inf)), o.c(0.0), r)


def _erf_small(o: _Ops, x):
    """erf(x) for |x| <= 1."""
    return o.mul(x, o.piecewise(o.mul(x, x), _tables(o, "ERF_SMALL")))


def _erf(o: _Ops, x):
    a = o.abs(x)
    big = o.copysign(o.sub(o.c(1.0), _erfc_pos(o, a)), x)
    return o.where(o.lt(a, o.c(1.0)), _erf_small(o, x), big)


def _erfc(o: _Ops, x):
    a = o.abs(x)
    pos = _erfc_pos(o, a)
    r = o.where(o.lt(x, o.c(0.0)), o.sub(o.c(2.0), pos), pos)
    return o.where(o.lt(a, o.c(0.5)), o.sub(o.c(1.0), _erf_small(o, x)), r)


def _erfinv(o: _Ops, y):
    w = o.em.negate(o.op("log", _one_minus_sq(o, y)))
    near = o.piecewise(w, _tables(o, "ERFINV_W"))
    far = o.piecewise(o.op("sqrt", w), _tables(o, "ERFINV_S"))
    r = o.mul(y, o.where(o.le(w, o.c(ERFINV_SPLIT)), near, far))
    return o.where(o.eq(o.abs(y), o.c(1.0)), o.copysign(o.c(math.inf), y), r)


def _trunc(o: _Ops, x):
    return o.where(o.lt(x, o.c(0.0)), o.op("ceil", x), o.op("floor", x))


def _rint(o: _Ops, x):
    a = o.abs(x)
    magic = o.c(2.0 ** _MANTISSA[o.dt.name])
    r = o.sub(o.add(a, magic), magic)                     # the addition rounds half to even
    return o.where(o.lt(a, magic), o.copysign(r, x), x)  # larger (and inf, nan): integral


FORMULAS: Dict[str, Callable] = {
    "log1p": _log1p, "expm1": _expm1, "log10": _log10, "sigmoid": _sigmoid, "cbrt": _cbrt,
    "asin": _asin, "acos": _acos, "atan": _atan, "asinh": _asinh, "acosh": _acosh,
    "atanh": _atanh, "erf": _erf, "erfc": _erfc, "erfinv": _erfinv, "trunc": _trunc,
    "rint": _rint, "round": _rint,
}


def emit_formula(em, fn: str, x: TV) -> TV:
    """``fn(x)`` for a float tile ``x`` (narrow formats computed in float32)."""
    xc = em.cast(x, compute_dtype(x.dtype))
    return em.cast(FORMULAS[fn](_Ops(em, xc), xc), x.dtype)
