"""Elementwise math: unary functions, where, minimum/maximum, atan2, fma."""
from __future__ import annotations

from ... import dtypes as D
from ..emit import TV
from . import CALLS, dt_of, handles



# --- elementwise -----------------------------------------------------------------------------
def _unary_math(name):
    def handler(lw, info, args, rty):
        x = lw.tv(lw.arg(args, list(args)[0]), None, lw.arg_type(info, args, list(args)[0]))
        r = lw.em.math(name, lw.em.cast(x, dt_of(rty)) if dt_of(rty).is_float else x)
        return r
    return handler


for _n in ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tan", "sinh", "cosh",
           "tanh", "floor", "ceil"):
    CALLS[f"tile.{_n}"] = _unary_math(_n)


@handles("tile.isnan")
def _isnan(lw, info, args, rty):
    x = lw.tv(lw.arg(args, list(args)[0]))
    if not x.dtype.is_float:
        return lw.em.const(False, D.bool_, x.shape)
    return lw.em.math("isnan", x)


@handles("tile.abs", "abs")
def _abs(lw, info, args, rty):
    x = lw.tv(lw.arg(args, list(args)[0]), dt_of(rty), lw.arg_type(info, args, list(args)[0]))
    return lw.em.absolute(x)


@handles("tile.where")
def _where(lw, info, args, rty):
    d = dt_of(rty)
    c = lw.tv(lw.arg(args, "cond"), D.bool_)
    x = lw.tv(lw.arg(args, "x"), d, lw.arg_type(info, args, "x"))
    y = lw.tv(lw.arg(args, "y"), d, lw.arg_type(info, args, "y"))
    return lw.em.where(c, x, y, d)


@handles("tile.minimum", "tile.maximum", "min", "max")
def _minmax(lw, info, args, rty):
    d = dt_of(rty)
    names = list(args)
    vals = [lw.arg(args, n) for n in names]
    if len(vals) == 1 and isinstance(vals[0], tuple):
        vals = list(vals[0])
    if all(not isinstance(v, TV) for v in vals):
        return (min if info.op in ("tile.minimum", "min") else max)(vals)
    op = "min" if info.op in ("tile.minimum", "min") else "max"
    r = lw.tv(vals[0], d)
    for v in vals[1:]:
        r = lw.em.binary(op, r, lw.tv(v, d), d)
    return r


@handles("tile.atan2")
def _atan2(lw, info, args, rty):
    d = dt_of(rty)
    y = lw.tv(lw.arg(args, "y"), d)
    x = lw.tv(lw.arg(args, "x"), d)
    return lw.em.binary("atan2", y, x, d)


@handles("tile.fma")
def _fma(lw, info, args, rty):
    d = dt_of(rty)
    return lw.em.fma(lw.tv(lw.arg(args, "a"), d), lw.tv(lw.arg(args, "b"), d),
                     lw.tv(lw.arg(args, "c"), d), d)
