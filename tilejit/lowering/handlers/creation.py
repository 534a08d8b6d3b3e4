"""Tile creation: zeros, ones, full, arange."""
from __future__ import annotations

from ...typing.types import TileType as NbTile
from ..emit import TV
from . import dt_of, handles



# --- creation --------------------------------------------------------------------------------
@handles("tile.zeros", "tile.ones", "tile.full")
def _full(lw, info, args, rty):
    d = dt_of(rty)
    shape = rty.shape if isinstance(rty, NbTile) else ()
    if info.op == "tile.full":
        v = lw.arg(args, "value")
        if isinstance(v, TV):
            return lw.em.broadcast(lw.em.cast(v, d), shape)
    else:
        v = 0 if info.op == "tile.zeros" else 1
    return lw.em.const(v, d, shape)


@handles("tile.arange")
def _arange(lw, info, args, rty):
    return lw.em.iota(rty.shape[0], dt_of(rty))
