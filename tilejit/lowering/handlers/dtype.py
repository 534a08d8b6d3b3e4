"""Conversions: astype, bitcast, bool/int/float of scalars, len."""
from __future__ import annotations

from ... import dtypes as D
from ... import language as L
from ..emit import TV
from . import dt_of, handles


@handles(L.astype)
def _astype(lw, info, args, rty):
    x = lw.tv(lw.arg(args, "t"), None, lw.arg_type(info, args, "t"))
    mode = lw.static_arg(info, args, "rounding_mode", None)
    return lw.em.cast(x, dt_of(rty), getattr(mode, "value", mode))


@handles(L.bitcast)
def _bitcast(lw, info, args, rty):
    return lw.em.bitcast(lw.tv(lw.arg(args, "t")), dt_of(rty))


@handles("bool")
def _bool(lw, info, args, rty):
    v = lw.arg(args, list(args)[0]) if args else False
    if not isinstance(v, TV):
        return bool(v)
    return lw.em.cast(v, D.bool_)


@handles("int")
def _int(lw, info, args, rty):
    v = lw.arg(args, list(args)[0])
    if not isinstance(v, TV):
        return int(v)
    return lw.em.cast(v, dt_of(rty))


@handles("float")
def _float(lw, info, args, rty):
    v = lw.arg(args, list(args)[0])
    if not isinstance(v, TV):
        try:
            return float(v)
        except ValueError:
            raise lw.error(f"float({v!r}): the string is not a number (use e.g. 'inf', '-inf', "
                           f"'nan' or '1.5')") from None
    return lw.em.cast(v, dt_of(rty))


@handles("len")
def _len(lw, info, args, rty):
    return len(lw.arg(args, list(args)[0]))
