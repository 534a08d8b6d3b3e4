"""Elementwise math: unary functions, where, minimum/maximum, atan2, fma."""
from __future__ import annotations

import math
from typing import Optional

from ... import dtypes as D
from ... import language as L
from ...errors import UnsupportedError
from ...typing.reject import FOLDABLE_MATH
from .. import mathlib
from ..emit import TV
from . import dt_of, handles


# --- elementwise -----------------------------------------------------------------------------
# Tile IR bytecode versions that introduced a math op's rounding_mode attribute
_ROUNDING_SINCE = {"exp": (13, 3), "tanh": (13, 2)}


def rounding_keyword(lw, info, args, op: str) -> Optional[str]:
    """The Tile IR keyword of a call's ``rounding_mode=`` (None when not given); checks that the
    target's bytecode version has the attribute."""
    mode = lw.static_arg(info, args, "rounding_mode", None)
    if mode is None:
        return None
    since = _ROUNDING_SINCE.get(op)
    if since is not None and lw.version < since and mode.value != "full":
        raise lw.error(f"tile.{op}(rounding_mode=tile.RoundingMode.{mode.name}) needs Tile IR "
                       f"bytecode {since[0]}.{since[1]} or newer (tileiras {since[0]}.{since[1]}+)"
                       f"; this compile targets {lw.version[0]}.{lw.version[1]}",
                       UnsupportedError)
    return mode.value


def _unary_math(name):
    def handler(lw, info, args, rty):
        x = lw.tv(lw.arg(args, "x"), None, lw.arg_type(info, args, "x"))
        if not dt_of(rty).is_float:               # trunc / round of an integer: itself
            return lw.em.cast(x, dt_of(rty))
        rounding = rounding_keyword(lw, info, args, name)
        ftz = bool(lw.static_arg(info, args, "flush_to_zero", False))
        return lw.em.math(name, lw.em.cast(x, dt_of(rty)) if dt_of(rty).is_float else x,
                          rounding, ftz)
    return handler


for _n in L.UNARY_MATH:
    handles(getattr(L, _n))(_unary_math(_n))


@handles(L.isnan, L.isinf, L.isfinite, L.signbit)
def _float_test(lw, info, args, rty):
    x = lw.tv(lw.arg(args, "x"), None, lw.arg_type(info, args, "x"))
    return lw.em.float_test(info.stub.__name__, x)


@handles(L.abs, "abs")
def _abs(lw, info, args, rty):
    x = lw.tv(lw.arg(args, list(args)[0]), dt_of(rty), lw.arg_type(info, args, list(args)[0]))
    return lw.em.absolute(x)


@handles(L.where)
def _where(lw, info, args, rty):
    d = dt_of(rty)
    c = lw.tv(lw.arg(args, "cond"), D.bool_)
    x = lw.tv(lw.arg(args, "x"), d, lw.arg_type(info, args, "x"))
    y = lw.tv(lw.arg(args, "y"), d, lw.arg_type(info, args, "y"))
    return lw.em.where(c, x, y, d)


@handles(L.minimum, L.maximum, "min", "max")
def _minmax(lw, info, args, rty):
    d = dt_of(rty)
    names = [n for n in args if n != "propagate_nan"]
    vals = [lw.arg(args, n) for n in names]
    if len(vals) == 1 and isinstance(vals[0], tuple):
        vals = list(vals[0])
    is_min = info.stub is L.minimum or info.op == "min"
    if all(not isinstance(v, TV) for v in vals):
        return (min if is_min else max)(vals)
    op = "min" if is_min else "max"
    if info.stub is not None and not lw.static_arg(info, args, "propagate_nan", True):
        op = "nan" + op
    r = lw.tv(vals[0], d)
    for v in vals[1:]:
        r = lw.em.binary(op, r, lw.tv(v, d), d)
    return r


@handles(L.truediv)
def _truediv(lw, info, args, rty):
    d = dt_of(rty)
    x = lw.tv(lw.arg(args, "x"), d, lw.arg_type(info, args, "x"))
    y = lw.tv(lw.arg(args, "y"), d, lw.arg_type(info, args, "y"))
    return lw.em.divide(x, y, d, rounding_keyword(lw, info, args, "truediv"),
                        bool(lw.static_arg(info, args, "flush_to_zero", False)))


def _operands(lw, info, args, rty, first="x", second="y"):
    d = dt_of(rty)
    return (d, lw.tv(lw.arg(args, first), d, lw.arg_type(info, args, first)),
            lw.tv(lw.arg(args, second), d, lw.arg_type(info, args, second)))


@handles(L.atan2)
def _atan2(lw, info, args, rty):
    d, y, x = _operands(lw, info, args, rty, "y", "x")
    return lw.em.binary("atan2", y, x, d)


@handles(L.copysign)
def _copysign(lw, info, args, rty):
    d, x, y = _operands(lw, info, args, rty)
    x, y = lw.em._same(x, y, d)
    return mathlib.copysign_bits(lw.em, x, y)


@handles(L.fmod)
def _fmod(lw, info, args, rty):
    d, x, y = _operands(lw, info, args, rty)
    em = lw.em
    x, y = em._same(x, y, d)
    if d.is_float:                       # C's fmod; exact, so narrow floats compute in float32
        cd = mathlib.compute_dtype(d)
        r = TV(lw.b.binary("remf", em.cast(x, cd).value, em.cast(y, cd).value), cd)
        return em.cast(r, d)
    zero = em.const(0, d, x.shape)
    y_zero = em.compare("==", y, zero)   # NumPy gives 0 for a zero divisor; remi would trap
    safe = em.where(y_zero, em.const(1, d, x.shape), y)
    r = TV(lw.b.binary("remi", x.value, safe.value, signedness="unsigned" if d.is_unsigned
                       else "signed"), d)
    return em.where(y_zero, zero, r)


@handles(L.pow)
def _pow(lw, info, args, rty):
    d = dt_of(rty)
    y = lw.arg(args, "y")
    if not d.is_float and isinstance(y, int):
        return lw.em.int_power(lw.tv(lw.arg(args, "x"), d, lw.arg_type(info, args, "x")), y)
    d, x, y = _operands(lw, info, args, rty)
    return lw.em.binary("**", x, y, d)


@handles(L.add, L.sub, L.mul)
def _named_arith(lw, info, args, rty):
    d, x, y = _operands(lw, info, args, rty)
    sym = {"add": "+", "sub": "-", "mul": "*"}[info.stub.__name__]
    return lw.em.binary(sym, x, y, d, rounding_keyword(lw, info, args, "add"),
                        bool(lw.static_arg(info, args, "flush_to_zero", False)))


@handles(L.fma)
def _fma(lw, info, args, rty):
    d = dt_of(rty)
    return lw.em.fma(lw.tv(lw.arg(args, "a"), d), lw.tv(lw.arg(args, "b"), d),
                     lw.tv(lw.arg(args, "c"), d), d)


# --- Python's math module on scalars ---------------------------------------------------------
def _py_math(name):
    fn = getattr(math, name)

    def handler(lw, info, args, rty):
        vals = [lw.arg(args, n) for n in args]
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
            try:                           # constants fold: math.sqrt(D) of a tile extent
                return fn(*vals)
            except (ValueError, OverflowError) as e:
                raise lw.error(f"math.{name}{tuple(vals)} fails at compile time: {e}")
        x = [lw.tv(v, D.float64) for v in vals]
        if name == "pow":
            return lw.em.binary("**", x[0], x[1], D.float64)
        if name == "fabs":
            return lw.em.absolute(x[0])
        if name == "log10":
            return lw.em.binary("/", lw.em.math("log", x[0]), lw.em.const(math.log(10), D.float64),
                                D.float64)
        r = lw.em.math(name, x[0])
        return lw.em.cast(r, D.int64) if name in ("ceil", "floor") else r
    return handler


for _n in FOLDABLE_MATH:
    handles(f"math.{_n}")(_py_math(_n))
