"""Tile creation: zeros, ones, full, arange."""
from __future__ import annotations

from ... import dtypes as D
from ... import language as L
from ...dtypes import DType
from ...typing.templates.creation import arange_range
from ...typing.types import TileType as NbTile
from ..emit import TV
from . import dt_of, handles


# --- creation --------------------------------------------------------------------------------
@handles(L.zeros, L.ones, L.full)
def _full(lw, info, args, rty):
    d = dt_of(rty)
    shape = rty.shape if isinstance(rty, NbTile) else ()
    if info.stub is L.full:
        v = lw.arg(args, "value")
        if isinstance(v, TV):
            return lw.em.broadcast(lw.em.cast(v, d), shape)
    else:
        v = 0 if info.stub is L.zeros else 1
    if d.is_tiny_float:         # no float8/float4 constants in Tile IR: a float32 one, converted
        return lw.em.cast(lw.em.const(v, D.float32, shape), d)
    return lw.em.const(v, d, shape)


@handles(L.arange)
def _arange(lw, info, args, rty):
    d = dt_of(rty)
    bounds = [lw.static_arg(info, args, n) for n in ("start", "stop", "step")]
    if isinstance(bounds[1], DType):  # arange(n, dtype)
        bounds[1] = None
    start, step, n = arange_range(*bounds)
    t = lw.em.iota(n, d)
    if step != 1:
        t = lw.em.binary("*", t, lw.em.const(step, d, (n,)), d)
    if start != 0:
        t = lw.em.binary("+", t, lw.em.const(start, d, (n,)), d)
    return t
